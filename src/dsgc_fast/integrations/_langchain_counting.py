"""``token_counter=`` for the LangChain adapters: a ``trim_messages``-style message counter in dsgc's terms.

``trim_messages`` counts tokens with a ``token_counter``: a chat model (its
``get_num_tokens_from_messages``), a callable over a message list, a callable over one
message, or ``"approximate"`` (``count_tokens_approximately``).  ``counting`` turns that
setting, or a dsgc ``tokenizer``, into what ``select`` takes: a ``TokenCounter`` whose cost
of a text is the counter's cost of a ``HumanMessage`` of it, and the per-message cost.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar

from ..memory.token_counts import TokenCounter, token_counter

#: message counters (``token_counter=`` callables and chat models) seen lately, by identity
_MAX_COUNTERS = 8
_counters: list[tuple[Any, MessageCounter]] = []
_counters_lock = threading.Lock()


class MessageCounter:
    """A ``trim_messages``-style ``token_counter`` (``list[BaseMessage] -> int``) in dsgc's terms.

    ``cost(message)`` is what one message costs, ``counter([message])``; ``tokenizer`` counts a
    text as the counter counts a ``HumanMessage`` of it, without dsgc's chat framing (binding
    tables and cut tool results are costed with it).
    """

    def __init__(self, counter: Callable[[list[BaseMessage]], Any], name: str) -> None:
        self.counter = counter
        self.tokenizer = TokenCounter(
            lambda text: self.cost(HumanMessage(text)), f"langchain:{name}", frames_messages=False
        )

    def cost(self, message: BaseMessage) -> int:
        value = self.counter([message])
        if not is_integer_scalar(value) or int(value) < 0:
            raise DsgcValueError(
                f"token_counter returned {value!r} for a message; a count must be a non-negative integer"
            )
        return int(value)


def message_counter(spec: Any) -> MessageCounter:
    """The ``MessageCounter`` of a ``token_counter`` object: one per object for the recent ones, so that
    ``SelectCache`` recognizes the counter (and the histories it costed) from call to call."""
    with _counters_lock:
        found = next((k for k, (known, _) in enumerate(_counters) if known is spec), None)
        if found is None:
            made = MessageCounter(list_counter(spec), getattr(spec, "__name__", type(spec).__name__))
        else:
            made = _counters.pop(found)[1]
        _counters.insert(0, (spec, made))
        del _counters[_MAX_COUNTERS:]
    return made


def list_counter(spec: Any) -> Callable[[list[BaseMessage]], Any]:
    """``messages -> int`` of a chat model or callable, as ``trim_messages`` reads its ``token_counter``."""
    if hasattr(spec, "get_num_tokens_from_messages"):
        return cast(Callable[[list[BaseMessage]], Any], spec.get_num_tokens_from_messages)
    if not callable(spec):
        raise DsgcTypeError(
            "token_counter must be a callable (messages -> int, or message -> int), a chat model with "
            f"get_num_tokens_from_messages or a tokenizer name, got {type(spec).__name__}"
        )
    try:
        first = next(iter(inspect.signature(spec).parameters.values()), None)
    except (TypeError, ValueError):  # a builtin such as len has no signature to read
        first = None
    if first is not None and first.annotation in (BaseMessage, "BaseMessage"):
        return lambda messages: sum(spec(m) for m in messages)
    return cast(Callable[[list[BaseMessage]], Any], spec)


def counting(spec: Any, tokenizer: Any) -> tuple[Any, MessageCounter | None]:
    """The ``tokenizer`` for ``select`` and the per-message counter (None: ``select`` costs messages)."""
    if spec is not None and tokenizer is not None:
        raise DsgcValueError("pass token_counter or tokenizer, not both")
    if spec is None or (isinstance(spec, str) and spec != "approximate"):
        chosen = tokenizer if spec is None else spec
        token_counter(chosen)  # a bad tokenizer fails here (named ones are shared; objects keyed by identity)
        return chosen, None
    counter = message_counter(count_tokens_approximately if spec == "approximate" else spec)
    return counter.tokenizer, counter
