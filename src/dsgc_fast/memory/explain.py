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

A report is built in O(1) beyond the compaction itself: each ``Decision`` is computed when
it is first asked for (``report.decisions[id]``), the referent forest once, on the first
decision, by two linear kernel passes (``kernels.closure.closure_forest`` and
``forest_depths``).  A decision's ``chain`` (a ``ReferentChain``) knows its length, source
and last step without walking, so ``why`` and ``table`` stay linear on a long chain; the
full path is walked when it is read.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dsgc_ref.contract import Reason

from .._deferred import deferred
from ..graph import DependencyGraph
from ..pins import ReferentIndex
from ..result import Retention
from . import explain_text
from .block import Block
from .digest_blocks import BlockDigest
from .explain_html import render
from .value_table import ValueTableBlock

closure_kernels = deferred("dsgc_fast.kernels.closure")

_ADMITTED = (Reason.KEPT_RELEVANCE, Reason.KEPT_PROPAGATION, Reason.KEPT_RECENCY, Reason.KEPT_WORKING)


@dataclass(frozen=True)
class BindingTableBlock:
    """The escalation's binding table as a store block; ``entries`` name source block ids."""

    block: Block
    entries: list[tuple[Hashable, Any, str]]


class BlockRoles(Mapping[str, str]):
    """Block id -> chat role (``"block"`` for a plain block), read from the block when asked.

    ``ids`` are the report's blocks, oldest first; ``block_of`` gives the block of one of
    them (KeyError or IndexError for another id: a ``KeyError`` here).  A report holds one so
    that building it stays O(1) beyond the compaction.
    """

    def __init__(self, ids: Sequence[str], block_of: Callable[[str], Block]) -> None:
        self._ids, self._block_of = ids, block_of

    def __getitem__(self, block_id: str) -> str:
        try:
            block = self._block_of(block_id)
        except (KeyError, IndexError):
            raise KeyError(block_id) from None
        return str(block.meta.get("role", "block"))

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class ReferentChain(Sequence[tuple[str, Hashable]]):
    """A decision's referent path: steps ``(block, referent)`` from the walk's source down.

    Its length, ``source`` and ``last`` step are read from the referent forest in O(1); the
    steps themselves are walked on first use, so reasons and tables over every block of a
    long chain stay linear.  Compares equal to a tuple or list of the same steps.
    """

    __slots__ = ("_facts", "_i", "_steps")

    def __init__(self, steps: Sequence[tuple[str, Hashable]] = (), *, facts: _Facts | None = None, i: int = -1) -> None:
        self._steps: tuple[tuple[str, Hashable], ...] | None = None if facts is not None else tuple(steps)
        self._facts, self._i = facts, i

    def _all(self) -> tuple[tuple[str, Hashable], ...]:
        if self._steps is None:
            assert self._facts is not None
            self._steps = self._facts.chain(self._i)
        return self._steps

    def __len__(self) -> int:
        if self._steps is not None:
            return len(self._steps)
        assert self._facts is not None
        return int(self._facts.depth[self._i])

    def __getitem__(self, k: Any) -> Any:
        return self._all()[k]

    @property
    def source(self) -> str | None:
        """The live root or admitted block the path starts from (None for an empty path)."""
        if not len(self):
            return None
        if self._steps is not None:
            return self._steps[0][0]
        assert self._facts is not None
        return self._facts.ids[int(self._facts.source[self._i])]

    @property
    def last(self) -> tuple[str, Hashable] | None:
        """The step into the decision's own block (None for an empty path)."""
        if not len(self):
            return None
        if self._steps is not None:
            return self._steps[-1]
        assert self._facts is not None
        return self._facts.step_into(self._i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ReferentChain, tuple, list)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


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
    chain: ReferentChain = field(default_factory=ReferentChain)
    tabled: tuple[Hashable, ...] = ()
    unit: tuple[str, ...] = ()
    unit_cost: int = 0
    left: int = 0
    working: float = 0.0
    digest: BlockDigest | None = None

    @property
    def kept(self) -> bool:
        return self.reason.kept

    @property
    def digested(self) -> bool:
        """Kept, sent as its digest (``digest``: its cost, the value words kept and dropped)."""
        return self.digest is not None

    def why(self) -> str:
        """A one-line reason naming the blocks, referents and numbers behind it (``explain_text.why``)."""
        return explain_text.why(self)

    def explain(self) -> str:
        """Multi-line explanation: the reason, then every score part (``explain_text.decision_lines``)."""
        return explain_text.decision_lines(self)

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
            "working": self.working,
            "left": self.left,
            "digest": None if self.digest is None else self.digest.to_dict(),
        }


#: the version of ``CompactionReport.to_dict``'s layout (and the CLI's JSON output)
SCHEMA_VERSION = 1


@dataclass
class CompactionReport:
    """The outcome of ``MemoryStore.compact``: kept/evicted ids and one ``Decision`` each.

    ``binding_table`` is None, or the escalation's table block (its id, text, cost and
    ``(referent, value, source id)`` entries), which joins the active set.  ``over_budget``:
    even the live roots did not fit, and only they were kept (``on_over_budget``);
    ``truncated``: block id -> the ``compaction.Truncation`` of each tool result that was cut;
    ``roles``: block id -> chat role (``BlockRoles``; empty when the caller gave none);
    ``digested``: block id -> the ``digest_blocks.BlockDigest`` of each block kept as its
    digest (its decision's ``why`` starts with "digested", naming the values kept and dropped);
    ``value_table``: the value table sent (``value_table.ValueTableBlock``: its block and
    ``(source id, line)`` entries), or None.
    """

    kept: list[str]
    evicted: list[str]
    decisions: Mapping[str, Decision]
    policy: str
    budget: int
    used: int
    query: str
    binding_table: BindingTableBlock | None = None
    compaction: int = 0
    texts: Mapping[str, str] = field(default_factory=dict, repr=False)
    over_budget: bool = False
    truncated: Mapping[str, Any] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict, repr=False)
    digested: Mapping[str, BlockDigest] = field(default_factory=dict)
    value_table: ValueTableBlock | None = None

    def explain(self, block_id: str) -> str:
        """The multi-line explanation of one block's decision."""
        if block_id not in self.decisions:
            raise KeyError(f"no decision for block {block_id!r} in this compaction")
        return self.decisions[block_id].explain()

    def table(self, preview: int = 40) -> str:
        """A fixed-width table of every decision (oldest block first) with a summary line (``explain_text.table``)."""
        return explain_text.table(self, preview)

    def summary(self) -> str:
        """One line: the policy, budget, tokens used, blocks kept and evicted (``explain_text.summary``)."""
        return explain_text.summary(self)

    def to_dict(self) -> dict[str, Any]:
        table = self.binding_table
        return {
            "schema_version": SCHEMA_VERSION,
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
            "over_budget": self.over_budget,
            "truncated": {block_id: t.to_dict() for block_id, t in self.truncated.items()},
            "digested": {block_id: dg.to_dict() for block_id, dg in self.digested.items()},
            "value_table": None if self.value_table is None else self.value_table.to_dict(),
            "decisions": [d.to_dict() for d in self.decisions.values()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_html(self, *, focus: Iterable[str] = ()) -> str:
        """One self-contained HTML page showing this compaction as a timeline.

        Parameters
        ----------
        focus : iterable of str
            Block ids to highlight, their texts opened (each must be a block of the report,
            else ``KeyError``).

        Returns
        -------
        str
            The page (inline CSS, script and SVG; nothing is fetched): the budget bar, then
            one row per block, oldest first, with its role, tokens, decision, score parts and
            text, the referent links (user -> live binder) and dependency edges drawn beside
            the rows, and the binding table last.  Every text from the session is escaped;
            each block's shown text is capped (``explain_html.text_cap``) with a note.
        """
        return render(self, focus=focus)


def build_report(
    ids: Sequence[str],
    result: Retention,
    *,
    costs: np.ndarray,
    graph: DependencyGraph,
    referents: ReferentIndex,
    roots: np.ndarray,
    lambda_pi: float,
    query: str,
    texts: Mapping[str, str],
    table_block: BindingTableBlock | None = None,
    over_budget: bool = False,
    truncated: Mapping[str, Any] | None = None,
    roles: Mapping[str, str] | None = None,
    digested: Mapping[str, BlockDigest] | None = None,
    value_table: ValueTableBlock | None = None,
) -> CompactionReport:
    """A ``CompactionReport`` for a ``Retention`` over blocks named ``ids`` (oldest first).

    ``graph`` and ``referents`` are the prerequisite graph and referent index the engine
    decided with; ``lambda_pi`` the effective weight of the support (0 for no_graph);
    ``roles`` the blocks' chat roles (a ``BlockRoles``); ``digested`` the blocks kept as
    their digests (id -> digest).
    """
    digested = dict(digested or {})
    facts = _Facts(ids, result, costs, graph, referents, roots, lambda_pi, table_block, digested)
    decisions = _Decisions(facts)
    return CompactionReport(
        kept=list(map(ids.__getitem__, result.retained.tolist())),
        evicted=list(itertools.compress(ids, (~result.mask).tolist())),  # ``result.evicted``, in one C loop
        decisions=decisions,
        policy=result.policy,
        budget=result.budget,
        used=int(result.used),
        query=query,
        binding_table=_detached_table(table_block),
        texts=texts,
        over_budget=over_budget,
        truncated=dict(truncated or {}),
        roles=roles if roles is not None else {},
        digested=digested,
        value_table=value_table,
    )


def _detached_table(table: BindingTableBlock | None) -> BindingTableBlock | None:
    """The report's own copy of the table block (the store keeps the block it adds)."""
    if table is None:
        return None
    return BindingTableBlock(table.block.detached(table.block.embedding), list(table.entries))


class _Facts:
    """What the decisions are computed from, and the parts that are shared among them."""

    def __init__(
        self, ids: Sequence[str], result: Retention, costs: np.ndarray, graph: DependencyGraph,
        referents: ReferentIndex, roots: np.ndarray, lambda_pi: float, table_block: BindingTableBlock | None,
        digested: Mapping[str, BlockDigest],
    ) -> None:  # fmt: skip
        self.ids, self.result, self.costs, self.graph, self.referents = ids, result, costs, graph, referents
        self.roots, self.lambda_pi, self.table_block, self.digested = roots, lambda_pi, table_block, digested

    @cached_property
    def slot(self) -> dict[str, int]:
        """Block id -> index."""
        return {block_id: i for i, block_id in enumerate(self.ids)}

    @cached_property
    def rank(self) -> np.ndarray:
        """1-based rank of every block."""
        n = len(self.ids)
        rank = np.empty(n, dtype=np.int64)
        rank[self.result.rank] = np.arange(1, n + 1)
        return rank

    @cached_property
    def forest(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Parent block, link, depth and source of every block in the use -> live-binder traversal.

        Sources: the live roots first, then the blocks admitted by the ranking in rank order.
        A block's depth counts the links from its source (0 for a source and for blocks not
        reached).
        """
        r = self.result
        admitted = r.rank[np.isin(r.reasons[r.rank], _ADMITTED_CODES)]
        sources = np.concatenate([self.roots.astype(np.int64), admitted])
        n = len(self.ids)
        parent, link = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        ptr, blocks = self.referents.need_indptr, self.referents.need_blocks
        reached = closure_kernels.closure_forest(sources, ptr, blocks, np.zeros(n, dtype=np.bool_), parent, link)
        depth, source = np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64)
        closure_kernels.forest_depths(reached, parent, depth, source)
        return parent, link, depth, source

    @property
    def depth(self) -> np.ndarray:
        return self.forest[2]

    @property
    def source(self) -> np.ndarray:
        return self.forest[3]

    @cached_property
    def blocked(self) -> np.ndarray:
        """Blocks a skipped block's unit does not need: kept, or covered by the binding table."""
        return self.result.mask | (self.result.reasons == Reason.TABLED)

    @cached_property
    def tabled_by(self) -> dict[str, tuple[Hashable, ...]]:
        return _tabled_referents(self.table_block, self.ids)

    def step_into(self, i: int) -> tuple[str, Hashable]:
        """The traversal's step (parent block, referent) into block i (i has a parent)."""
        parent, link = self.forest[:2]
        return self.ids[int(parent[i])], self.referents.names[int(self.referents.need_referents[link[i]])]

    def chain(self, i: int) -> tuple[tuple[str, Hashable], ...]:
        """The steps (user block, referent) from the traversal's source down to block i."""
        parent = self.forest[0]
        steps = []
        while parent[i] >= 0:
            steps.append(self.step_into(i))
            i = int(parent[i])
        return tuple(steps[::-1])

    def unit(self, i: int) -> list[int]:
        """For a block skipped for budget, the unkept blocks of its closure (sorted, i excluded)."""
        ptr = self.referents.need_indptr
        if self.result.reasons[i] != Reason.SKIPPED_NO_FIT or ptr[i] == ptr[i + 1]:
            return []
        parent, link = np.full(len(self.ids), -1, dtype=np.int64), np.full(len(self.ids), -1, dtype=np.int64)
        reached = closure_kernels.closure_forest(
            np.array([i]), ptr, self.referents.need_blocks, self.blocked, parent, link
        )
        return sorted(int(b) for b in reached[1:])

    def support_from(self, i: int) -> tuple[tuple[str, float], ...]:
        """The direct dependents j of i with their r_j, largest first (ties: older first)."""
        g, relevance = self.graph, self.result.relevance
        deps = g.dep_indices[g.dep_indptr[i] : g.dep_indptr[i + 1]].tolist()
        pairs = sorted(((float(relevance[j]), j) for j in deps), key=lambda s: (-s[0], s[1]))
        return tuple((self.ids[j], r) for r, j in pairs)

    def decision(self, i: int) -> Decision:
        r, block_id = self.result, self.ids[i]
        unit = self.unit(i)
        return Decision(
            id=block_id,
            reason=r.reason(i),
            rank=int(self.rank[i]),
            cost=int(self.costs[i]),
            similarity=float(r.similarity[i]),
            relevance=float(r.relevance[i]),
            propagated=float(r.propagated[i]),
            support=float(self.lambda_pi * r.propagated[i]),
            working=float(self.lambda_pi * r.working[i]) if r.working is not None else 0.0,
            score=float(r.scores[i]),
            newer=len(self.ids) - 1 - i,
            root=bool(np.any(self.roots == i)),
            support_from=self.support_from(i),
            chain=ReferentChain(facts=self, i=i),
            tabled=self.tabled_by.get(block_id, ()),
            unit=tuple(self.ids[b] for b in unit),
            unit_cost=int(self.costs[i] + sum(int(self.costs[b]) for b in unit)),
            left=int(r.budget - r.used),
            digest=self.digested.get(block_id),
        )


class _Decisions(Mapping[str, Decision]):
    """block id -> ``Decision``, oldest block first, each computed on first access."""

    def __init__(self, facts: _Facts) -> None:
        self._facts = facts
        self._made: dict[str, Decision] = {}

    def __getitem__(self, block_id: str) -> Decision:
        made = self._made.get(block_id)
        if made is None:
            made = self._made[block_id] = self._facts.decision(self._facts.slot[block_id])
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts.ids)

    def __len__(self) -> int:
        return len(self._facts.ids)

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._facts.slot


_ADMITTED_CODES = np.array([int(r) for r in _ADMITTED], dtype=np.int8)


def _tabled_referents(table: BindingTableBlock | None, ids: Sequence[str]) -> dict[str, tuple[Hashable, ...]]:
    out: dict[str, tuple[Hashable, ...]] = {}
    if table is not None:
        for x, _, src in table.entries:
            out[src] = out.get(src, ()) + (x,)
    return out


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
