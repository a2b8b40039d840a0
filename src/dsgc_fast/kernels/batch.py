"""Kernels of ``retain_batch``: many independent stores laid end to end, parallel over stores.

Store s owns rows ``offsets[s]:offsets[s+1]`` and edges ``edge_offsets[s]:edge_offsets[s+1]``
(indices local to the store).  Each store gets its dependents CSR built by ``build_csr`` and
is then decided by ``pipeline.retain_store``, the same sequence of kernels ``retain`` runs
on one store, so its outputs are bit-identical to ``retain`` on that store; a store is owned
by one task, so any thread count gives the same bits.  (Kernels from other files: see the
cache note in ``pipeline``.)
"""

from __future__ import annotations

import numba

from .._config import JIT, JIT_PARALLEL, cache_twin
from .graph_kernels import build_csr
from .pipeline import retain_store


def _retain_stores_impl(
    embs, queries, query_of, offsets, costs, dependent, prerequisite, edge_offsets, budgets,
    tau, lambda_pi, density_exponent, hops, decay, rule, selection, fast, codes,
    sim, rel, pi, scores, ranking, mask, reasons, used,
):  # fmt: skip
    """``retain_store`` on every store; ``ranking[lo:hi]`` holds local indices, ``used[s]`` the cost kept."""
    for s in numba.prange(offsets.shape[0] - 1):
        lo = offsets[s]
        hi = offsets[s + 1]
        if hi == lo:
            used[s] = 0
            continue
        e_lo = edge_offsets[s]
        e_hi = edge_offsets[s + 1]
        indptr, indices = build_csr(hi - lo, prerequisite[e_lo:e_hi], dependent[e_lo:e_hi])
        used[s] = retain_store(
            embs[lo:hi], queries[query_of[s]], costs[lo:hi], indptr, indices, budgets[s],
            tau, lambda_pi, density_exponent, hops, decay, rule, selection, fast, codes,
            sim[lo:hi], rel[lo:hi], pi[lo:hi], scores[lo:hi], ranking[lo:hi], mask[lo:hi], reasons[lo:hi],
        )  # fmt: skip


retain_stores = numba.njit(_retain_stores_impl, **JIT)
retain_stores_par = numba.njit(cache_twin(_retain_stores_impl, "_par"), **JIT_PARALLEL)
