"""The ``dsgc_fast.select`` call that every adapter makes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..memory.history import Selection, select
from ..memory.messages import message_text

#: what the adapters do by default when the live roots alone exceed the budget
DEFAULT_OVER_BUDGET = "truncate"


def select_history(chat: Sequence[Mapping[str, Any]], budget: int, *, query: Any = None, **options: Any) -> Selection:
    """``select(chat, budget, query=query, **options)``, never empty for a non-empty ``chat``.

    Without a user message (and without ``query``), the newest message is the query and a
    live root, as the newest user turn is otherwise; with ``on_over_budget`` other than
    ``"raise"`` the live roots are always sent.
    """
    if query is None and chat and not any(m.get("role") == "user" for m in chat):
        query = message_text(chat[-1])
        options["live"] = [*options.get("live", ()), len(chat) - 1]
    return select(chat, budget, query=query, **options)
