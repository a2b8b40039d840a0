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


@numba.njit(**JIT)
def _count_rows(rows, cols, lo, hi, counts, discard):
    """counts[r + 1] += 1 for each pair with lo <= r < hi and r != col; the others add to
    counts[discard] (branch-free: a range's thread writes only its own rows and slot)."""
    for e in range(np.uint64(rows.shape[0])):  # unsigned: no negative-index wraparound
        r = rows[e]
        mine = (r >= lo) & (r < hi) & (r != cols[e])
        counts[r + 1 if mine else discard] += 1


@numba.njit(**JIT)
def _running_sum(counts, lo, hi):
    """counts[r + 1] <- counts[lo + 1] + ... + counts[r + 1] for lo <= r < hi; returns the total."""
    s = 0
    for r in range(np.uint64(lo), np.uint64(hi)):
        s += counts[r + 1]
        counts[r + 1] = s
    return s


@numba.njit(**JIT)
def _fill_rows(rows, cols, lo, hi, ends, base, discard, idx, kept):
    """Scatter the pairs of rows [lo, hi) into ``idx`` from ``base`` (row r ends at
    base + ends[r + 1]), then sort, deduplicate and compact each row in place; kept[r] =
    its distinct count.  Pairs of other rows go to idx[discard].  Returns the range's total."""
    fill = np.empty(hi - lo + 1, dtype=np.int64)
    fill[0] = base
    for r in range(lo, hi - 1):
        fill[r - lo + 1] = base + ends[r + 1]
    fill[hi - lo] = discard
    for e in range(np.uint64(rows.shape[0])):
        r = rows[e]
        mine = (r >= lo) & (r < hi) & (r != cols[e])
        k = r - lo if mine else hi - lo
        idx[fill[k]] = cols[e]
        fill[k] += mine
    w = base
    start = base
    for r in range(lo, hi):
        stop = base + ends[r + 1]
        count = _sort_unique(idx, start, stop)
        for j in range(count):
            idx[w + j] = idx[start + j]
        w += count
        kept[r] = count
        start = stop
    return w - base


@numba.njit(**JIT)
def _place_rows(idx, src, count, indices, w, kept, lo, hi, indptr):
    """Copy a range's ``count`` entries from idx[src:] to indices[w:] and write its indptr."""
    for j in range(count):
        indices[w + j] = idx[src + j]
    for r in range(lo, hi):
        w += kept[r]
        indptr[r + 1] = w


@numba.njit(**JIT_PARALLEL)
def build_csr_par(n, rows, cols, parts):
    """``build_csr`` on ``parts`` threads, each owning a range of rows (a counting sort by row).

    Every thread reads the whole edge list (sequentially) and keeps the pairs of its own
    rows, so its counts and scatter touch only its part of the arrays (better cache
    locality than one thread over all rows, and no atomics); it then sorts, deduplicates
    and compacts its rows in place, and the ranges are copied into place.  The per-range
    work lives in serial helpers.  Returns the same arrays as ``build_csr``.
    """
    counts = np.zeros(n + 1 + parts, dtype=np.int64)  # counts[r + 1]; n + 1 + p: part p's discard slot
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        _count_rows(rows, cols, lo, hi, counts, n + 1 + p)
    starts = np.zeros(parts + 1, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        starts[p + 1] = _running_sum(counts, lo, hi)
    for p in range(parts):
        starts[p + 1] += starts[p]
    idx = np.empty(starts[parts] + parts, dtype=np.int64)  # + one discard slot per part
    kept = np.empty(n, dtype=np.int64)
    totals = np.zeros(parts + 1, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        totals[p + 1] = _fill_rows(rows, cols, lo, hi, counts, starts[p], starts[parts] + p, idx, kept)
    for p in range(parts):
        totals[p + 1] += totals[p]
    indptr = np.empty(n + 1, dtype=np.int64)
    indptr[0] = 0
    indices = np.empty(totals[parts], dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _bounds(n, parts, p)
        _place_rows(idx, starts[p], totals[p + 1] - totals[p], indices, totals[p], kept, lo, hi, indptr)
    return indptr, indices


def _fill_edge_rows_impl(indptr, out):
    """out[k] = the row of entry k: r for indptr[r] <= k < indptr[r + 1] (CSR -> COO rows)."""
    for r in numba.prange(indptr.shape[0] - 1):
        for k in range(indptr[r], indptr[r + 1]):
            out[k] = r


fill_edge_rows = numba.njit(_fill_edge_rows_impl, **JIT)
fill_edge_rows_par = numba.njit(cache_twin(_fill_edge_rows_impl, "_par"), **JIT_PARALLEL)
