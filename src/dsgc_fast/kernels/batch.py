"""Kernels of ``retain_batch``: many independent stores laid end to end, parallel over stores.

Store s owns rows ``offsets[s]:offsets[s+1]`` and edges ``edge_offsets[s]:edge_offsets[s+1]``
(indices local to the store).  Each store runs the very kernels ``retain`` runs on one store
(serial twins), so its outputs are bit-identical to ``retain`` on that store; a store is
owned by one task, so any thread count gives the same bits.

These kernels call kernels defined in other files, whose changes Numba's cache does not
notice: after editing ``scoring``, ``propagation``, ``selection`` or ``graph_kernels`` in a
working tree, clear ``__pycache__`` (an installed release replaces every file at once).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL, cache_twin
from .graph_kernels import build_csr
from .propagation import k_hop, one_hop
from .scoring import combine, similarity, similarity_fast, softmax
from .selection import rank, select

#: score rules of ``score_stores`` (``policy`` argument)
SIMILARITY, WEIGHTED, RECENCY = 0, 1, 2


def _score_stores_impl(
    embs, queries, query_of, offsets, costs, dependent, prerequisite, edge_offsets,
    tau, lambda_pi, density_exponent, hops, decay, policy, fast,
    sim, rel, pi, scores, ranking,
):  # fmt: skip
    """Per store: a_i, r = softmax(a / tau), pi (``hops``), the policy's score, local rank.

    ``policy``: SIMILARITY scores by a, WEIGHTED by (r + lambda_pi * pi) / c ** density,
    RECENCY by input position (newest last).  ``ranking[lo:hi]`` holds local indices.
    """
    for s in numba.prange(offsets.shape[0] - 1):
        lo = offsets[s]
        hi = offsets[s + 1]
        n = hi - lo
        if n == 0:
            continue
        a = sim[lo:hi]
        r = rel[lo:hi]
        p = pi[lo:hi]
        score = scores[lo:hi]
        if fast:
            similarity_fast(embs[lo:hi], queries[query_of[s]], a)
        else:
            similarity(embs[lo:hi], queries[query_of[s]], a)
        softmax(a, tau, r)
        e_lo = edge_offsets[s]
        e_hi = edge_offsets[s + 1]
        indptr, indices = build_csr(n, prerequisite[e_lo:e_hi], dependent[e_lo:e_hi])
        if hops == 1:
            one_hop(indptr, indices, r, p)
        else:
            k_hop(indptr, indices, r, hops, decay, 1, p)
        if policy == SIMILARITY:
            score[:] = a
        elif policy == RECENCY:
            for i in range(n):
                score[i] = np.float64(i)
        else:
            combine(r, p, costs[lo:hi], lambda_pi, density_exponent, score)
        ranking[lo:hi] = rank(score, np.arange(n))


score_stores = numba.njit(_score_stores_impl, **JIT)
score_stores_par = numba.njit(cache_twin(_score_stores_impl, "_par"), **JIT_PARALLEL)


def _select_stores_impl(ranking, costs, offsets, budgets, prefix, kept_reason, skipped_code, cutoff_code, mask, reasons, used):
    """Per store: the budgeted greedy walk of ``select`` over its local ranking."""
    for s in numba.prange(offsets.shape[0] - 1):
        lo = offsets[s]
        hi = offsets[s + 1]
        used[s] = select(
            ranking[lo:hi], costs[lo:hi], budgets[s], prefix, kept_reason[lo:hi],
            skipped_code, cutoff_code, mask[lo:hi], reasons[lo:hi],
        )  # fmt: skip


select_stores = numba.njit(_select_stores_impl, **JIT)
select_stores_par = numba.njit(cache_twin(_select_stores_impl, "_par"), **JIT_PARALLEL)
