"""``retain_batch``: many independent stores in one call, each decided exactly as ``retain``.

The stores are laid end to end (the ragged layout): store s owns rows
``offsets[s]:offsets[s+1]`` of ``block_embs`` and ``costs``, and, when ``edges`` is given,
the pairs ``edges[edge_offsets[s]:edge_offsets[s+1]]`` in indices local to the store.  One
query per store (``query_embs`` (S, d)) or one shared query ((d,)).  All validation runs
once, vectorized; the stores are then scored, ranked and selected in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import POLICIES, SELECTIONS, DsgcValueError, ParamOverrides, Params, check_budget

from . import _validate, stages
from .kernels import batch as kernels
from .result import Retention


@dataclass
class BatchRetention:
    """What ``retain_batch`` decided, flat over all stores (store s is ``offsets[s]:offsets[s+1]``).

    ``mask``, ``scores``, ``relevance``, ``propagated``, ``similarity`` and ``reasons`` are
    per block as in ``Retention``; ``rank`` holds each store's ranking in local indices;
    ``used`` and ``budgets`` are per store.  ``result[s]`` is store s as a ``Retention``
    (identical to ``retain`` on that store); ``retained`` are the kept global row indices.
    """

    offsets: np.ndarray
    mask: np.ndarray
    rank: np.ndarray
    scores: np.ndarray
    relevance: np.ndarray
    propagated: np.ndarray
    similarity: np.ndarray
    reasons: np.ndarray
    used: np.ndarray
    budgets: np.ndarray
    policy: str
    selection: str

    def __post_init__(self) -> None:
        """Check every field (types, lengths, offsets, local ranks): a hand-built result must not reach a kernel unchecked."""
        owner = "BatchRetention"
        _validate.result_field(owner, "mask", self.mask, _validate.BOOL, None)
        n = self.mask.shape[0]
        _validate.result_field(owner, "offsets", self.offsets, _validate.I64, None)
        offsets = _offsets("BatchRetention.offsets", self.offsets, n)
        stores = offsets.shape[0] - 1
        for name in ("scores", "relevance", "propagated", "similarity"):
            _validate.result_field(owner, name, getattr(self, name), _validate.F64, n)
        _validate.result_field(owner, "reasons", self.reasons, _validate.I8, n)
        _validate.result_field(owner, "rank", self.rank, _validate.I64, n)
        sizes = np.repeat(np.diff(offsets), np.diff(offsets))
        if n and ((self.rank < 0).any() or (self.rank >= sizes).any()):
            raise DsgcValueError("BatchRetention.rank holds a local index outside its store")
        for name in ("used", "budgets"):
            _validate.result_field(owner, name, getattr(self, name), _validate.I64, stores)
        _validate.result_scalars(
            owner, {}, {"policy": (self.policy, POLICIES), "selection": (self.selection, SELECTIONS)}
        )

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def retained(self) -> np.ndarray:
        """Sorted global row indices kept, over all stores."""
        return np.flatnonzero(self.mask)

    def __getitem__(self, s: int) -> Retention:
        if not -len(self) <= s < len(self):
            raise IndexError(f"store {s} out of range for {len(self)} stores")
        s %= len(self)
        lo, hi = int(self.offsets[s]), int(self.offsets[s + 1])
        mask = self.mask[lo:hi]
        return Retention(
            retained=np.flatnonzero(mask),
            mask=mask,
            scores=self.scores[lo:hi],
            relevance=self.relevance[lo:hi],
            propagated=self.propagated[lo:hi],
            similarity=self.similarity[lo:hi],
            reasons=self.reasons[lo:hi],
            used=int(self.used[s]),
            budget=int(self.budgets[s]),
            policy=self.policy,
            selection=self.selection,
            _rank=self.rank[lo:hi],
        )


def _offsets(name: str, value: Any, total: int) -> np.ndarray:
    """S + 1 int64 boundaries: starting at 0, never decreasing, ending at ``total``."""
    off = _validate.integer_vector(name, value)
    if off.shape[0] == 0 or off[0] != 0 or off[-1] != total or (np.diff(off) < 0).any():
        raise DsgcValueError(f"{name} must start at 0, never decrease and end at {total}")
    return off


def _budgets(value: Any, n_stores: int) -> np.ndarray:
    """One non-negative int64 budget per store (a scalar is shared by every store)."""
    if np.ndim(value) == 0:
        return np.full(n_stores, check_budget(value), dtype=np.int64)
    b = _validate.integer_vector("budgets", value, n_stores)
    if b.size and b.min() < 0:
        raise DsgcValueError(f"budgets must be >= 0, got {int(b.min())} for store {int(np.argmin(b))}")
    return b


def _local_edges(edges: Any, edge_offsets: Any, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dependent, prerequisite, edge_offsets) with every index inside its own store."""
    n_stores = offsets.shape[0] - 1
    if edges is None:
        if edge_offsets is not None:
            raise DsgcValueError("edge_offsets is given but edges is None")
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.zeros(n_stores + 1, dtype=np.int64)
    if edge_offsets is None:
        raise DsgcValueError("edges needs edge_offsets (S + 1 boundaries, one segment per store)")
    e = _validate.edges(edges, int(offsets[-1]))
    e_off = _offsets("edge_offsets", edge_offsets, e.shape[0])
    if e_off.shape[0] != n_stores + 1:
        raise DsgcValueError(f"edge_offsets has {e_off.shape[0]} entries, expected {n_stores + 1} (stores + 1)")
    sizes = np.repeat(np.diff(offsets), np.diff(e_off))
    bad = np.flatnonzero((e[:, 0] >= sizes) | (e[:, 1] >= sizes))
    if bad.size:
        k = int(bad[0])
        store = int(np.searchsorted(e_off, k, side="right") - 1)
        raise DsgcValueError(f"edges[{k}] = {e[k].tolist()} is out of range for store {store} ({int(sizes[k])} blocks)")
    return np.ascontiguousarray(e[:, 0]), np.ascontiguousarray(e[:, 1]), e_off


def retain_batch(
    query_embs: npt.ArrayLike,
    block_embs: npt.ArrayLike,
    offsets: npt.ArrayLike,
    costs: npt.ArrayLike,
    budgets: npt.ArrayLike,
    *,
    params: Params | None = None,
    edges: npt.ArrayLike | None = None,
    edge_offsets: npt.ArrayLike | None = None,
    mode: str = "exact",
    **overrides: Unpack[ParamOverrides],
) -> BatchRetention:
    """``retain`` on every store of a ragged batch, in parallel over stores.

    Parameters
    ----------
    query_embs : array_like, (S, d) or (d,)
        One query per store, or one shared by every store.
    block_embs : array_like, (N, d)
        All stores' rows end to end.
    offsets : array_like, (S + 1,)
        Store boundaries: store s owns rows ``offsets[s]:offsets[s + 1]``.
    costs : array_like, (N,)
        Token costs.
    budgets : int or array_like, (S,)
        One budget per store, or one shared.
    params, **overrides
        The scoring knobs, as in ``retain``.
    edges, edge_offsets : array_like, optional
        (E, 2) (dependent, prerequisite) pairs local to each store, and their S + 1
        boundaries.
    mode : {"exact", "fast"}
        As in ``retain``.

    Returns
    -------
    BatchRetention
        Store s equals ``retain(query_embs[s], block_embs[lo:hi], costs[lo:hi], budgets[s],
        edges=edges[e_lo:e_hi], ...)`` bit for bit in exact mode (input order is the tie
        order; one query per store).
    """
    p = Params.of(params, **overrides)
    mode = stages.check_mode(mode)
    no_stores = np.ndim(query_embs) == 2 and np.shape(query_embs)[0] == 0
    queries = np.empty((0, np.shape(query_embs)[1])) if no_stores else _validate.query(query_embs)
    embs = _validate.embeddings("block_embs", block_embs, queries.shape[1])
    n = embs.shape[0]
    off = _offsets("offsets", offsets, n).copy()
    n_stores = off.shape[0] - 1
    if np.ndim(query_embs) == 1:
        query_of = np.zeros(n_stores, dtype=np.int64)
    elif queries.shape[0] == n_stores:
        query_of = np.arange(n_stores, dtype=np.int64)
    else:
        raise DsgcValueError(
            f"query_embs has {queries.shape[0]} rows, expected {n_stores} (one per store) or a (d,) vector"
        )
    cost, _ = _validate.costs(costs, n)
    budget = _budgets(budgets, n_stores).copy()
    dependent, prerequisite, e_off = _local_edges(edges, edge_offsets, off)

    csum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(cost, out=csum[1:])
    effective = np.minimum(budget, csum[off[1:]] - csum[off[:-1]])
    sim, rel, pi, scores = (np.empty(n, dtype=np.float64) for _ in range(4))
    ranking = np.empty(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    used = np.zeros(n_stores, dtype=np.int64)
    stages.pick(n, kernels.retain_stores, kernels.retain_stores_par)(
        stages.kernel_array(embs), queries, query_of, off, cost, dependent, prerequisite, e_off, effective,
        *stages.kernel_knobs(p), mode == "fast", stages.REASON_CODES,
        sim, rel, pi, scores, ranking, mask, reasons, used,
    )  # fmt: skip
    stages.check_finite(sim, embs)
    for a in (off, budget):
        a.flags.writeable = False
    return BatchRetention(off, mask, ranking, scores, rel, pi, sim, reasons, used, budget, p.policy, p.selection)
