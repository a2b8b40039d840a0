"""The policies of the product-unit tables: the store, two 2026 anchors and two oracles.

Each is a ``SentPolicy``: ``(point, budget, context) -> units.Sent``, the point's costs and
the budget in the context's unit (``units.in_unit``); each sends every live root and charges
itself the store's per-message cost (``units.message_cost``).

- ``store-default``: ``dsgc_fast.select`` with its defaults (the agent policy, digests and the
  value table on), the context's tokenizer and ``on_over_budget="roots_only"``; what it sends
  is ``Selection.messages`` (a binding or value table included, an added message), and it
  reports ``Selection.used``.  A tool result may be sent as its digest, in place
  (``Selection.digested``), charged the digest message's framed cost and scored on the
  digest's text, so it counts only for the values the digest holds; the value table is scored
  on its own text.
- ``store-default-in-place``: the same with ``values=False`` (digests in place, no value table:
  the default before the value table).
- ``store-default-whole``: the same with ``digests=False`` (whole messages only: the default
  before digests were on).
- ``store-recency``: the same with ``policy="recency"`` (whole tool units, newest first,
  first fit).
- ``clear-tool-uses``: Anthropic's ``clear_tool_uses`` as LangChain ships it,
  ``langchain.agents.middleware.ClearToolUsesEdit`` with ``trigger`` = the budget and
  ``clear_at_least`` = what the history costs beyond it, its other settings the defaults
  (the newest ``CLEAR_KEEP`` = 3 tool results never cleared, placeholder ``"[cleared]"``, tool
  inputs kept), counting with the store's cost; without LangChain the same documented rule
  (``cleared_by_rule``): when the history costs more than the budget, tool results are
  replaced by the placeholder oldest first, the newest three never, until the cost reclaimed
  covers the excess.  What still does not fit is then dropped oldest unit first
  (``drop_oldest``).
- ``observation-masking``: every tool result but the newest ``MASK_KEEP`` = 10 replaced by
  ``MASKED`` (always, whatever the budget), then ``drop_oldest``.
- ``oracle-units``: the best choice of whole tool units (``oracle.unit_oracle``).
- ``oracle-in-place``: the best choice per unit of whole / the store's own digest, in place
  (its framed cost, its call kept) / evict (``oracle.inplace_oracle``): a bound for any policy
  that sends the store's digests in place.
- ``oracle-digest``: the best choice when a tool result may be kept as just the values it
  holds, one ``key: value`` line each (``oracle.digest_oracle``: value level, the lines sent
  as notes).

``drop_oldest``: units (``Point.units``: a call with its results, or one message) are
dropped whole, oldest first, skipping units with a live root, until the rest fits.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsgc_fast import SelectCache, select
from dsgc_fast import Selection as StoreSelection
from dsgc_fast.memory.messages import ROOT_ROLES
from dsgc_fast.memory.token_counts import TokenCounter

from .oracle import digest_oracle, inplace_oracle, unit_oracle
from .points import Point
from .units import UNITS, Sent, counter_of, message_cost, sent_of

#: tool results ``clear_tool_uses`` keeps (ClearToolUsesEdit's default)
CLEAR_KEEP = 3
#: what a cleared tool result says (ClearToolUsesEdit's default placeholder)
CLEARED = "[cleared]"
#: tool results observation masking keeps
MASK_KEEP = 10
#: what a masked tool result says
MASKED = "[earlier tool output omitted]"


@dataclass(frozen=True)
class Context:
    """A run's cost unit (``units.UNITS``) and the ``SelectCache`` of its encoder."""

    unit: str
    cache: SelectCache

    @property
    def counter(self) -> TokenCounter:
        return counter_of(self.unit)

    @property
    def tokenizer(self) -> str | None:
        return UNITS[self.unit]


SentPolicy = Callable[[Point, int, Context], Sent]


def from_selection(selection: StoreSelection) -> Sent:
    """The ``Sent`` of a ``select`` answer: its messages, a binding or value table an added message
    (they follow the leading system and developer messages, as ``select`` places them)."""
    origins: list[int | None] = list(selection.indices)
    added = len(selection.messages) - len(origins)
    if added:
        lead = 0
        while lead < len(selection.messages) and selection.messages[lead].get("role") in ROOT_ROLES:
            lead += 1
        origins[lead - added : lead - added] = [None] * added
    return Sent(tuple(selection.messages), tuple(origins), over_budget=selection.over_budget, reported=selection.used)


def _select(point: Point, budget: int, context: Context, **options: Any) -> Sent:
    got = select(
        [dict(m) for m in point.messages],
        budget,
        tokenizer=context.tokenizer,
        cache=context.cache,
        on_over_budget="roots_only",
        **options,
    )
    return from_selection(got)


def store_default(point: Point, budget: int, context: Context) -> Sent:
    return _select(point, budget, context)


def store_default_in_place(point: Point, budget: int, context: Context) -> Sent:
    return _select(point, budget, context, values=False)


def store_default_whole(point: Point, budget: int, context: Context) -> Sent:
    return _select(point, budget, context, digests=False)


def store_recency(point: Point, budget: int, context: Context) -> Sent:
    return _select(point, budget, context, policy="recency")


def blanked(point: Point, positions: Sequence[int], placeholder: str) -> dict[int, dict[str, Any]]:
    """The tool results at ``positions`` with their content replaced by ``placeholder`` (copies)."""
    return {i: {**point.messages[i], "content": placeholder} for i in positions}


def drop_oldest(point: Point, replaced: Mapping[int, dict[str, Any]], budget: int, counter: TokenCounter) -> Sent:
    """The history with ``replaced`` messages, units dropped oldest first until it fits (module docstring)."""
    costs = [message_cost(replaced.get(i, m), counter) for i, m in enumerate(point.messages)]
    total, roots = sum(costs), set(point.roots)
    dropped: set[int] = set()
    for unit in point.units:
        if total <= budget:
            break
        if roots.isdisjoint(unit):
            dropped.update(unit)
            total -= sum(costs[i] for i in unit)
    kept = [i for i in range(point.n) if i not in dropped]
    return sent_of(point, kept, replaced, over_budget=total > budget)


def tool_positions(point: Point) -> list[int]:
    """Positions of the point's tool results, oldest first."""
    return [i for i, m in enumerate(point.messages) if m.get("role") == "tool"]


def cleared_by_rule(point: Point, budget: int, counter: TokenCounter) -> list[int]:
    """The tool results ``ClearToolUsesEdit`` clears (module docstring): none when the history fits."""
    costs = [message_cost(m, counter) for m in point.messages]
    excess = sum(costs) - budget
    if excess <= 0:
        return []
    tools = tool_positions(point)
    cleared = []
    for i in tools[: max(len(tools) - CLEAR_KEEP, 0)]:
        cleared.append(i)
        excess -= costs[i] - message_cost(blanked(point, [i], CLEARED)[i], counter)
        if excess <= 0:
            break
    return cleared


def cleared_by_langchain(point: Point, budget: int, counter: TokenCounter) -> list[int]:
    """The tool results LangChain's own ``ClearToolUsesEdit(trigger=budget)`` clears, counting
    each message as the store does."""
    from langchain.agents.middleware import ClearToolUsesEdit
    from langchain_core.messages import ToolMessage, convert_to_messages

    def count(messages: Sequence[Any]) -> int:
        return sum(
            message_cost({**m, "content": lc.content} if isinstance(lc, ToolMessage) else m, counter)
            for m, lc in zip(point.messages, messages)
        )

    messages: list[Any] = list(convert_to_messages([dict(m) for m in point.messages]))
    excess = count(messages) - budget
    edit = ClearToolUsesEdit(trigger=budget, clear_at_least=max(excess, 0), keep=CLEAR_KEEP, placeholder=CLEARED)
    edit.apply(messages, count_tokens=count)
    return [
        i
        for i, lc in enumerate(messages)
        if isinstance(lc, ToolMessage) and lc.response_metadata.get("context_editing", {}).get("cleared")
    ]


def has_langchain() -> bool:
    """True when LangChain's ``ClearToolUsesEdit`` is importable."""
    return importlib.util.find_spec("langchain") is not None


def clear_source() -> str:
    """What decides ``clear-tool-uses`` here: ``"langchain <version>"`` or ``"rule"`` (``cleared_by_rule``)."""
    if not has_langchain():
        return "rule"
    from importlib.metadata import version

    return f"langchain {version('langchain')}"


def clear_tool_uses(point: Point, budget: int, context: Context) -> Sent:
    counter = context.counter
    cleared = (cleared_by_langchain if has_langchain() else cleared_by_rule)(point, budget, counter)
    return drop_oldest(point, blanked(point, cleared, CLEARED), budget, counter)


def observation_masking(point: Point, budget: int, context: Context) -> Sent:
    tools = tool_positions(point)
    masked = tools[: max(len(tools) - MASK_KEEP, 0)]
    return drop_oldest(point, blanked(point, masked, MASKED), budget, context.counter)


def oracle_units(point: Point, budget: int, context: Context) -> Sent:
    return sent_of(point, unit_oracle(point, budget).retained.tolist())


def oracle_in_place(point: Point, budget: int, context: Context) -> Sent:
    choice, replaced = inplace_oracle(point, budget, context.counter)
    return sent_of(point, choice.retained.tolist(), replaced)


def oracle_digest(point: Point, budget: int, context: Context) -> Sent:
    choice = digest_oracle(point, budget, context.counter)
    return sent_of(point, choice.retained.tolist(), notes=choice.lines)


#: every policy of the tables, in table order: (what it is, the rule, whether it reads the encoder)
POLICIES: dict[str, tuple[str, SentPolicy, bool]] = {
    "store-default": (
        "store default, `select`: **the agent policy**, a tool result may be sent as its digest, in place, "
        "and the values of what is left out in a value table",
        store_default,
        True,
    ),
    "store-default-in-place": (
        "store default with `values=False`: digests in place, no value table",
        store_default_in_place,
        True,
    ),
    "store-default-whole": ("store default with `digests=False`: whole messages only", store_default_whole, True),
    "store-recency": ('store, `policy="recency"`: whole tool units, newest first, first fit', store_recency, False),
    "clear-tool-uses": (
        "`clear_tool_uses` (LangChain `ClearToolUsesEdit`): clear old results oldest first (never the newest 3) "
        "until the history fits, then drop oldest units",
        clear_tool_uses,
        False,
    ),
    "observation-masking": (
        "observation masking: newest 10 tool outputs kept, older blanked, then drop oldest",
        observation_masking,
        False,
    ),
    "oracle-units": ("best choice of whole tool units (unit oracle)", oracle_units, False),
    "oracle-in-place": (
        "best choice per unit of whole / the store's digest in place / evict (in-place oracle)",
        oracle_in_place,
        False,
    ),
    "oracle-digest": ("best choice that may keep a result as `key: value` lines (value level)", oracle_digest, False),
}
