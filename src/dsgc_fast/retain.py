"""``retain``: validated inputs -> Numba kernels -> a ``Retention`` result."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from dsgc_ref.contract import Reason, ReferentEvictionError, check_budget, check_parameters

from . import _validate
from ._config import PARALLEL_MIN_N
from .graph import DependencyGraph, as_graph
from .kernels import pins as pin_kernels
from .kernels import checks, pipeline, propagation, scoring
from .kernels import selection as selection_kernels
from .pins import ReferentIndex, as_index, closure, table_for


@dataclass
class Retention:
    """What ``retain`` decided, with every intermediate quantity (NumPy arrays).

    ``retained``   sorted int64 indices kept;       ``mask``       bool keep flag per block
    ``rank``       all indices, best first;         ``scores``     the ranking score I_i
    ``relevance``  softmax relevance r_i;           ``propagated`` support pi_i
    ``similarity`` raw a_i = <q, e_i>;              ``reasons``    int8 ``Reason`` codes
    ``used``       total cost kept;                 ``budget``     the budget given
    ``pinned``     sorted indices pinned;           ``binding_table`` None unless escalated
    ``order``      the tie order (None: input order)

    ``rank`` is computed on first access when the selection did not need the whole ranking
    (the budgeted walk ranks only the blocks it has to); it is the same array either way.
    """

    retained: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    relevance: np.ndarray
    propagated: np.ndarray
    similarity: np.ndarray
    reasons: np.ndarray
    used: int
    budget: int
    policy: str
    selection: str
    pinned: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    binding_table: Any = None
    order: np.ndarray | None = field(default=None, repr=False)
    _rank: np.ndarray | None = field(default=None, repr=False)

    @property
    def rank(self) -> np.ndarray:
        """All indices by descending score, ties in ``order`` (int64)."""
        if self._rank is None:
            seq = self.order if self.order is not None else np.arange(self.scores.shape[0], dtype=np.int64)
            self._rank = selection_kernels.rank(self.scores, seq)
        return self._rank

    @property
    def evicted(self) -> np.ndarray:
        """Sorted int64 indices not kept."""
        return np.flatnonzero(~self.mask)

    def reason(self, i: int) -> Reason:
        """The ``Reason`` for block ``i``."""
        return Reason(int(self.reasons[i]))


#: ``kernels.pipeline`` reason codes: kept by support, by relevance, by recency; skipped; cut off
REASON_CODES = np.array(
    [Reason.KEPT_PROPAGATION, Reason.KEPT_RELEVANCE, Reason.KEPT_RECENCY, Reason.SKIPPED_NO_FIT, Reason.EVICTED_CUTOFF],
    dtype=np.int8,
)


_SCORE_RULES = {"similarity": pipeline.SIMILARITY, "recency": pipeline.RECENCY}
#: policies ranking by I = (r + lambda_pi * pi) / c ** density_exponent
WEIGHTED_POLICIES = ("dsgc", "no_graph")


def score_rule(policy: str) -> int:
    """The ``kernels.pipeline`` score rule of a policy (no_graph is WEIGHTED with lambda_pi 0)."""
    return _SCORE_RULES.get(policy, pipeline.WEIGHTED)


def _pick(n: int, serial, parallel):
    return parallel if n >= PARALLEL_MIN_N else serial


def row_parts(n: int) -> int:
    """Row ranges for the one-hop kernels and the walk's first pass: ``PARTS`` on threads, else 1."""
    return _pick(n, 1, propagation.PARTS)


#: ``retain(mode=...)``: "exact" (bit-identical to dsgc_ref) or "fast" (see ``retain``)
MODES = ("exact", "fast")


@functools.lru_cache(maxsize=64, typed=True)
def _cached_parameters(*args: Any) -> tuple[str, str, float, float, int, float, float]:
    return check_parameters(**dict(zip(_PARAMETER_NAMES, args)))


_PARAMETER_NAMES = ("policy", "selection", "lambda_pi", "tau", "hops", "decay", "density_exponent")


def parameters(*args: Any) -> tuple[str, str, float, float, int, float, float]:
    """``check_parameters`` on (policy, selection, lambda_pi, tau, hops, decay, density_exponent),
    memoized by value and type (an agent loop passes the same ones every call)."""
    try:
        return _cached_parameters(*args)
    except TypeError:  # an unhashable argument: check it uncached (raises its own error)
        return check_parameters(**dict(zip(_PARAMETER_NAMES, args)))


def check_mode(mode: Any) -> str:
    """``mode`` must be one of ``MODES``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def similarity_rows(queries: np.ndarray, embs: np.ndarray, mode: str = "exact") -> np.ndarray:
    """(m, N) float64 matrix a_{k,i} = <q_k, e_i>; raises if any entry is not finite.

    ``mode="exact"`` sums each dot product left to right; ``"fast"`` lets it reassociate.
    """
    m, n = queries.shape[0], embs.shape[0]
    if mode == "fast":
        kernel = _pick(n, scoring.similarity_fast, scoring.similarity_fast_par)
    else:
        kernel = _pick(n, scoring.similarity, scoring.similarity_par)
    a = np.empty((m, n), dtype=np.float64)
    with numba.parallel_chunksize(1):  # threads take row chunks as they go: one delayed thread does not hold the rest
        for k in range(m):
            kernel(embs, queries[k], a[k])
    check_finite(a, embs)
    return a


def check_finite(a: np.ndarray, embs: np.ndarray) -> None:
    """Raise ValueError unless every similarity in ``a`` ((N,) or (m, N)) is finite."""
    if a.size and not checks.all_finite(a.reshape(-1, embs.shape[0])):
        row = int(np.flatnonzero(~np.isfinite(a.reshape(-1, embs.shape[0])).all(axis=0))[0])
        if not np.isfinite(embs[row]).all():
            raise ValueError(f"block_embs contains NaN or inf (row {row})")
        raise ValueError("query_emb . block_embs overflows float64; rescale the embeddings")


def mixture(a: np.ndarray, weights: np.ndarray, tau: float | None) -> np.ndarray:
    """sum_k w_k * f(a_k) with f = softmax(. / tau), or the identity when tau is None.

    With one query the result is f(a_0) itself (as in ``dsgc_ref.equations``).
    """
    m, n = a.shape
    softmax = _pick(n, scoring.softmax, scoring.softmax_par)
    if m == 1:
        if tau is None:
            return a[0]
        out = np.empty(n, dtype=np.float64)
        softmax(a[0], tau, out)
        return out
    acc = np.zeros(n, dtype=np.float64)
    tmp = np.empty(n, dtype=np.float64)
    for k in range(m):
        if tau is None:
            scoring.accumulate(acc, weights[k], a[k])
        else:
            softmax(a[k], tau, tmp)
            scoring.accumulate(acc, weights[k], tmp)
    return acc


def propagate(graph: DependencyGraph, r: np.ndarray, hops: int, decay: float) -> np.ndarray:
    """pi by the one-hop rule (hops = 1) or distance-damped k-hop reachability."""
    n = r.shape[0]
    out = np.empty(n, dtype=np.float64)
    if hops == 1:
        kernel = _pick(n, propagation.one_hop, propagation.one_hop_par)
        kernel(graph.dep_indptr, graph.dep_indices, graph.dep_rows, r, row_parts(n), out)
    else:
        par = n >= PARALLEL_MIN_N
        kernel = propagation.k_hop_par if par else propagation.k_hop
        n_chunks = max(1, min(n, numba.get_num_threads())) if par else 1
        kernel(graph.dep_indptr, graph.dep_indices, r, hops, decay, n_chunks, out)
    return out


def relevance_and_support(
    a: np.ndarray, weights: np.ndarray, tau: float, graph: DependencyGraph, hops: int, decay: float,
    seq: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """r and pi with every sum over blocks taken in ``seq`` order (as ``dsgc_ref`` does).

    With an explicit order ``seq`` the (m, N) similarities are laid out in that sequence (an
    N-length gather, never the N x d matrix) and the graph relabelled by position, so the
    softmax denominator and each propagated sum add their terms in the same sequence for any
    permutation of the store: permuting the blocks and ``order`` alike permutes the result
    bit for bit.  With ``seq`` None the input order is the sequence and nothing is relabelled.
    """
    if seq is None:
        relevance = mixture(a, weights, tau)
        return relevance, propagate(graph, relevance, hops, decay)
    n = seq.shape[0]
    pos = np.empty(n, dtype=np.int64)
    pos[seq] = np.arange(n, dtype=np.int64)
    relevance_seq = mixture(np.ascontiguousarray(a[:, seq]), weights, tau)
    edges = graph.edge_array()
    graph_seq = DependencyGraph.from_edges(n, pos[edges]) if edges.size else graph
    support_seq = propagate(graph_seq, relevance_seq, hops, decay)
    return relevance_seq[pos], support_seq[pos]


def weighted_one_hop(
    relevance: np.ndarray, graph: DependencyGraph, cost: np.ndarray, lambda_pi: float, density_exponent: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(pi, I, kept-reason codes) of a weighted policy with hops = 1, in one fused pass.

    The same bits as ``propagate``, ``scoring.combine`` and ``kept_reasons`` in sequence.
    """
    n = relevance.shape[0]
    support, scores = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64)
    kept = np.empty(n, dtype=np.int8)
    codes = np.int8(Reason.KEPT_PROPAGATION), np.int8(Reason.KEPT_RELEVANCE)
    _pick(n, propagation.one_hop_scores, propagation.one_hop_scores_par)(
        graph.dep_indptr, graph.dep_indices, graph.dep_rows, relevance, cost, lambda_pi, density_exponent, *codes,
        row_parts(n), support, scores, kept,
    )  # fmt: skip
    return support, scores, kept


def kept_reasons(policy: str, relevance: np.ndarray, support: np.ndarray, lambda_pi: float) -> np.ndarray:
    """int8 reason a block gets if the ranking admits it (recency, relevance or propagation)."""
    if policy == "recency":
        return np.full(relevance.shape[0], Reason.KEPT_RECENCY, dtype=np.int8)
    out = np.empty(relevance.shape[0], dtype=np.int8)
    by_support, by_relevance = np.int8(Reason.KEPT_PROPAGATION), np.int8(Reason.KEPT_RELEVANCE)
    selection_kernels.kept_codes(relevance, support, lambda_pi, by_support, by_relevance, out)
    return out


_INT64_MAX = int(np.iinfo(np.int64).max)

#: stores up to this size with one query, input tie order and no pinning take ``_retain_small``
SMALL_N = 2048


def _retain_small(
    q: np.ndarray, embs: np.ndarray, cost: np.ndarray, graph: DependencyGraph, budget: int, policy: str,
    selection: str, lambda_pi: float, tau: float, hops: int, decay: float, density_exponent: float, mode: str,
) -> Retention:  # fmt: skip
    """The lean path: every stage in one ``kernels.pipeline.retain_store`` call (same bits)."""
    n = embs.shape[0]
    out = np.empty((4, n), dtype=np.float64)
    ranking = np.empty(n, dtype=np.int64)
    kept = np.empty(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    used, count, finite = pipeline.retain_small(
        embs, q, cost, graph.dep_indptr, graph.dep_indices, min(budget, _INT64_MAX),
        tau, 0.0 if policy == "no_graph" else lambda_pi, density_exponent, hops, decay, score_rule(policy),
        selection == "prefix", mode == "fast", REASON_CODES,
        out, ranking, kept, mask, reasons,
    )  # fmt: skip
    if not finite:
        check_finite(out[0], embs)
    sim, rel, pi, scores = out
    return Retention(kept[:count], mask, scores, rel, pi, sim, reasons, int(used), budget, policy, selection, _rank=ranking)


def _empty(budget: int, policy: str, selection: str) -> Retention:
    i, f = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    return Retention(i, np.empty(0, dtype=np.bool_), f, f, f, f, np.empty(0, dtype=np.int8), 0, budget, policy, selection, _rank=i)


def retain(
    query_emb: Any,
    block_embs: Any,
    costs: Any,
    budget: Any,
    *,
    edges: Any = None,
    policy: str = "dsgc",
    lambda_pi: float = 1.0,
    tau: float = 0.25,
    hops: int = 1,
    decay: float = 0.5,
    density_exponent: float = 0.0,
    order: Any = None,
    selection: str = "first_fit",
    query_weights: Any = None,
    live: Any = None,
    uses: Any = None,
    binds: Any = None,
    binders: Any = None,
    referents: ReferentIndex | None = None,
    cost_fn: Any = None,
    mode: str = "exact",
) -> Retention:
    """Decide which blocks survive a token budget (see DESIGN.md, "The retention contract").

    ``query_emb`` (d,) or (m, d); ``block_embs`` (N, d) float32/float64; ``costs`` N
    non-negative integers; ``budget`` a non-negative integer; ``edges`` (E, 2) pairs
    ``(dependent, prerequisite)`` or a prebuilt ``DependencyGraph``.

    r = softmax(<q, e_i> / tau) (for m queries the ``query_weights``-weighted mixture of
    the per-query softmaxes), pi = propagated support (``hops``, ``decay``), and
    I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent.  Ranking is by
    descending score with ties in ``order``; ``selection`` is ``first_fit`` or ``prefix``.
    Identical, bit for bit, to ``dsgc_ref.retain`` on float64 inputs.

    Referent pinning (any of ``live``, ``uses``/``binds`` or ``referents`` given): the live
    roots and their referent closure are pinned and charged first; the remainder is walked
    in rank order and each admitted block brings the unkept part of its closure, all or
    nothing, so no kept block loses the binder of a referent it uses.  If the pinned set
    exceeds the budget, pinned non-roots are replaced by a binding table costing
    ``cost_fn(table.text)`` (default: whitespace tokens); if roots plus table still exceed
    it, ``ReferentEvictionError``.  ``binders`` overrides the newest-binder rule;
    ``referents`` is the prebuilt array form (``ReferentIndex``) for large stores.

    ``mode="fast"`` computes the dot products with fast-math (SIMD partial sums, FMA) and is
    not bit-identical to ``dsgc_ref``: scores move by about 1e-16 relative, so the result
    equals the exact mode's except where two scores differ by less than about 1e-9.
    """
    policy, selection, lambda_pi, tau, hops, decay, density_exponent = parameters(
        policy, selection, lambda_pi, tau, hops, decay, density_exponent
    )
    budget = check_budget(budget)
    mode = check_mode(mode)
    queries = _validate.query(query_emb)
    embs = _validate.embeddings("block_embs", block_embs, queries.shape[1])
    n = embs.shape[0]
    cost, total_cost = _validate.costs(costs, n)
    graph = as_graph(edges, n)
    pins = live is not None or uses is not None or binds is not None or referents is not None
    if 0 < n <= SMALL_N and queries.shape[0] == 1 and query_weights is None and order is None and not pins:
        return _retain_small(
            queries[0], embs, cost, graph, budget, policy, selection, lambda_pi, tau, hops, decay, density_exponent, mode
        )
    weights = _validate.query_weights(query_weights, queries.shape[0])
    seq = None if order is None else _validate.order(order, n)  # None: the input order
    if n == 0:
        return _empty(budget, policy, selection)

    a = similarity_rows(queries, embs, mode)
    similarity = mixture(a, weights, None)
    lam = 0.0 if policy == "no_graph" else lambda_pi
    if seq is None and hops == 1 and policy in WEIGHTED_POLICIES:
        relevance = mixture(a, weights, tau)
        support, scores, keep_reason = weighted_one_hop(relevance, graph, cost, lam, density_exponent)
    else:
        relevance, support = relevance_and_support(a, weights, tau, graph, hops, decay, seq)
        if policy == "similarity":
            scores = similarity
        elif policy == "recency":
            scores = np.arange(n, dtype=np.float64)  # the position in the tie order
            if seq is not None:
                scores[seq] = np.arange(n, dtype=np.float64)
        else:
            scores = np.empty(n, dtype=np.float64)
            scoring.combine(relevance, support, cost, lam, density_exponent, scores)
        keep_reason = kept_reasons(policy, relevance, support, lam)

    ranking = None
    mask = np.zeros(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    pinned = np.empty(0, dtype=np.int64)
    table = None
    if not pins:
        used = selection_kernels.select_budgeted(
            scores,
            seq,
            cost,
            min(budget, total_cost),
            selection == "prefix",
            keep_reason,
            np.int8(Reason.SKIPPED_NO_FIT),
            np.int8(Reason.EVICTED_CUTOFF),
            row_parts(n),
            mask,
            reasons,
        )
    else:
        index = as_index(n, uses, binds, referents, seq, binders)
        roots = np.unique(_validate.indices("live", live, n))
        pinned_mask = closure(index, roots)
        pinned = np.flatnonzero(pinned_mask)
        excluded = np.zeros(n, dtype=np.bool_)
        reserved = 0
        if int(cost[pinned].sum()) > budget:
            table = table_for(index, pinned_mask, roots, cost_fn)
            root_cost = int(cost[roots].sum())
            if root_cost + table.cost > budget:
                raise ReferentEvictionError(
                    f"pinned blocks {pinned.tolist()} cost {int(cost[pinned].sum())} tokens (live roots "
                    f"{roots.tolist()}: {root_cost}); the binding table costs {table.cost}; budget {budget}: "
                    "evicting a pinned block would orphan a referent"
                )
            excluded[pinned] = True
            excluded[roots] = False
            reserved = table.cost
            mask[roots] = True
        else:
            mask[pinned] = True
        ranking = selection_kernels.rank(scores, np.arange(n, dtype=np.int64) if seq is None else seq)
        used = pin_kernels.select_units(
            ranking,
            cost,
            min(budget, total_cost + reserved),
            selection == "prefix",
            keep_reason,
            np.int8(Reason.SKIPPED_NO_FIT),
            np.int8(Reason.EVICTED_CUTOFF),
            np.int8(Reason.KEPT_CLOSURE),
            reserved,
            excluded,
            index.need_indptr,
            index.need_blocks,
            mask,
            reasons,
        )
        reasons[pinned] = np.where(mask[pinned], Reason.KEPT_PINNED, Reason.TABLED)
    return Retention(
        retained=np.flatnonzero(mask),
        mask=mask,
        scores=scores,
        relevance=relevance,
        propagated=support,
        similarity=similarity,
        reasons=reasons,
        used=int(used),
        budget=budget,
        policy=policy,
        selection=selection,
        pinned=pinned,
        binding_table=table,
        order=seq,
        _rank=ranking,
    )
