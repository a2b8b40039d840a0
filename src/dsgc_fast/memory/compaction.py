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

**Digests** (``digests=``, read by the agent policy only; ``policy="dsgc"`` and the others
decide by ``retain`` alone; ``select``, ``MemoryStore.compact`` and the adapters pass them by
default).  The agent policy is ``retain`` with the score I_i = (r_i + lambda_pi * (pi_i +
rho_i)) / max(c_i, 1) ** p, rho_i = gamma^(u_i - 1) * kappa / N for working age u_i >= 1
(``Params``), followed by this stage.  When ``retain`` fits the budget without a binding table, each
block is then sent whole, as its digest (``digest_blocks.BlockDigest``) or not at all, by
``select_forms`` over *items*: a tool unit (a call and its results, joined by the
``tool_call:``/``tool_result:`` referents) is one item, any other block an item of its own.
For item g with blocks i:

    c_g = sum c_i                     v_i = I_i * max(c_i, 1) ** p   (the policy's score,
    d_g = sum (d_i or c_i)                                           density undone)
    v_g = sum v_i                     w_i = v_i * share_i            (share of the block's
    w_g = sum (w_i or v_i)                                           value words kept)

with ``d_i``, ``w_i`` for blocks that have a digest (``c_i``, ``v_i`` otherwise): an item in
its digest form sends every digestible result as its digest and the rest (its call) whole,
so a digested result always keeps its call, and a call never goes without its results.
``retain``'s decision is the starting point: an item holding a pinned block has floor WHOLE,
any other item ``retain`` kept has floor DIGEST when it has a cheaper digest (d_g < c_g),
else WHOLE, and the others floor EVICT.  So nothing ``retain`` kept is evicted, the tokens
that digesting kept results frees go, by value per token, to evicted items (whole or as
digests) and to digested ones (back to whole), and without digests the decision is
``retain``'s.  (From all-EVICT floors instead, the greedy by value per token re-ranks every
block, and on BFCL's ``base`` split it lost values ``retain`` kept.)

A kept item that uses a referent bound outside the tool units needs the binder's item kept:
as a digest only when the binder's digest holds the bound value verbatim, else whole.  The
selection is repeated with that item's floor raised until every kept item has what it
needs; a need whose floor would not fit evicts the needing item instead (excluded from the
next selections); if that item itself has a raised floor, or the floors alone exceed the
budget, ``retain``'s decision stands.  Each round raises a floor or excludes an item, so
there are at most 3 per item.  Reasons: a block ``retain`` kept keeps its reason; one kept
now gets the reason the ranking would have given it; one evicted now is ``SKIPPED_NO_FIT``.

**Value table** (``values=``, the agent policy only): a share of the budget is first reserved
for the short values of every block but the roots, ``retain`` and the digests decide at the
budget less it, and the values of the blocks left out then fill the room left, in one system
message (``value_table``: the rule as equations).

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
import json
import logging
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import BindingTable, DsgcValueError, Form, Params, Reason, ReferentEvictionError

from .._deferred import deferred
from ..digest_selection import select_forms
from ..engine import retain_built
from ..graph import DependencyGraph
from ..pins import ReferentIndex, binding_table, closure, render_table
from ..result import Retention
from ..stages import REASON_CODES, score_rule
from . import value_table
from .block import Block
from .chat import CALL_PREFIX, RESULT_PREFIX
from .digest_blocks import BlockDigest
from .explain import BindingTableBlock
from .line_index import IndexedLines
from .token_counts import TokenCounter, block_tokens

#: the store's and ``select``'s default knobs: the agent policy (without working ages it ranks as dsgc)
AGENT_PARAMS = Params(policy="agent")
#: the archive's reason label of each ``Reason`` code
REASON_LABELS = {int(reason): reason.label for reason in Reason}
#: ``meta["kind"]`` of a binding-table block
BINDING_TABLE_KIND = "binding_table"
#: what ``on_over_budget`` may say
OVER_BUDGET: tuple[str, ...] = ("raise", "roots_only", "truncate")

#: ``(message, text)`` of each tool result among the given root indices
ToolResults = Callable[[np.ndarray], Mapping[int, tuple[Mapping[str, Any], str]]]

#: each block's value lines, the blocks' ids and a line's token count (``value_table``)
ValueLines = tuple[IndexedLines, Sequence[str], value_table.LineCounts]

#: the package's loggers are named ``dsgc.<topic>`` (this one: ``dsgc.compaction``)
log = logging.getLogger("dsgc.compaction")
selection_kernels = deferred("dsgc_fast.kernels.selection")


def check_over_budget(on_over_budget: Any) -> str:
    if on_over_budget not in OVER_BUDGET:
        raise DsgcValueError(f"on_over_budget must be one of {list(OVER_BUDGET)}, got {on_over_budget!r}")
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
    """What ``decide`` decided: the retention, the costs it charged, the cuts, whether it is over
    budget, and the blocks sent as their digests (index -> digest; their costs are the digests')."""

    result: Retention
    costs: np.ndarray
    truncated: dict[int, Truncation] = field(default_factory=dict)
    over_budget: bool = False
    digested: dict[int, BlockDigest] = field(default_factory=dict)
    value_table: value_table.ValueTable | None = None

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
    digests: Sequence[BlockDigest | None] | None = None,
    values: ValueLines | None = None,
) -> Outcome:
    """``retain`` over the blocks with the live ``roots`` pinned, and ``on_over_budget`` when they do not fit.

    ``costs`` are the blocks' costs, ``counter`` the tokenizer (binding tables, cuts),
    ``ages`` the agent policy's working ages (None: none), ``tool_results`` gives the
    message and text of the tool results among some roots (needed by ``"truncate"``),
    ``digests`` each block's digest or None (None: no digests; read by the agent policy
    only, module docstring), ``values`` each block's value lines, the blocks' ids and the count of a
    line's tokens (``counter``'s, remembered: ``value_table.LineCounts``; None: no value table;
    the agent policy only).  Without roots and referent links the engine's unpinned path
    decides.  Raises ``ReferentEvictionError`` under ``"raise"`` as ``retain`` does.
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

    def run(b: int) -> Retention:
        return retain_built(query_emb, embs, costs, b, **common, **pinning)

    try:
        if values is not None and params.policy == "agent":
            pinned = np.flatnonzero(closure(index, roots))  # the roots and the binders they pin
            # a root depends on an earlier block: an edge from it, or a referent it pins
            depends = pinned.shape[0] > roots.shape[0] or bool(np.isin(roots, graph.dep_indices).any())
            outcome = Outcome(value_table.decided(run, *values, costs, pinned, budget, cost_fn, depends=depends), costs)
        else:
            outcome = Outcome(run(budget), costs)
    except ReferentEvictionError as exc:
        if on_over_budget == "raise":
            log.debug(
                "raise: budget %d cannot hold the live roots and the bindings they need", budget,
                extra={"dsgc": {"budget": budget, "blocks": len(costs), "pinned": len(exc.pinned), "path": "raise"}},
            )  # fmt: skip
            raise
    else:
        if digests is not None and params.policy == "agent" and outcome.result.binding_table is None:
            outcome = with_digests(outcome, digests, index, params)
        if values is not None and params.policy == "agent":
            outcome = with_value_table(outcome, values, budget, counter)
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
        "binding_table": result.binding_table is not None, "path": outcome.path, "digested": len(outcome.digested),
    }  # fmt: skip
    log.debug(
        "%(path)s: used %(used)d of budget %(budget)d; kept %(kept)d (%(digested)d as digests), evicted %(evicted)d "
        "of %(blocks)d blocks (%(pinned)d pinned, %(truncated)d tool results cut)", figures, extra={"dsgc": figures},
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


# -- digests -------------------------------------------------------------------------------
def with_digests(
    decided: Outcome, digests: Sequence[BlockDigest | None], index: ReferentIndex, params: Params
) -> Outcome:
    """``decided`` (a ``retain`` outcome that fit, no binding table) with each block sent whole, as
    its digest or not at all (the module docstring's rule); ``decided`` itself when no block
    has a digest or the floors do not fit."""
    result, costs = decided.result, decided.costs
    n = costs.shape[0]
    if len(digests) != n:
        raise DsgcValueError(f"digests has {len(digests)} entries, expected {n} (one per block)")
    if digests.count(None) == n:
        return decided
    item, needs = _items(index, n)
    groups = int(item.max()) + 1
    whole = result.scores * np.maximum(costs, 1).astype(np.float64) ** params.density_exponent
    digest_costs, digest_values = costs.copy(), whole.copy()
    for i, dg in enumerate(digests):
        if dg is not None:
            digest_costs[i], digest_values[i] = dg.cost, whole[i] * dg.share
    c, d = _summed(item, costs, groups), _summed(item, digest_costs, groups)
    v, w = _summed(item, whole, groups), _summed(item, digest_values, groups)
    floor = np.zeros(groups, dtype=np.int8)
    floor[item[result.retained]] = np.where(d < c, Form.DIGEST, Form.WHOLE)[item[result.retained]]
    if result.pinned is not None:
        floor[item[result.pinned]] = Form.WHOLE
    candidate = np.ones(groups, dtype=np.bool_)
    form = np.zeros(groups, dtype=np.int8)
    while True:
        sub = np.flatnonzero(candidate)
        chosen = select_forms(c[sub], d[sub], v[sub], w[sub], result.budget, floor=floor[sub])
        if chosen.used > result.budget:
            return decided
        form[:] = Form.EVICT
        form[sub] = chosen.forms
        if not _met_needs(needs, item, digests, form, floor, candidate, c, d, result.budget):
            break
        if floor[~candidate].any():
            return decided
    return _digested(decided, digests, item, form, params)


def with_value_table(decided: Outcome, values: ValueLines, budget: int, counter: TokenCounter) -> Outcome:
    """``decided`` (a ``retain`` outcome that fit, at the budget less the reserve) at ``budget``, with
    the value table T of the evicted blocks' lines (``value_table.final``); none beside a binding table."""
    result = decided.result
    table = None
    if result.binding_table is None:
        table = value_table.final(*values, ~result.mask, budget - int(result.used), table_cost(counter))
    used = int(result.used) + (table.cost if table is not None else 0)
    changed = dataclasses.replace(result, used=used, budget=budget)
    return dataclasses.replace(decided, result=changed, value_table=table)


def _summed(item: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    out = np.zeros(groups, dtype=values.dtype)
    np.add.at(out, item, values)
    return out


def _items(index: ReferentIndex, n: int) -> tuple[np.ndarray, list[tuple[int, int, Any]]]:
    """The item of every block (tool units joined, numbered by their first block) and the needs
    ``(user, binder, bound value)`` of the other referents bound by another block."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    needs = []
    indptr, ids, binder = index.use_indptr, index.use_ids, index.live_binder
    for u in range(n):
        for r in ids[indptr[u] : indptr[u + 1]].tolist():
            b = int(binder[r])
            if b < 0 or b == u:
                continue
            name = index.names[r]
            if isinstance(name, str) and name.startswith((CALL_PREFIX, RESULT_PREFIX)):
                parent[root(u)] = root(b)
            else:
                needs.append((u, b, index.values[r]))
    roots = [root(i) for i in range(n)]
    number: dict[int, int] = {}
    item = np.array([number.setdefault(r, len(number)) for r in roots], dtype=np.int64)
    return item, needs


def _met_needs(
    needs: list[tuple[int, int, Any]], item: np.ndarray, digests: Sequence[BlockDigest | None], form: np.ndarray,
    floor: np.ndarray, candidate: np.ndarray, c: np.ndarray, d: np.ndarray, budget: int,
) -> bool:  # fmt: skip
    """Raise the floor of each binder item a kept item needs, or exclude the needing item when
    the raise does not fit; True if anything changed (the selection must run again)."""
    changed = False
    cost_of = np.stack([np.zeros_like(c), d, c], axis=1)
    floors = int(cost_of[np.flatnonzero(candidate), floor[candidate]].sum())
    for u, b, value in needs:
        gu, gb = int(item[u]), int(item[b])
        dg = digests[b]
        need = Form.DIGEST if dg is None or dg.keeps(value) else Form.WHOLE
        if form[gu] == Form.EVICT or not candidate[gu] or form[gb] >= need or floor[gb] >= need:
            continue
        raise_cost = int(cost_of[gb, need] - cost_of[gb, floor[gb]])
        if candidate[gb] and floors + raise_cost <= budget:
            floor[gb] = need
            floors += raise_cost
        else:
            candidate[gu] = False
            floors -= int(cost_of[gu, floor[gu]])
        changed = True
    return changed


def _digested(
    decided: Outcome, digests: Sequence[BlockDigest | None], item: np.ndarray, form: np.ndarray, params: Params
) -> Outcome:
    """The outcome of the items' ``form``: the mask, reasons, costs and digests (module docstring)."""
    result = decided.result
    block_form = form[item]
    kept = block_form != Form.EVICT
    digested = {i: dg for i, dg in enumerate(digests) if dg is not None and block_form[i] == Form.DIGEST}
    costs = decided.costs.copy()
    for i, dg in digested.items():
        costs[i] = dg.cost
    n = kept.shape[0]
    ranked = np.empty(n, dtype=np.int8)
    working = result.working if result.working is not None else np.zeros(n)
    selection_kernels.rule_kept(
        score_rule(params.policy, True), result.relevance, result.propagated, working, params.effective_lambda,
        REASON_CODES, ranked,
    )  # fmt: skip
    reasons = np.where(kept & ~result.mask, ranked, result.reasons)
    reasons = np.where(~kept & result.mask, np.int8(Reason.SKIPPED_NO_FIT), reasons).astype(np.int8)
    retained = np.flatnonzero(kept).astype(np.int64)
    changed = dataclasses.replace(result, retained=retained, mask=kept, reasons=reasons, used=int(costs[kept].sum()))
    return Outcome(changed, costs, decided.truncated, decided.over_budget, digested)


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


def tool_messages(blocks: Sequence[Block], found: np.ndarray) -> dict[int, tuple[dict[str, Any], str]]:
    """``(message, text)`` of the tool-result blocks among ``blocks[i]`` for i in ``found``."""
    out = {}
    for i in found.tolist():
        block = blocks[i]
        if block.meta.get("role") == "tool":
            out[i] = (block.meta["message"], block.text)
    return out


def cut_block(block: Block, cut: Truncation) -> Block:
    """The block sent cut: its cut text, message and cost, the original content and cost in ``meta["truncated"]``.

    ``MemoryStore.compact`` keeps this block in place of the whole one and ``select`` sends
    it, so both report the same block; a block cut again keeps the first original.
    """
    meta = block.detached().meta
    meta.setdefault("truncated", {"content": block.meta["message"].get("content"), "cost": block.cost})
    meta["message"] = json.loads(json.dumps(cut.message))
    return dataclasses.replace(block, text=cut.text, cost=cut.cost, meta=meta)


class BlockTexts(Mapping[str, str]):
    """Block id -> text of the blocks a compaction decided on, as sent (cut or digested texts where so):
    the report's ``texts``.

    ``ids`` are the compaction's blocks in order; ``blocks`` its own slot -> block mapping
    (blocks are frozen, and a store replaces a block, never edits it), ``sent`` the blocks sent
    in place of some of them, and ``slot_of`` the id -> slot map, which only grows and never
    changes an entry: so a later ``add``, cut or eviction cannot change the mapping or break an
    iteration over it.
    """

    def __init__(
        self, ids: Sequence[str], blocks: Mapping[int, Block], slot_of: Mapping[str, int], sent: Mapping[int, Block]
    ) -> None:
        self._ids, self._blocks, self._slot_of, self._sent = ids, blocks, slot_of, sent

    def __getitem__(self, block_id: str) -> str:
        slot = self._slot_of.get(block_id, -1)
        if slot not in self._blocks:
            raise KeyError(block_id)
        return (self._sent.get(slot) or self._blocks[slot]).text

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)
