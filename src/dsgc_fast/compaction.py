"""One compaction decision over arrays, shared by ``MemoryStore.compact`` and ``history.select``.

``decide`` runs ``retain`` with the live roots and the referent index.  When even the roots
and what they need do not fit the budget (``ReferentEvictionError``), ``on_over_budget`` says
what happens:

``"raise"``
    the error propagates (nothing is decided);
``"truncate"``
    the largest tool results among the roots are cut, each to the same cost level where
    possible (the lowest level that saves enough), their text ending in a marker that says how
    much was cut, until the roots fit; then ``retain`` decides on the cut costs.  If cutting
    every root tool result down to its marker is still not enough, they are cut that far and
    the outcome is the roots alone, over budget, as with ``"roots_only"``;
``"roots_only"``
    the live roots alone are kept (tool units whole: a root inside a unit makes the unit a
    root), flagged over budget: the pinned blocks they need and the binding table are left out.

The budget the roots need (``required_budget``) is the smaller of what the pinned set costs
(the roots and their referent closure) and what the roots plus the binding table of the pinned
non-roots cost: the two ways ``retain`` can keep every live binding.  A binding table costs
what its text costs as a system message (``table_cost``), since that is how it reaches the model.

Logging (logger ``dsgc.compaction``): each ``decide`` writes one DEBUG record (the budget, the
tokens used, the blocks kept, evicted, pinned and cut, and the path taken: ``Outcome.path``, or
``"raise"``) and, when the roots did not fit and ``on_over_budget`` answered anyway, a WARNING
saying what it gave up.  Under ``"raise"`` the error is the signal: no WARNING.  Each record
carries the figures as a dict in its ``dsgc`` attribute.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import BindingTable, Params, Reason, ReferentEvictionError

from .archive import Block
from .engine import retain_built
from .explain import BindingTableBlock
from .graph import DependencyGraph
from .pins import ReferentIndex, binding_table, closure, render_table
from .result import Retention
from .token_counts import TokenCounter, block_tokens

#: ``meta["kind"]`` of a binding-table block
BINDING_TABLE_KIND = "binding_table"
#: what ``on_over_budget`` may say
OVER_BUDGET: tuple[str, ...] = ("raise", "roots_only", "truncate")

#: ``(message, text)`` of each tool result among the given root indices
ToolResults = Callable[[np.ndarray], Mapping[int, tuple[Mapping[str, Any], str]]]

#: the package's loggers are named ``dsgc.<module>`` (``dsgc_fast.compaction`` -> ``dsgc.compaction``)
log = logging.getLogger(__name__.replace("dsgc_fast", "dsgc", 1))


def check_over_budget(on_over_budget: Any) -> str:
    if on_over_budget not in OVER_BUDGET:
        raise ValueError(f"on_over_budget must be one of {list(OVER_BUDGET)}, got {on_over_budget!r}")
    return on_over_budget


def table_cost(counter: TokenCounter) -> Callable[[str], int]:
    """The cost of a binding table's text: the text as a system message (``block_tokens``)."""
    return lambda text: block_tokens(text, {"role": "system", "content": text}, counter)


@dataclass(frozen=True)
class Truncation:
    """A tool result cut to fit: the message as sent, its text and cost, and what was cut."""

    message: dict[str, Any]
    text: str
    cost: int
    original_cost: int
    cut: int  #: characters cut from the text
    length: int  #: characters of the text before the cut

    def to_dict(self) -> dict[str, int]:
        return {"cost": self.cost, "original_cost": self.original_cost, "cut": self.cut, "length": self.length}


@dataclass
class Outcome:
    """What ``decide`` decided: the retention, the costs it charged, the cuts, and whether it is over budget."""

    result: Retention
    costs: np.ndarray
    truncated: dict[int, Truncation] = field(default_factory=dict)
    over_budget: bool = False

    @property
    def path(self) -> str:
        """How the budget was met: ``"fits"``, ``"truncate"``, ``"roots_only"`` or ``"truncate+roots_only"``."""
        if self.over_budget:
            return "truncate+roots_only" if self.truncated else "roots_only"
        return "truncate" if self.truncated else "fits"


def table_block(
    table: BindingTable | None, ids: list[str], seq: int, taken: Container[str], counter: TokenCounter
) -> BindingTableBlock | None:
    """The escalation's binding table as block number ``seq`` (no embedding) that binds the tabled referents.

    Its id is ``binding-table-<seq>`` (primed until no id in ``taken`` has it); its lines name
    source blocks by id (``ids``) instead of index, unless that costs more tokens than the
    table ``retain`` charged to the budget: then the engine's own text is kept.
    """
    if table is None:
        return None
    block_id = f"binding-table-{seq}"
    while block_id in taken:
        block_id += "'"
    entries = [(referent, value, ids[source]) for referent, value, source in table.entries]
    named = render_table(entries, table_cost(counter))
    if named.cost > table.cost:
        named = table
    block = Block(
        id=block_id,
        text=named.text,
        cost=int(named.cost),
        seq=seq,
        binds={str(referent): value for referent, value, _ in entries},
        meta={"kind": BINDING_TABLE_KIND, "entries": [list(e) for e in entries]},
    )
    return BindingTableBlock(block, entries)


def required_budget(index: ReferentIndex, costs: np.ndarray, roots: np.ndarray, cost_fn: Callable[[str], int]) -> int:
    """The smallest budget that keeps the live ``roots`` and every binding they need (module docstring)."""
    pinned = closure(index, roots)
    pinned_cost = int(costs[pinned].sum())
    table = binding_table(index, pinned, roots, cost_fn)
    return min(pinned_cost, int(costs[roots].sum()) + table.cost)


def decide(
    query_emb: np.ndarray,
    embs: np.ndarray,
    costs: np.ndarray,
    budget: int,
    *,
    params: Params,
    graph: DependencyGraph,
    index: ReferentIndex,
    roots: np.ndarray,
    counter: TokenCounter,
    ages: np.ndarray | None = None,
    query_weights: Any = None,
    mode: str = "exact",
    on_over_budget: str = "raise",
    tool_results: ToolResults | None = None,
) -> Outcome:
    """``retain`` over the blocks with the live ``roots`` pinned, and ``on_over_budget`` when they do not fit.

    ``costs`` are the blocks' costs, ``counter`` the tokenizer (binding tables, cuts),
    ``ages`` the agent policy's working ages (None: none), ``tool_results`` gives the
    message and text of the tool results among some roots (needed by ``"truncate"``).
    Without roots and referent links the engine's unpinned path decides.  Raises
    ``ReferentEvictionError`` under ``"raise"`` as ``retain`` does.
    """
    check_over_budget(on_over_budget)
    cost_fn = table_cost(counter)
    pinning: dict[str, Any] = {"pins": (index, roots), "cost_fn": cost_fn} if roots.size or index.has_links else {}
    common: dict[str, Any] = {
        "params": params,
        "graph": graph,
        "query_weights": query_weights,
        "mode": mode,
        "ages": ages,
    }
    outcome: Outcome | None = None
    try:
        outcome = Outcome(retain_built(query_emb, embs, costs, budget, **common, **pinning), costs)
    except ReferentEvictionError as exc:
        if on_over_budget == "raise":
            log.debug(
                "raise: budget %d cannot hold the live roots and the bindings they need", budget,
                extra={"dsgc": {"budget": budget, "blocks": len(costs), "pinned": len(exc.pinned), "path": "raise"}},
            )  # fmt: skip
            raise
    truncated: dict[int, Truncation] = {}
    if outcome is None and on_over_budget == "truncate":
        found = tool_results(roots) if tool_results is not None else {}
        excess = required_budget(index, costs, roots, cost_fn) - budget
        truncated = cut_tool_results(found, costs, excess, counter)
        costs = costs.copy()
        for i, cut in truncated.items():
            costs[i] = cut.cost
        if required_budget(index, costs, roots, cost_fn) <= budget:
            outcome = Outcome(retain_built(query_emb, embs, costs, budget, **common, **pinning), costs, truncated)
    if outcome is None:
        scored = retain_built(query_emb, embs, costs, 0, **common)
        outcome = Outcome(roots_only(scored, roots, costs, budget), costs, truncated, over_budget=True)
    _log_outcome(outcome, budget)
    return outcome


def _log_outcome(outcome: Outcome, budget: int) -> None:
    """The DEBUG record of a decision, and the WARNING of an over-budget path (module docstring)."""
    result = outcome.result
    kept = len(result.retained)
    figures = {
        "budget": budget, "used": int(result.used), "blocks": len(outcome.costs), "kept": kept,
        "evicted": len(outcome.costs) - kept, "pinned": len(result.pinned), "truncated": len(outcome.truncated),
        "binding_table": result.binding_table is not None, "path": outcome.path,
    }  # fmt: skip
    log.debug(
        "%(path)s: used %(used)d of budget %(budget)d; kept %(kept)d, evicted %(evicted)d of %(blocks)d blocks "
        "(%(pinned)d pinned, %(truncated)d tool results cut)", figures, extra={"dsgc": figures},
    )  # fmt: skip
    if outcome.path == "fits":
        return
    if outcome.over_budget:
        gave_up = "kept the live roots alone (their pinned prerequisites and the binding table left out)"
    else:
        gave_up = f"cut {len(outcome.truncated)} tool result(s) among the live roots to fit"
    log.warning(
        "budget %d cannot hold the live roots and the bindings they need: %s; used %d", budget, gave_up,
        int(result.used), extra={"dsgc": figures},
    )  # fmt: skip


def roots_only(scored: Retention, roots: np.ndarray, costs: np.ndarray, budget: int) -> Retention:
    """The retention that keeps exactly the live ``roots`` (pinned), every other block skipped for the budget.

    ``scored`` gives the scores and ranking (any retention over the same blocks and query);
    the result has no binding table.
    """
    mask = np.zeros(scored.scores.shape[0], dtype=np.bool_)
    mask[roots] = True
    reasons = np.where(mask, Reason.KEPT_PINNED, Reason.SKIPPED_NO_FIT).astype(np.int8)
    kept = np.flatnonzero(mask)
    return dataclasses.replace(
        scored, retained=kept, mask=mask, reasons=reasons, used=int(costs[roots].sum()), budget=budget,
        pinned=kept.copy(), binding_table=None,
    )  # fmt: skip


# -- cutting tool results -------------------------------------------------------------------
def cut_marker(cut: int, length: int) -> str:
    """The line that ends a cut tool result."""
    return f"[dsgc: cut {cut:,} of {length:,} characters to fit the token budget]"


def cut_text(text: str, keep: int) -> str:
    """``text`` cut to its first ``keep`` characters, then the marker (alone when nothing is kept)."""
    marker = cut_marker(len(text) - keep, len(text))
    return f"{text[:keep]}\n{marker}" if keep else marker


def cut_tool_results(
    found: Mapping[int, tuple[Mapping[str, Any], str]], costs: np.ndarray, excess: int, counter: TokenCounter
) -> dict[int, Truncation]:
    """Cut tool results so their costs fall by at least ``excess`` (as far as their markers allow).

    Largest first, by levelling: the largest integer level L such that cutting every result
    costing more than L down to max(L, its floor) saves ``excess`` (a result's floor is the cost
    of its marker alone); each is then cut to the longest prefix whose message costs at most
    its target.  If even the floors do not save ``excess``, every result is cut to its floor.
    """
    if excess <= 0 or not found:
        return {}
    items = sorted(found.items())
    cost = {i: int(costs[i]) for i, _ in items}
    floor = {i: _cut_cost(message, text, 0, counter) for i, (message, text) in items}

    def targets(level: int) -> dict[int, int]:  # a result whose marker costs as much as it is stays whole
        return {i: cost[i] if floor[i] >= cost[i] else max(floor[i], min(cost[i], level)) for i in cost}

    def saving(level: int) -> int:
        return sum(cost[i] - t for i, t in targets(level).items())

    lo, hi = 0, max(cost.values())
    if saving(lo) >= excess:
        while lo < hi:  # the largest level that still saves enough (saving falls as the level rises)
            mid = (lo + hi + 1) // 2
            if saving(mid) >= excess:
                lo = mid
            else:
                hi = mid - 1
    out = {}
    for i, target in targets(lo).items():
        if target < cost[i]:
            message, text = found[i]
            out[i] = _cut_to(message, text, target, cost[i], counter)
    return out


def _cut_message(message: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {**message, "content": text}


def _cut_cost(message: Mapping[str, Any], text: str, keep: int, counter: TokenCounter) -> int:
    cut = cut_text(text, keep)
    return block_tokens(cut, _cut_message(message, cut), counter)


def _cut_to(message: Mapping[str, Any], text: str, target: int, original: int, counter: TokenCounter) -> Truncation:
    """The longest cut of ``text`` whose message costs at most ``target`` (a binary search on its length).

    Costs need not grow strictly with the length, so the search finds a length that fits
    whose next longer one does not; keeping nothing (the marker alone) fits by the caller's rule.
    """
    lo, hi = 0, len(text) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _cut_cost(message, text, mid, counter) <= target:
            lo = mid
        else:
            hi = mid - 1
    cut = cut_text(text, lo)
    sent = _cut_message(message, cut)
    return Truncation(sent, cut, block_tokens(cut, sent, counter), original, len(text) - lo, len(text))
