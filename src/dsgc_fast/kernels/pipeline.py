"""The whole retention of one store in one kernel call (single query, input tie order).

``retain`` uses it for small stores, where calling the stages one by one from Python
costs more than the arithmetic, and ``retain_batch`` runs it once per store.  It runs the
stage list of ``dsgc_fast.stages`` (similarity, relevance, support, ``rule_scores``,
``rule_kept``, then ranking and greedy selection) with the same serial kernels the stages
call, so it computes the same bits.  ``retain_pinned_small`` is the same stage list with
referent pinning (the pin closure, then the closure-aware walk of ``closure.select_units``),
as ``engine``'s pinned path runs it.  It calls kernels defined in other files, whose edits Numba's cache does not
notice: after editing them in a working tree, clear ``__pycache__``.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT
from .._validate import INDEX_LIMIT
from .checks import all_finite, cost_bounds, widen_finite
from .closure import closure_mask, select_pinned
from .graph_kernels import fill_edge_rows
from .propagation import k_hop, one_hop
from .scoring import AGENT, rule_scores, similarity, similarity_fast, softmax, working_support
from .selection import mask_positions, rank, rule_kept, select


@numba.njit(**JIT)
def score_store(
    embs, q, costs, dep_indptr, dep_indices, tau, lambda_pi, density_exponent, hops, decay, rule, fast, codes,
    rho, sim, rel, pi, scores, kept,
):  # fmt: skip
    """Score one store into the given output arrays: a, r, pi, I and the kept-reason codes.

    The stages of ``stages.score`` for one query in the input order: ``similarity`` (or
    ``similarity_fast``), ``softmax``, ``one_hop`` (hops = 1) or ``k_hop``, ``rule_scores``
    and ``rule_kept``; ``rho`` is the working-set support, read by the AGENT rule only.
    ``codes`` as in ``retain_store``.
    """
    if fast:
        similarity_fast(embs, q, sim)
    else:
        similarity(embs, q, sim)
    softmax(sim, tau, rel)
    if hops == 1:
        dep_rows = np.empty(dep_indices.shape[0], dtype=np.int64)  # the row of each CSR entry
        fill_edge_rows(dep_indptr, dep_rows)
        one_hop(dep_indptr, dep_indices, dep_rows, rel, 1, pi)
    else:
        k_hop(dep_indptr, dep_indices, rel, hops, decay, 1, pi)
    rule_scores(rule, sim, rel, pi, rho, costs, lambda_pi, density_exponent, None, scores)
    rule_kept(rule, rel, pi, rho, lambda_pi, codes, kept)


@numba.njit(**JIT)
def retain_store(
    embs, q, costs, dep_indptr, dep_indices, budget,
    tau, lambda_pi, density_exponent, hops, decay, rule, selection, fast, codes,
    sim, rel, pi, scores, ranking, mask, reasons,
):  # fmt: skip
    """Score, rank and select one store into the given output arrays; returns the cost kept.

    ``rule`` is SIMILARITY, WEIGHTED or RECENCY (the agent policy without working ages ranks
    as WEIGHTED; with them it takes the stage path).

    ``codes`` = (kept by support, kept by relevance, kept by recency, skipped, cut off, kept
    by working-set support) as int8 ``Reason`` codes; ``budget`` is already capped at the
    total cost; ``mask`` arrives all False.  ``ranking`` gets every index, best first (ties
    in input order).
    """
    n = costs.shape[0]
    kept = np.empty(n, dtype=np.int8)
    # pi stands in for rho, which only the AGENT rule reads
    score_store(
        embs, q, costs, dep_indptr, dep_indices, tau, lambda_pi, density_exponent, hops, decay, rule, fast, codes,
        pi, sim, rel, pi, scores, kept,
    )  # fmt: skip
    ranking[:] = rank(scores, np.arange(n))
    return select(ranking, costs, budget, selection, kept, codes[3], codes[4], mask, reasons)


#: ``retain_small`` outcomes: done; a similarity is not finite; the query or the costs are out of range
DONE, NOT_FINITE, UNCHECKED = 0, 1, 2


@numba.njit(**JIT)
def retain_small(embs, q, costs, dep_indptr, dep_indices, budget, knobs, hops, codes, out, positions, mask, reasons):
    """``retain_store`` for one call from Python, with the checks of values and the glue around it.

    ``knobs`` = (tau, lambda_pi, density_exponent, decay, rule, selection, fast) as float64
    (``stages.small_knobs``: the last three are small integers), so that Python's call
    passes one array for seven scalars.  ``q`` is float32 or float64 (read as its exact
    float64 copy).  First the checks of values: if the query has a NaN or inf, or a cost is
    negative or above ``_validate.cost_limit(N)``, nothing else is done and the outcome is
    UNCHECKED (the caller's checks say why).  Then the budget is capped at the total cost
    and ``retain_store`` runs: ``out`` rows receive (similarity, relevance, propagated,
    scores), ``positions[0]`` every index best first and ``positions[1][:count]`` the kept
    indices, ascending.  Returns ``(outcome, used, count)``; NOT_FINITE when a similarity is
    NaN or infinite (the caller raises; nothing here reads out of bounds on such values).
    """
    negative, top, total = cost_bounds(costs, 1)
    q64 = np.empty((1, q.shape[0]))
    if negative or top > INDEX_LIMIT // max(costs.shape[0], 1) or not widen_finite(q.reshape((1, q.shape[0])), q64):
        return UNCHECKED, 0, 0
    tau, lambda_pi, density_exponent, decay = knobs[0], knobs[1], knobs[2], knobs[3]
    rule, selection, fast = np.int64(knobs[4]), np.int64(knobs[5]), knobs[6] != 0.0
    used = retain_store(
        embs, q64[0], costs, dep_indptr, dep_indices, min(budget, total),
        tau, lambda_pi, density_exponent, hops, decay, rule, selection, fast, codes,
        out[0], out[1], out[2], out[3], positions[0], mask, reasons,
    )  # fmt: skip
    count = mask_positions(mask, 0, mask.shape[0], positions[1], 0)
    return (DONE if all_finite(out[:1]) else NOT_FINITE), used, count


@numba.njit(**JIT)
def retain_pinned_small(
    embs, q, costs, dep_indptr, dep_indices, budget,
    tau, lambda_pi, density_exponent, hops, decay, rule, selection, fast, codes, pin_codes,
    ages, gamma, kappa, roots, need_indptr, need_blocks,
    out, kept_reason, pinned, mask, reasons, ranking, kept, pinned_list,
):  # fmt: skip
    """The pinned path of ``retain`` for one call from Python: score, pin closure, rank, closure-aware walk.

    ``out`` rows receive (similarity, relevance, propagated, working, scores); the AGENT
    rule reads the working ``ages`` (``scoring.working_support`` with ``gamma``, ``kappa``),
    the others leave the working row 0.0.  ``pinned`` (arriving all False) receives the
    closure of ``roots`` through the need CSR, ``pinned_list[:pinned count]`` its indices
    ascending, ``ranking`` every index best first (ties in input order).  ``budget`` is the
    caller's, uncapped.  If the pinned set costs at most the budget, it is kept first and
    ``closure.select_pinned`` walks the rest (``kept[:count]`` the kept indices, ascending);
    otherwise nothing is selected and ``used`` is -1: the caller escalates
    (``pins.escalate``) and calls ``select_pinned`` itself.  Returns ``(used, count,
    pinned count, finite)``, ``finite`` False when a similarity is NaN or infinite (the
    caller raises; nothing here reads out of bounds on such values).
    """
    n = costs.shape[0]
    rho = out[3]
    if rule == AGENT:
        working_support(ages, gamma, kappa, rho)
    else:
        rho[:] = 0.0
    score_store(
        embs, q, costs, dep_indptr, dep_indices, tau, lambda_pi, density_exponent, hops, decay, rule, fast, codes,
        rho, out[0], out[1], out[2], out[4], kept_reason,
    )  # fmt: skip
    finite = all_finite(out[:1])
    closure_mask(roots, need_indptr, need_blocks, pinned)
    total = 0
    pinned_cost = 0
    n_pinned = 0
    for i in range(n):
        total += costs[i]
        if pinned[i]:
            pinned_cost += costs[i]
            pinned_list[n_pinned] = i
            n_pinned += 1
    ranking[:] = rank(out[4], np.arange(n))
    if pinned_cost > budget:
        return -1, 0, n_pinned, finite
    mask[:] = pinned
    used = select_pinned(
        ranking, costs, min(budget, total), selection, kept_reason, codes, pin_codes, 0, np.zeros(n, dtype=np.bool_),
        need_indptr, need_blocks, pinned, mask, reasons,
    )  # fmt: skip
    return used, mask_positions(mask, 0, n, kept, 0), n_pinned, finite
