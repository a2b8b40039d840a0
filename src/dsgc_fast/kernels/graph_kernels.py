"""CSR construction from an edge list, serial and parallel (helpers stay in this file for the cache).

Both builders give the canonical CSR of the relation row -> sorted distinct cols (pairs with
row == col dropped): a row's entries are fully determined by the edge set, so the serial
and the parallel builder, at any thread count, return identical arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL, cache_twin


@numba.njit(**JIT)
def _sort_unique(idx, lo, hi):
    """Sort ``idx[lo:hi]`` in place and move its distinct values to the front; returns their count.

    Short rows (the common case) take an insertion sort on indices, with no array view: a
    view per row would update the array's reference count, one atomic operation that
    threads working on one array contend for.
    """
    if hi - lo <= 16:
        for a in range(lo + 1, hi):
            v = idx[a]
            b = a
            while b > lo and idx[b - 1] > v:
                idx[b] = idx[b - 1]
                b -= 1
            idx[b] = v
    else:
        idx[lo:hi].sort()
    w = lo
    for k in range(lo, hi):
        if w == lo or idx[k] != idx[w - 1]:
            idx[w] = idx[k]
            w += 1
    return w - lo


@numba.njit(**JIT)
def build_csr(n, rows, cols):
    """CSR of the relation row -> sorted distinct cols, dropping pairs with row == col.

    Returns ``(indptr, indices)``: row r holds ``indices[indptr[r]:indptr[r+1]]``,
    strictly ascending.  Matches ``dsgc_ref.equations.dependents_lists`` when called with
    rows = prerequisites, cols = dependents.
    """
    counts = np.zeros(n + 1, dtype=np.int64)
    for e in range(rows.shape[0]):
        if rows[e] != cols[e]:
            counts[rows[e] + 1] += 1
    for r in range(n):
        counts[r + 1] += counts[r]
    fill = counts[:n].copy()
    idx = np.empty(counts[n], dtype=np.int64)
    for e in range(rows.shape[0]):
        r = rows[e]
        if r != cols[e]:
            idx[fill[r]] = cols[e]
            fill[r] += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    w = 0
    for r in range(n):
        lo = counts[r]
        kept = _sort_unique(idx, lo, counts[r + 1])
        for k in range(kept):
            idx[w + k] = idx[lo + k]
        w += kept
        indptr[r + 1] = w
    return indptr, idx[:w].copy()


@numba.njit(**JIT)
def _bounds(total, parts, p):
    """[lo, hi) of part p when ``total`` items are cut into ``parts`` near-equal ranges."""
    return total * p // parts, total * (p + 1) // parts


@numba.njit(**JIT_PARALLEL)
def build_csr_par(n, rows, cols, parts):
    """``build_csr`` on ``parts`` threads: a counting sort by row, then each row sorted and deduplicated.

    The edges are cut into ``parts`` ranges, each counting its pairs per row; a row's
    entries are laid out range by range, so the scatter needs no atomics.  Rows are cut into
    ``parts`` ranges for the prefix sums (integers: exact in any grouping), the sort and
    deduplication, and the compaction.  Six parallel regions in all (each one waits for the
    threads to wake).  Returns the same arrays as ``build_csr``.
    """
    m = rows.shape[0]
    counts = np.zeros((parts, n), dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(m, parts, p)
        for e in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wraparound
            if rows[e] != cols[e]:
                counts[p, rows[e]] += 1
    # per row: counts[p, r] becomes where part p's entries start within the row; the row
    # totals are summed per row range, then the ranges' sums give every row's start
    range_sums = np.zeros(parts + 1, dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        s = 0
        for r in range(np.uint64(lo), np.uint64(hi)):
            t = 0
            for k in range(parts):
                c = counts[k, r]
                counts[k, r] = t
                t += c
            starts[r + 1] = t
            s += t
        range_sums[p + 1] = s
    for p in range(parts):
        range_sums[p + 1] += range_sums[p]
    starts[0] = 0
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        s = range_sums[p]
        for r in range(np.uint64(lo), np.uint64(hi)):
            s += starts[r + 1]
            starts[r + 1] = s
    idx = np.empty(starts[n], dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(m, parts, p)
        for e in range(np.uint64(lo), np.uint64(hi)):
            r = rows[e]
            if r != cols[e]:
                idx[starts[r] + counts[p, r]] = cols[e]
                counts[p, r] += 1
    kept = np.empty(n, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        s = 0
        for r in range(np.uint64(lo), np.uint64(hi)):
            kept[r] = _sort_unique(idx, starts[r], starts[r + 1])
            s += kept[r]
        range_sums[p + 1] = s
    for p in range(parts):
        range_sums[p + 1] += range_sums[p]
    indptr = np.empty(n + 1, dtype=np.int64)
    indptr[0] = 0
    indices = np.empty(range_sums[parts], dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        w = range_sums[p]
        for r in range(np.uint64(lo), np.uint64(hi)):
            src = starts[r]
            for k in range(kept[r]):
                indices[w + k] = idx[src + k]
            w += kept[r]
            indptr[r + 1] = w
    return indptr, indices


def _fill_edge_rows_impl(indptr, out):
    """out[k] = the row of entry k: r for indptr[r] <= k < indptr[r + 1] (CSR -> COO rows)."""
    for r in numba.prange(indptr.shape[0] - 1):
        for k in range(indptr[r], indptr[r + 1]):
            out[k] = r


fill_edge_rows = numba.njit(_fill_edge_rows_impl, **JIT)
fill_edge_rows_par = numba.njit(cache_twin(_fill_edge_rows_impl, "_par"), **JIT_PARALLEL)
