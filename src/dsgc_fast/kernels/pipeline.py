"""The whole retention of one store in one kernel call (single query, input tie order).

``retain`` uses it for small stores, where calling the stages one by one from Python
costs more than the arithmetic, and ``retain_batch`` runs it once per store.  It runs the
stage list of ``dsgc_fast.stages`` (similarity, relevance, support, ``rule_scores``,
``rule_kept``, then ranking and greedy selection) with the same serial kernels the stages
call, so it computes the same bits.  It calls kernels defined in other files, whose edits Numba's cache does not
notice: after editing them in a working tree, clear ``__pycache__``.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT
from .graph_kernels import fill_edge_rows
from .propagation import k_hop, one_hop
from .scoring import rule_scores, similarity, similarity_fast, softmax
from .selection import rank, rule_kept, select


@numba.njit(**JIT)
def retain_store(
    embs, q, costs, dep_indptr, dep_indices, budget,
    tau, lambda_pi, density_exponent, hops, decay, rule, prefix, fast, codes,
    sim, rel, pi, scores, ranking, mask, reasons,
):  # fmt: skip
    """Score, rank and select one store into the given output arrays; returns the cost kept.

    ``rule`` is SIMILARITY, WEIGHTED or RECENCY (the agent policy without working ages ranks
    as WEIGHTED; with them it takes the stage path).

    ``codes`` = (kept by support, kept by relevance, kept by recency, skipped, cut off) as
    int8 ``Reason`` codes; ``budget`` is already capped at the total cost; ``mask`` arrives
    all False.  ``ranking`` gets every index, best first (ties in input order).
    """
    n = costs.shape[0]
    if fast:
        similarity_fast(embs, q, sim)
    else:
        similarity(embs, q, sim)
    softmax(sim, tau, True, rel)
    if hops == 1:
        dep_rows = np.empty(dep_indices.shape[0], dtype=np.int64)  # the row of each CSR entry
        fill_edge_rows(dep_indptr, dep_rows)
        one_hop(dep_indptr, dep_indices, dep_rows, rel, 1, pi)
    else:
        k_hop(dep_indptr, dep_indices, rel, hops, decay, 1, pi)
    rule_scores(rule, sim, rel, pi, pi, costs, lambda_pi, density_exponent, None, scores)  # no rho: not AGENT
    kept = np.empty(n, dtype=np.int8)
    rule_kept(rule, rel, pi, pi, lambda_pi, codes, kept)
    ranking[:] = rank(scores, np.arange(n))
    return select(ranking, costs, budget, prefix, kept, codes[3], codes[4], mask, reasons)


@numba.njit(**JIT)
def retain_small(
    embs, q, costs, dep_indptr, dep_indices, budget,
    tau, lambda_pi, density_exponent, hops, decay, rule, prefix, fast, codes,
    out, ranking, kept, mask, reasons,
):  # fmt: skip
    """``retain_store`` for one call from Python, with the glue around it done here too.

    ``out`` rows receive (similarity, relevance, propagated, scores); ``budget`` is capped at
    the total cost here; ``kept[:count]`` receives the kept indices, ascending.  Returns
    ``(used, count, finite)``, ``finite`` False when a similarity is NaN or infinite (the
    caller raises; nothing here reads out of bounds on such values).
    """
    total = 0
    for i in range(costs.shape[0]):
        total += costs[i]
    used = retain_store(
        embs, q, costs, dep_indptr, dep_indices, min(budget, total),
        tau, lambda_pi, density_exponent, hops, decay, rule, prefix, fast, codes,
        out[0], out[1], out[2], out[3], ranking, mask, reasons,
    )  # fmt: skip
    finite = True
    for i in range(out.shape[1]):
        finite = finite and np.isfinite(out[0, i])
    count = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            kept[count] = i
            count += 1
    return used, count, finite
