"""``retain``: validated inputs -> the scoring stages -> one selection path -> ``Retention``.

Three paths, each one function, cut where the oracle cuts (``dsgc_ref.retain``):

* ``_fused_path``: a small store, one query, the input tie order and no pinning: every
  stage and the selection in one ``kernels.pipeline`` call (no Python between stages);
  given arrays already in the checked types (``_small_call``), it runs before any check
  in Python, and the kernel checks the values;
* ``_fused_pinned_path``: the same with pinning: the stages, the pin closure and the
  closure-aware walk in one ``kernels.pipeline`` call (a second kernel call when the pinned
  set escalates to a binding table);
* ``_ranked_path``: no pinning: the budgeted walk ranks only the blocks it has to;
* ``_pinned_path``: live roots or referents: the pinned set first (escalating to a binding
  table in ``pins.escalate``), then the closure-aware walk over the full ranking.
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import ParamOverrides, Params, Reason, check_budget

from . import _validate, stages
from ._deferred import deferred
from .graph import DependencyGraph, as_graph
from .pins import ReferentIndex, as_index, closure, escalate
from .result import Retention

closure_kernels = deferred("dsgc_fast.kernels.closure")
pipeline = deferred("dsgc_fast.kernels.pipeline")
selection_kernels = deferred("dsgc_fast.kernels.selection")

#: stores up to this size with one query and the input tie order take ``_fused_path`` (no pinning) or
#: ``_fused_pinned_path``
SMALL_N = 2048
#: int8 reason codes of the pinned walk: kept by closure, kept pinned, tabled
PIN_CODES = np.array([Reason.KEPT_CLOSURE, Reason.KEPT_PINNED, Reason.TABLED], dtype=np.int8)
#: the dtypes of ``_fused_path``'s outputs, made once (a dtype object is cheaper to pass than a type)
_INT64, _BOOL, _INT8 = np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.int8)


def retain(
    query_emb: npt.ArrayLike,
    block_embs: npt.ArrayLike,
    costs: npt.ArrayLike,
    budget: int,
    *,
    params: Params | None = None,
    edges: npt.ArrayLike | DependencyGraph | None = None,
    order: npt.ArrayLike | None = None,
    query_weights: npt.ArrayLike | None = None,
    live: npt.ArrayLike | None = None,
    uses: Any = None,
    binds: Any = None,
    binders: Any = None,
    referents: ReferentIndex | None = None,
    cost_fn: Any = None,
    ages: npt.ArrayLike | None = None,
    mode: str = "exact",
    **overrides: Unpack[ParamOverrides],
) -> Retention:
    """Decide which blocks survive a token budget (see DESIGN.md, "The retention contract").

    Parameters
    ----------
    query_emb : array_like, (d,) or (m, d)
        The query, or m queries mixed with ``query_weights`` (default uniform).
    block_embs : array_like (N, d), TiledEmbeddings or QuantizedEmbeddings
        Block embeddings: float16, float32 or float64 (other real dtypes become float64;
        float16 is read as float16 and scores as its exact float64 copy would), the same
        values tiled (``TiledEmbeddings.from_array``, same results, faster), or int8 codes
        with their scale map (``QuantizedEmbeddings``, scored by its own exact equation).
    costs : array_like, (N,)
        Non-negative integer token costs.
    budget : int
        Non-negative integer token budget (at most 2**63 - 1).
    params : Params, optional
        The scoring knobs (``policy``, ``selection``, ``lambda_pi``, ``tau``, ``hops``,
        ``decay``, ``density_exponent``); keyword ``overrides`` of the same names apply on top.
    edges : array_like (E, 2) or DependencyGraph, optional
        Pairs ``(dependent, prerequisite)``, or a prebuilt graph to reuse.
    order : array_like, optional
        The tie order, a permutation of range(N) (default: the input order); the last block
        in it is the newest.
    live, uses, binds, binders, referents, cost_fn
        Referent pinning: live root indices, the list form of referents (``uses[i]`` names,
        ``binds[i]`` referent -> value, ``binders`` overriding the newest-binder rule) or a
        prebuilt ``ReferentIndex``, and the cost of a binding table's text (default:
        whitespace tokens).
    ages : array_like of int, optional
        The agent policy's working ages u_i (0: none; 1: the newest working unit, 2 the one
        before, ...), in [0, N].  Only ``policy="agent"`` reads them.
    mode : {"exact", "fast"}
        "fast" computes dot products with fast-math (SIMD partial sums, FMA): scores move by
        about 1e-16 relative, so the result equals the exact one except where two scores
        differ by less than about 1e-9.  ``TiledEmbeddings`` and ``QuantizedEmbeddings``
        are scored exactly in both modes.

    Returns
    -------
    Retention
        Identical, bit for bit, to ``dsgc_ref.retain`` on float64 inputs in exact mode.

    Notes
    -----
    r = softmax(<q, e_i> / tau) (for m queries the weighted mixture of the per-query
    softmaxes), pi the propagated support (``hops``, ``decay``), and
    I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent.  Ranking is by
    descending score with ties in ``order``; ``selection`` is first_fit or prefix.

    With pinning, the live roots and their referent closure are kept and charged first;
    the rest is walked in rank order and each admitted block brings the unkept part of its
    closure, all or nothing, so no kept block loses the binder of a referent it uses.  If
    the pinned set exceeds the budget, the pinned non-roots are replaced by a binding table
    costing ``cost_fn(table.text)``; if roots plus table still exceed it,
    ``ReferentEvictionError``.

    The agent policy adds working-set support: rho_i = recency_decay^(u_i - 1) *
    working_weight / N (1/N: the mean relevance) for a block of working age u_i >= 1, and
    I_i = (r_i + lambda_pi * (pi_i + rho_i)) / max(c_i, 1) ** density_exponent.  Without ages
    it ranks exactly as dsgc.
    """
    p = Params.of(params, **overrides)
    plain = order is None and query_weights is None and ages is None and live is None and uses is None
    if plain and binds is None and referents is None:
        fused = _small_call(query_emb, block_embs, costs, budget, edges, p, mode)
        if fused is not None:
            return fused
    queries, embs, cost, total_cost, budget, mode = _checked(query_emb, block_embs, costs, budget, mode)
    n = embs.shape[0]
    graph = as_graph(edges, n)
    age = _validate.ages(ages, n, p.policy)
    weights = _weights(query_weights, queries)
    seq = None if order is None else _validate.order(order, n)  # None: the input order
    pins = None
    if live is not None or uses is not None or binds is not None or referents is not None:
        pins = as_index(n, uses, binds, referents, seq, binders), np.unique(_validate.indices("live", live, n))
    return _paths(queries, embs, cost, total_cost, budget, p, mode, graph, age, weights, seq, pins, cost_fn)


def retain_built(
    query_emb: npt.ArrayLike, block_embs: np.ndarray, costs: np.ndarray, budget: int, *, params: Params,
    graph: DependencyGraph, ages: np.ndarray | None, query_weights: npt.ArrayLike | None, mode: str,
    pins: tuple[ReferentIndex, np.ndarray] | None = None, cost_fn: Any = None,
) -> Retention:  # fmt: skip
    """``retain`` over arrays this package built and checked (``MemoryStore.compact``, ``select``): the same result.

    Trusted as built, and not checked again: ``graph``, the working ``ages`` (in [0, N], for
    the agent policy only) and ``pins`` (the referent index and the live roots, ascending and
    distinct, in range), None for no pinning.  The query, the embeddings against it, the
    costs, the budget, the mode and the query weights are checked as ``retain`` checks them.
    """
    queries, embs, cost, total_cost, budget, mode = _checked(query_emb, block_embs, costs, budget, mode)
    weights = _weights(query_weights, queries)
    return _paths(queries, embs, cost, total_cost, budget, params, mode, graph, ages, weights, None, pins, cost_fn)


def _small_call(
    query_emb: Any, block_embs: Any, costs: Any, budget: Any, edges: Any, p: Params, mode: Any
) -> Retention | None:
    """``retain`` of a small store given in the checked types, without converting anything: one
    ``_fused_path`` call (it checks the values), or None where ``_checked`` and the paths must run.

    Taken when ``_validate.canonical`` holds, ``mode`` is a mode (a str) and ``edges`` is None
    or a ``DependencyGraph`` over the store (nothing else that could raise); anything else,
    subclasses included, takes the checked path.
    """
    if not (
        type(mode) is str
        and mode in stages.MODES
        and _validate.canonical(query_emb, block_embs, costs, budget, SMALL_N)
    ):
        return None
    n = block_embs.shape[0]
    if edges is None:
        edges = as_graph(None, n)
    elif not (type(edges) is DependencyGraph and edges.n == n):
        return None
    return _fused_path(query_emb, block_embs, costs, edges, budget, p, mode)


def _checked(
    query_emb: Any, block_embs: Any, costs: Any, budget: Any, mode: Any
) -> tuple[np.ndarray, Any, np.ndarray, int, int, str]:
    """The inputs every entry checks: ``(queries, embs, cost, total cost, budget, mode)``."""
    budget = check_budget(budget)
    mode = stages.check_mode(mode)
    queries = _validate.query(query_emb)
    embs = _validate.block_embeddings(block_embs, queries.shape[1])
    cost, total_cost = _validate.costs(costs, embs.shape[0])
    return queries, embs, cost, total_cost, budget, mode


def _weights(query_weights: Any, queries: np.ndarray) -> np.ndarray | None:
    """The checked ``query_weights`` (None when not given)."""
    return None if query_weights is None else _validate.query_weights(query_weights, queries.shape[0])


def _paths(
    queries: np.ndarray, embs: Any, cost: np.ndarray, total_cost: int, budget: int, p: Params, mode: str,
    graph: DependencyGraph, age: np.ndarray | None, weights: np.ndarray | None, seq: np.ndarray | None,
    pins: tuple[ReferentIndex, np.ndarray] | None, cost_fn: Any,
) -> Retention:  # fmt: skip
    """The path of checked inputs (module docstring); ``weights`` None: not given (uniform); ``pins``: the
    referent index and the live roots, or None."""
    n = embs.shape[0]
    if 0 < n <= SMALL_N and isinstance(embs, np.ndarray) and queries.shape[0] == 1 and weights is None and seq is None:
        if pins is not None:
            return _fused_pinned_path(queries[0], embs, cost, total_cost, graph, budget, p, mode, age, *pins, cost_fn)
        fused = None if age is not None else _fused_path(queries[0], embs, cost, graph, budget, p, mode)
        if fused is not None:  # always, for inputs that passed the checks
            return fused
    if weights is None:
        weights = _validate.query_weights(None, queries.shape[0])
    if n == 0:
        return Retention.empty(budget, p.policy, p.selection)
    scored = stages.score(queries, embs, cost, graph, weights, seq, p, mode, age)
    if pins is None:
        return _ranked_path(scored, cost, total_cost, budget, seq, p)
    return _pinned_path(scored, cost, total_cost, budget, seq, p, *pins, cost_fn)


def _fused_path(
    q: np.ndarray, embs: np.ndarray, cost: np.ndarray, graph: DependencyGraph, budget: int, p: Params, mode: str
) -> Retention | None:
    """Every stage and the selection in one ``kernels.pipeline.retain_small`` call (same bits).

    The inputs have the checked types (``_validate.canonical``: ``q`` float32 or float64) and their
    values are checked in the kernel: None if the query is not finite or a cost is out of
    range (``_checked`` then says which), ValueError if a similarity is not finite.
    """
    n = embs.shape[0]
    out = np.zeros((5, n))  # similarity, relevance, propagated, scores; the working support (0: no ages)
    positions = np.empty((2, n), dtype=_INT64)
    mask = np.zeros(n, dtype=_BOOL)
    reasons = np.empty(n, dtype=_INT8)
    knobs, hops = stages.small_knobs(p, mode)
    outcome, used, count = pipeline.retain_small(
        stages.kernel_array(embs), q, cost, graph.dep_indptr, graph.dep_indices, budget, knobs, hops,
        stages.REASON_CODES, out, positions, mask, reasons,
    )  # fmt: skip
    if outcome != pipeline.DONE:
        if outcome == pipeline.UNCHECKED:
            return None
        stages.check_finite(out[0], embs)
    return Retention.made(out, positions, count, mask, reasons, used, budget, p.policy, p.selection)


def _fused_pinned_path(
    q: np.ndarray, embs: np.ndarray, cost: np.ndarray, total_cost: int, graph: DependencyGraph, budget: int,
    p: Params, mode: str, age: np.ndarray | None, index: ReferentIndex, roots: np.ndarray, cost_fn: Any,
) -> Retention:  # fmt: skip
    """``_pinned_path`` in one ``kernels.pipeline.retain_pinned_small`` call (same bits), and when the pinned
    set does not fit, ``escalate`` and one ``closure.select_pinned`` call."""
    n = embs.shape[0]
    out = np.empty((5, n), dtype=np.float64)
    flags = np.zeros((2, n), dtype=np.bool_)
    codes = np.empty((2, n), dtype=np.int8)
    positions = np.empty((3, n), dtype=np.int64)
    (pinned_mask, mask), (keep_reason, reasons), (ranking, kept, pinned) = flags, codes, positions
    rule = stages.score_rule(p.policy, age is not None)
    selection = stages.SELECTION_CODES[p.selection]
    used, count, n_pinned, finite = pipeline.retain_pinned_small(
        stages.kernel_array(embs), q, cost, graph.dep_indptr, graph.dep_indices, budget,
        p.tau, p.effective_lambda, p.density_exponent, p.hops, p.decay, rule, selection, mode == "fast",
        stages.REASON_CODES, PIN_CODES, cost if age is None else age, p.recency_decay, p.working_weight,
        roots, index.need_indptr, index.need_blocks, out, keep_reason, pinned_mask, mask, reasons, ranking, kept, pinned,
    )  # fmt: skip
    if not finite:
        stages.check_finite(out[0], embs)
    table = None
    if used < 0:
        used, table = _escalated_walk(
            index, cost, total_cost, pinned_mask, roots, budget, cost_fn, ranking, keep_reason, p, mask, reasons
        )
        kept = np.flatnonzero(mask)
        count = kept.shape[0]
    sim, rel, pi, working, scores = out
    return Retention(
        kept[:count], mask, scores, rel, pi, sim, reasons, int(used), budget, p.policy, p.selection, working=working,
        pinned=pinned[:n_pinned], binding_table=table, _rank=ranking,
    )  # fmt: skip


def _ranked_path(
    scored: stages.Scored, cost: np.ndarray, total_cost: int, budget: int, seq: np.ndarray | None, p: Params
) -> Retention:
    """No pinning: ``select_budgeted`` walks the ranking without ranking every block."""
    n = cost.shape[0]
    mask = np.zeros(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    used = selection_kernels.select_budgeted(
        scored.scores, seq, cost, min(budget, total_cost), stages.SELECTION_CODES[p.selection], scored.keep_reason,
        np.int8(Reason.SKIPPED_NO_FIT), np.int8(Reason.EVICTED_CUTOFF), stages.row_parts(n), mask, reasons,
    )  # fmt: skip
    return _result(scored, mask, reasons, used, budget, p, seq)


def _pinned_path(
    scored: stages.Scored, cost: np.ndarray, total_cost: int, budget: int, seq: np.ndarray | None, p: Params,
    index: ReferentIndex, roots: np.ndarray, cost_fn: Any,
) -> Retention:  # fmt: skip
    """The pinned set first (or the roots and a binding table), then the closure-aware walk."""
    n = cost.shape[0]
    pinned_mask = closure(index, roots)
    mask = np.empty(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    ranking = selection_kernels.rank(scored.scores, np.arange(n, dtype=np.int64) if seq is None else seq)
    used, table = _escalated_walk(
        index, cost, total_cost, pinned_mask, roots, budget, cost_fn, ranking, scored.keep_reason, p, mask, reasons
    )
    pinned = _indices(pinned_mask)
    return _result(scored, mask, reasons, used, budget, p, seq, pinned=pinned, table=table, ranking=ranking)


def _escalated_walk(
    index: ReferentIndex, cost: np.ndarray, total_cost: int, pinned_mask: np.ndarray, roots: np.ndarray,
    budget: int, cost_fn: Any, ranking: np.ndarray, keep_reason: np.ndarray, p: Params, mask: np.ndarray,
    reasons: np.ndarray,
) -> tuple[int, Any]:  # fmt: skip
    """``pins.escalate`` the pinned set to the budget, then ``closure.select_pinned`` from its preset ``mask``.

    Fills ``mask`` and ``reasons``; returns the cost kept and the binding table (None if the
    pinned set fits).
    """
    plan = escalate(index, cost, pinned_mask, roots, budget, cost_fn)
    mask[:] = plan.preset
    used = closure_kernels.select_pinned(
        ranking, cost, min(budget, total_cost + plan.reserved), stages.SELECTION_CODES[p.selection], keep_reason,
        stages.REASON_CODES, PIN_CODES, plan.reserved, plan.excluded, index.need_indptr, index.need_blocks,
        pinned_mask, mask, reasons,
    )  # fmt: skip
    return used, plan.table


def _indices(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)``, on threads for a large store (``selection.retained``)."""
    n = mask.shape[0]
    return stages.pick(n, selection_kernels.retained, selection_kernels.retained_par)(mask, stages.row_parts(n))


def _result(
    scored: stages.Scored, mask: np.ndarray, reasons: np.ndarray, used: int, budget: int, p: Params,
    seq: np.ndarray | None, *, pinned: np.ndarray | None = None, table: Any = None, ranking: np.ndarray | None = None,
) -> Retention:  # fmt: skip
    return Retention(
        retained=_indices(mask),
        mask=mask,
        scores=scored.scores,
        relevance=scored.relevance,
        propagated=scored.support,
        similarity=scored.similarity,
        working=scored.working,
        reasons=reasons,
        used=int(used),
        budget=budget,
        policy=p.policy,
        selection=p.selection,
        pinned=np.empty(0, dtype=np.int64) if pinned is None else pinned,
        binding_table=table,
        order=seq,
        _rank=ranking,
    )
