"""Why each block was kept or evicted: decisions with their score parts, and a report.

A ``Decision`` carries the block's ``Reason`` and what produced it:

* the score parts of the ranking: ``similarity`` a_i = <q, e_i>, ``relevance``
  r_i = softmax(a / tau)_i, ``propagated`` pi_i (one hop: the sum of r_j over the
  dependents j of i), ``support`` = lambda_pi * pi_i, and ``score`` I_i; its ``rank``
  (1 = best) among the active blocks and its ``cost``;
* ``support_from``: the direct dependents j of i with their r_j, largest first (for
  ``hops=1`` they add up to pi_i);
* ``chain``: for a pinned block, the referent path from a live root to it; for a block kept
  by closure, the path from the ranked block that admitted it.  Each step is
  ``(block, referent)``: block uses referent, whose live binder is the next step's block;
* ``newer``: how many active blocks are newer (the recency policy keeps newest first).

The chains follow the same rule as the engine (use -> live binder, newest binder wins).  For
a block kept by closure the admitting block is the best-ranked admitted block whose
closure contains it: the traversal visits sources in rank order and never re-enters a block.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import Reason
from dsgc_ref.pins import check_referents, closure_from, live_binders

from .archive import Block

_ADMITTED = (Reason.KEPT_RELEVANCE, Reason.KEPT_PROPAGATION, Reason.KEPT_RECENCY)


@dataclass(frozen=True)
class BindingTableBlock:
    """The escalation's binding table as a store block; ``entries`` name source block ids."""

    block: Block
    entries: list[tuple[Hashable, Any, str]]


@dataclass(frozen=True)
class Decision:
    """One block's outcome with its reason and score parts (see the module docstring)."""

    id: str
    reason: Reason
    rank: int
    cost: int
    similarity: float
    relevance: float
    propagated: float
    support: float
    score: float
    newer: int
    root: bool = False
    support_from: tuple[tuple[str, float], ...] = ()
    chain: tuple[tuple[str, Hashable], ...] = ()
    tabled: tuple[Hashable, ...] = ()
    unit: tuple[str, ...] = ()
    unit_cost: int = 0
    left: int = 0

    @property
    def kept(self) -> bool:
        return self.reason.kept

    def why(self) -> str:
        """A one-line reason naming the blocks, referents and numbers behind it."""
        r = self.reason
        if r == Reason.KEPT_PINNED:
            if self.root:
                return "kept: live root (pinned)"
            return f"kept: pinned through {_chain_text(self.chain, self.id)}"
        if r == Reason.KEPT_CLOSURE:
            return f"kept: closure of admitted block {self.chain[0][0]}: {_chain_text(self.chain, self.id)}"
        if r == Reason.KEPT_RELEVANCE:
            return f"kept: relevance rank {self.rank} (r={self.relevance:.3g} >= support {self.support:.3g})"
        if r == Reason.KEPT_PROPAGATION:
            return f"kept: propagated support {self.support:.3g} > r={self.relevance:.3g} from {_support_text(self.support_from)}"
        if r == Reason.KEPT_RECENCY:
            return f"kept: recency ({self.newer} newer blocks)"
        if r == Reason.TABLED:
            return "evicted: replaced by the binding table (" + ", ".join(map(str, self.tabled)) + ")"
        if r == Reason.EVICTED_CUTOFF:
            return f"evicted: below the prefix cutoff (rank {self.rank})"
        needs = f"cost {self.cost}"
        if self.unit:
            needs = f"cost {self.unit_cost} with its closure {', '.join(self.unit)}"
        unused = f"; {self.left} tokens left unused" if self.left else ""
        return f"evicted: did not fit the budget (rank {self.rank}, {needs}{unused})"

    def explain(self) -> str:
        """Multi-line explanation: the reason, then every score part."""
        lines = [
            f"{self.id}: {self.why()}",
            f"  rank {self.rank}, cost {self.cost}, {self.newer} newer blocks",
            f"  similarity a = {self.similarity:.6g}",
            f"  relevance  r = {self.relevance:.6g}",
            f"  propagated pi = {self.propagated:.6g} (support lambda*pi = {self.support:.6g})",
            f"  score      I = {self.score:.6g}",
        ]
        if self.support_from:
            lines.append(f"  support from dependents: {_support_text(self.support_from, limit=None)}")
        if self.chain:
            lines.append(f"  referent chain: {_chain_text(self.chain, self.id)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kept": self.kept,
            "reason": self.reason.name.lower(),
            "why": self.why(),
            "rank": self.rank,
            "cost": self.cost,
            "similarity": self.similarity,
            "relevance": self.relevance,
            "propagated": self.propagated,
            "support": self.support,
            "score": self.score,
            "newer": self.newer,
            "root": self.root,
            "support_from": [list(s) for s in self.support_from],
            "chain": [[b, _jsonable(x)] for b, x in self.chain],
            "tabled": [_jsonable(x) for x in self.tabled],
            "unit": list(self.unit),
            "unit_cost": self.unit_cost,
            "left": self.left,
        }


@dataclass
class CompactionReport:
    """The outcome of ``MemoryStore.compact``: kept/evicted ids and one ``Decision`` each.

    ``binding_table`` is None, or the escalation's table block (its id, text, cost and
    ``(referent, value, source id)`` entries), which joins the active set.
    """

    kept: list[str]
    evicted: list[str]
    decisions: dict[str, Decision]
    policy: str
    budget: int
    used: int
    query: str
    binding_table: BindingTableBlock | None = None
    compaction: int = 0
    texts: dict[str, str] = field(default_factory=dict, repr=False)

    def explain(self, block_id: str) -> str:
        """The multi-line explanation of one block's decision."""
        if block_id not in self.decisions:
            raise KeyError(f"no decision for block {block_id!r} in this compaction")
        return self.decisions[block_id].explain()

    def table(self, preview: int = 40) -> str:
        """A fixed-width table of every decision (oldest block first) with a summary line."""
        header = ("id", "decision", "rank", "cost", "score", "relevance", "support", "text", "why")
        rows = []
        for d in self.decisions.values():
            text = " ".join(self.texts.get(d.id, "").split())
            text = text if len(text) <= preview else text[: preview - 3] + "..."
            rows.append(
                (d.id, "kept" if d.kept else "evicted", str(d.rank), str(d.cost), f"{d.score:.4f}",
                 f"{d.relevance:.4f}", f"{d.support:.4f}", text, d.why())
            )
        widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]
        right = {2, 3, 4, 5, 6}

        def fmt(row: Sequence[str]) -> str:
            cells = [c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(row, widths))]
            return "  ".join(cells[:-1] + [row[-1]])

        lines = [self.summary(), "", fmt(header), fmt(["-" * w for w in widths])]
        lines += [fmt(r) for r in rows]
        if self.binding_table is not None:
            table = self.binding_table.block
            lines += ["", f"binding table {table.id} (cost {table.cost}):"]
            lines += [f"  {x}: {v} (from {src})" for x, v, src in self.binding_table.entries]
        return "\n".join(lines)

    def summary(self) -> str:
        n = len(self.kept) + len(self.evicted)
        return (
            f"policy {self.policy}, budget {self.budget}, used {self.used}: "
            f"kept {len(self.kept)} of {n} blocks, evicted {len(self.evicted)}"
        )

    def to_dict(self) -> dict[str, Any]:
        table = self.binding_table
        return {
            "policy": self.policy,
            "budget": self.budget,
            "used": self.used,
            "query": self.query,
            "compaction": self.compaction,
            "kept": list(self.kept),
            "evicted": list(self.evicted),
            "binding_table": None
            if table is None
            else {
                "id": table.block.id,
                "text": table.block.text,
                "cost": table.block.cost,
                "entries": [[_jsonable(x), _jsonable(v), src] for x, v, src in table.entries],
            },
            "decisions": [d.to_dict() for d in self.decisions.values()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def build_report(
    ids: Sequence[str],
    result: Any,
    *,
    costs: np.ndarray,
    edges: np.ndarray,
    roots: np.ndarray,
    uses: Sequence[Any],
    binds: Sequence[Any],
    lambda_pi: float,
    query: str,
    texts: dict[str, str],
    table_block: BindingTableBlock | None = None,
) -> CompactionReport:
    """A ``CompactionReport`` for a ``Retention`` over blocks named ``ids`` (oldest first)."""
    n = len(ids)
    rank = np.empty(n, dtype=np.int64)
    rank[result.rank] = np.arange(1, n + 1)
    use_lists, bind_maps = check_referents(uses, binds, n)
    live = live_binders(bind_maps, list(range(n)))
    parents = _referent_forest(result, roots, use_lists, live)
    units = _eviction_units(result, costs, use_lists, live)
    left = int(result.budget - result.used)
    support_from = _support_sources(n, edges, result.relevance)
    root_set = set(roots.tolist())
    tabled_by = _tabled_referents(table_block, ids)
    decisions = {}
    for i, block_id in enumerate(ids):
        decisions[block_id] = Decision(
            id=block_id,
            reason=result.reason(i),
            rank=int(rank[i]),
            cost=int(costs[i]),
            similarity=float(result.similarity[i]),
            relevance=float(result.relevance[i]),
            propagated=float(result.propagated[i]),
            support=float(lambda_pi * result.propagated[i]),
            score=float(result.scores[i]),
            newer=n - 1 - i,
            root=i in root_set,
            support_from=tuple((ids[j], float(r)) for j, r in support_from.get(i, ())),
            chain=tuple((ids[b], x) for b, x in _path(parents, i)),
            tabled=tabled_by.get(block_id, ()),
            unit=tuple(ids[b] for b in units.get(i, ())),
            unit_cost=int(costs[i] + sum(costs[b] for b in units.get(i, ()))),
            left=left,
        )
    return CompactionReport(
        kept=[ids[i] for i in result.retained],
        evicted=[ids[i] for i in result.evicted],
        decisions=decisions,
        policy=result.policy,
        budget=result.budget,
        used=int(result.used),
        query=query,
        binding_table=table_block,
        texts=texts,
    )


def _referent_forest(
    result: Any, roots: np.ndarray, use_lists: Sequence[Sequence[Hashable]], live: dict[Hashable, int]
) -> dict[int, tuple[int, Hashable]]:
    """Parent pointers (block -> (user block, referent)) of the use -> live-binder traversal.

    Sources: the live roots first, then the blocks admitted by the ranking in rank order.
    """
    admitted = [int(i) for i in result.rank if Reason(int(result.reasons[i])) in _ADMITTED]
    seen: set[int] = set()
    parents: dict[int, tuple[int, Hashable]] = {}
    for source in [int(r) for r in roots] + admitted:
        if source in seen:
            continue
        seen.add(source)
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for x in use_lists[u]:
                b = live.get(x)
                if b is not None and b not in seen:
                    seen.add(b)
                    parents[b] = (u, x)
                    queue.append(b)
    return parents


def _eviction_units(
    result: Any, costs: np.ndarray, use_lists: Sequence[Sequence[Hashable]], live: dict[Hashable, int]
) -> dict[int, list[int]]:
    """For each block skipped for budget, the unkept blocks of its closure (its unit's other members)."""
    blocked = result.mask.copy()
    blocked[result.reasons == Reason.TABLED] = True
    out = {}
    for i in np.flatnonzero(result.reasons == Reason.SKIPPED_NO_FIT).tolist():
        if use_lists[i]:
            unit = closure_from([i], use_lists, live, stop=lambda b: bool(blocked[b]))
            out[i] = sorted(b for b in unit if b != i)
    return out


def _path(parents: dict[int, tuple[int, Hashable]], i: int) -> list[tuple[int, Hashable]]:
    """The steps (user block, referent) from the traversal's source down to block i."""
    steps = []
    while i in parents:
        u, x = parents[i]
        steps.append((u, x))
        i = u
    return steps[::-1]


def _support_sources(n: int, edges: np.ndarray, relevance: np.ndarray) -> dict[int, list[tuple[int, float]]]:
    """prerequisite i -> [(dependent j, r_j)], largest r_j first (distinct, no self-loops)."""
    out: dict[int, list[tuple[int, float]]] = {}
    distinct = np.unique(edges[edges[:, 0] != edges[:, 1]], axis=0) if len(edges) else edges
    for j, i in distinct.tolist():
        out.setdefault(i, []).append((j, float(relevance[j])))
    for sources in out.values():
        sources.sort(key=lambda s: (-s[1], s[0]))
    return out


def _tabled_referents(table: BindingTableBlock | None, ids: Sequence[str]) -> dict[str, tuple[Hashable, ...]]:
    out: dict[str, tuple[Hashable, ...]] = {}
    if table is not None:
        for x, _, src in table.entries:
            out[src] = out.get(src, ()) + (x,)
    return out


def _chain_text(chain: Sequence[tuple[str, Hashable]], end: str) -> str:
    parts = [f"{b} -uses {x!r}->" for b, x in chain]
    return " ".join(parts + [end])


def _support_text(sources: Sequence[tuple[str, float]], limit: int | None = 3) -> str:
    shown = sources if limit is None else sources[:limit]
    text = ", ".join(f"{j} (r={r:.3g})" for j, r in shown)
    if limit is not None and len(sources) > limit:
        text += f" and {len(sources) - limit} more"
    return text or "no dependents"


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
