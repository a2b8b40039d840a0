"""Propagation kernels over the dependents CSR (row i lists the blocks that depend on i).

The one-hop kernels walk the CSR entries in order with the row of each entry beside them
(``DependencyGraph.dep_rows``; the columns come as ``dep_cols``, int32 like the rows when n
fits, so the pass reads half the index bytes), over row ranges balanced by rows plus edges; ``PARTS`` ranges
per parallel call, taken by the threads (any split gives the same bits: rows are owned).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL, cache_twin
from .scoring import score_of
from .selection import kept_code

#: row ranges per parallel call of the one-hop kernels and the walk's first pass (serial: 1)
PARTS = 32


@numba.njit(**JIT)
def balanced_rows(indptr, parts):
    """``parts + 1`` row boundaries splitting rows + edges evenly: bounds[p] is the first row
    i with i + indptr[i] >= p * (n + E) / parts.

    Row i costs one write plus one read per listed edge; edges are skewed (old blocks have
    many dependents), so equal row counts would give one thread most of the edges.
    Ranges may be empty.
    """
    n = indptr.shape[0] - 1
    work = n + indptr[n]
    bounds = np.empty(parts + 1, dtype=np.int64)
    for p in range(parts + 1):
        goal = p * work // parts
        lo, hi = 0, n
        while lo < hi:  # first i with i + indptr[i] >= goal
            mid = (lo + hi) // 2
            if mid + indptr[mid] < goal:
                lo = mid + 1
            else:
                hi = mid
        bounds[p] = lo  # the last goal is n + E, first reached at i = n
    return bounds


@numba.njit(**JIT)
def part_sums(indptr, indices, rows, r, lo, hi, out):
    """out_i = sum_{j in row i} r_j (listed, ascending order, from 0.0) for lo <= i < hi.

    One pass over the rows' edges, ``rows[k]`` naming the row of edge k: the running sum
    restarts at 0.0 on each new row, so row i gets ((0.0 + r_j1) + r_j2) + ..., the bits of
    a per-row loop.  A per-row loop mispredicts its short, irregular trip counts (about a
    branch miss per row); here the restart is a select, so the pass has no data-dependent
    branch.  Indices are cast to unsigned, which spares Numba's negative-index wraparound
    (a third of the instructions).  Its speed is tracked in asv (`bench_kernels`, `time_one_hop`).
    """
    for i in range(np.uint64(lo), np.uint64(hi)):
        out[i] = 0.0
    s = 0.0
    prev = np.uint64(hi)  # no row of the range
    for k in range(np.uint64(indptr[lo]), np.uint64(indptr[hi])):
        i = np.uint64(rows[k])
        s = (s if i == prev else 0.0) + r[np.uint64(indices[k])]
        out[i] = s
        prev = i


def _one_hop_impl(indptr, indices, rows, r, parts, out):
    """out_i = sum_{j : (j, i) in E} r_j, j ascending, from 0.0 (``part_sums``).

    Row-owned, over ``parts`` ``balanced_rows`` ranges: the parallel twin splits them over
    threads and gives the serial bits.
    """
    bounds = balanced_rows(indptr, parts)
    for p in numba.prange(parts):
        part_sums(indptr, indices, rows, r, bounds[p], bounds[p + 1], out)


one_hop = numba.njit(_one_hop_impl, **JIT)
one_hop_par = numba.njit(cache_twin(_one_hop_impl, "_par"), **JIT_PARALLEL)


def _one_hop_scores_impl(
    indptr, indices, rows, r, costs, lambda_pi, density_exponent, by_support, by_relevance, parts, pi, scores, kept
):  # fmt: skip
    """pi_i (``one_hop``), I_i (``scoring.score_of``) and the kept-reason code
    (``selection.kept_code``) of every block, from r, one row range at a time.

    The same per-block arithmetic as ``one_hop``, ``combine`` and ``kept_codes`` run one
    after the other, so the same bits; fused so each range's pi is still in cache when its
    scores are formed, and the whole step is one parallel region.
    """
    bounds = balanced_rows(indptr, parts)
    for p in numba.prange(parts):
        lo = bounds[p]
        hi = bounds[p + 1]
        part_sums(indptr, indices, rows, r, lo, hi, pi)
        for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no wraparound, so it vectorizes
            scores[i] = score_of(r[i], pi[i], costs[i], lambda_pi, density_exponent)
            kept[i] = kept_code(r[i], pi[i], lambda_pi, by_support, by_relevance)


one_hop_scores = numba.njit(_one_hop_scores_impl, **JIT)
one_hop_scores_par = numba.njit(cache_twin(_one_hop_scores_impl, "_par"), **JIT_PARALLEL)


def _k_hop_impl(indptr, indices, r, hops, decay, n_chunks, out):
    """out_i = sum_{h=1..hops} decay^(h-1) * sum_{j at shortest distance h from i} r_j.

    A breadth-first search from every block i over "is depended on by" links.  Level h
    is sorted ascending before it is summed (so the order matches ``dsgc_ref``); each block
    is counted once at its shortest distance.  Blocks are split into ``n_chunks`` ranges,
    each with its own scratch (a visit stamp and a queue of length n): the result does not
    depend on the chunking.
    """
    n = r.shape[0]
    for c in numba.prange(n_chunks):
        lo = c * n // n_chunks
        hi = (c + 1) * n // n_chunks
        stamp = np.full(n, -1, dtype=np.int64)
        queue = np.empty(n, dtype=np.int64)
        for i in range(lo, hi):
            stamp[i] = i
            queue[0] = i
            start = 0
            end = 1
            w = 1.0
            pi = 0.0
            for _h in range(hops):
                tail = end
                for q in range(start, end):
                    u = queue[q]
                    for k in range(indptr[u], indptr[u + 1]):
                        j = indices[k]
                        if stamp[j] != i:
                            stamp[j] = i
                            queue[tail] = j
                            tail += 1
                if tail == end:
                    break
                queue[end:tail].sort()
                s = 0.0
                for q in range(end, tail):
                    s += r[queue[q]]
                pi += w * s
                w *= decay
                start = end
                end = tail
            out[i] = pi


k_hop = numba.njit(_k_hop_impl, **JIT)
k_hop_par = numba.njit(cache_twin(_k_hop_impl, "_par"), **JIT_PARALLEL)
