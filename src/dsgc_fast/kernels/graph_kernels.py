"""CSR construction from an edge list (helpers stay in this file for the cache).

A CSR of the relation row -> sorted distinct cols is built in three steps, one rule each:
``_bucket`` (a counting sort of the pairs by row, in input order within a row),
``_sort_unique`` (one row sorted, its distinct values moved to its front) and the
compaction of the rows' distinct values.  ``build_csr`` runs them in one serial call;
``row_distinct`` and ``gather_rows`` run the last two over row ranges on threads (a
``DependencyGraph`` of ``PARALLEL_MIN_N`` edges or more) and write the entries' rows and
columns in the narrow width the one-hop kernels read, so such a graph needs no second pass
for them.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL
from .propagation import balanced_rows


@numba.njit(**JIT)
def _bucket(n, rows, cols):
    """(start, idx): the pairs with row != col grouped by row (a counting sort, input order within a row).

    Row r's cols are ``idx[start[r]:start[r + 1]]``.
    """
    start = np.zeros(n + 1, dtype=np.int64)
    for e in range(rows.shape[0]):
        if rows[e] != cols[e]:
            start[rows[e] + 1] += 1
    for r in range(n):
        start[r + 1] += start[r]
    fill = start[:n].copy()
    idx = np.empty(start[n], dtype=np.int64)
    for e in range(rows.shape[0]):
        r = rows[e]
        if r != cols[e]:
            idx[fill[r]] = cols[e]
            fill[r] += 1
    return start, idx


@numba.njit(inline="always", **JIT)  # inlined: a call per row cost 2.6x the whole build at 1,000 blocks
def _sort_unique(seg):
    """Sort ``seg`` in place and move its distinct values, ascending, to its front; returns their count."""
    if seg.shape[0] <= 16:  # short rows (the common case): insertion sort, no call overhead
        for a in range(1, seg.shape[0]):
            v = seg[a]
            b = a
            while b > 0 and seg[b - 1] > v:
                seg[b] = seg[b - 1]
                b -= 1
            seg[b] = v
    else:
        seg.sort()
    w = 0
    prev = -1
    for k in range(seg.shape[0]):
        v = seg[k]
        if v != prev:
            seg[w] = v
            w += 1
            prev = v
    return w


@numba.njit(**JIT)
def build_csr(n, rows, cols):
    """CSR of the relation row -> sorted distinct cols, dropping pairs with row == col.

    Returns ``(indptr, indices)``: row r holds ``indices[indptr[r]:indptr[r+1]]``,
    strictly ascending.  Matches ``dsgc_ref.equations.dependents_lists`` when called with
    rows = prerequisites, cols = dependents.
    """
    start, idx = _bucket(n, rows, cols)
    indptr = np.zeros(n + 1, dtype=np.int64)
    w = 0
    for r in range(n):
        a = start[r]
        d = _sort_unique(idx[a : start[r + 1]])
        for k in range(d):  # forward: w <= a, so no value is overwritten before it is read
            idx[w + k] = idx[a + k]
        w += d
        indptr[r + 1] = w
    return indptr, idx[:w].copy()


@numba.njit(**JIT_PARALLEL)
def row_distinct(n, rows, cols, parts):
    """``_bucket``, then ``_sort_unique`` on every row over ``parts`` row ranges balanced by pairs.

    Returns ``(start, idx, indptr)``: row r's distinct cols, ascending, are
    ``idx[start[r]:start[r] + indptr[r + 1] - indptr[r]]`` and ``indptr`` is the final CSR's.
    """
    start, idx = _bucket(n, rows, cols)
    bounds = balanced_rows(start, parts)
    indptr = np.empty(n + 1, dtype=np.int64)
    indptr[0] = 0
    for p in numba.prange(parts):
        for r in range(bounds[p], bounds[p + 1]):
            indptr[r + 1] = _sort_unique(idx[start[r] : start[r + 1]])
    for r in range(n):
        indptr[r + 1] += indptr[r]
    return start, idx, indptr


@numba.njit(**JIT_PARALLEL)
def gather_rows(start, idx, indptr, parts, indices, entry_rows, entry_cols):
    """The CSR entries from ``row_distinct``'s output: ``indices`` (int64) and, in the width of
    the arrays given, each entry's row and column; over ``parts`` row ranges balanced by entries."""
    bounds = balanced_rows(indptr, parts)
    for p in numba.prange(parts):
        for r in range(bounds[p], bounds[p + 1]):
            a = start[r]
            for k in range(indptr[r], indptr[r + 1]):
                v = idx[a + k - indptr[r]]
                indices[k] = v
                entry_rows[k] = r
                entry_cols[k] = v


@numba.njit(**JIT)
def fill_edge_rows(indptr, out):
    """out[k] = the row of entry k: r for indptr[r] <= k < indptr[r + 1] (CSR -> COO rows)."""
    for r in range(indptr.shape[0] - 1):
        for k in range(indptr[r], indptr[r + 1]):
            out[k] = r


@numba.njit(**JIT)
def active_csr(slots, active, ptr, prerequisites, induced_ptr, induced_prerequisites, in_force):
    """The dependents CSR (``build_csr``) of the edges among the active blocks ``slots`` (ascending), in positions.

    Row ``slots[k]`` of the CSR ``ptr``/``prerequisites`` (declared) and of
    ``induced_ptr``/``induced_prerequisites`` (induced; an entry counts while ``in_force``)
    gives block k's prerequisite slots; an edge counts when its prerequisite is ``active``.
    The same CSR as ``build_csr`` over those edges as ``(prerequisite, dependent)`` positions.
    """
    n = slots.shape[0]
    count = 0
    for k in range(n):
        s = slots[k]
        count += ptr[s + 1] - ptr[s] + induced_ptr[s + 1] - induced_ptr[s]
    rows = np.empty(count, dtype=np.int64)
    cols = np.empty(count, dtype=np.int64)
    e = 0
    for k in range(n):
        s = slots[k]
        for t in range(ptr[s], ptr[s + 1]):
            p = prerequisites[t]
            if active[p]:
                rows[e] = np.searchsorted(slots, p)
                cols[e] = k
                e += 1
        for t in range(induced_ptr[s], induced_ptr[s + 1]):
            p = induced_prerequisites[t]
            if in_force[t] and active[p]:
                rows[e] = np.searchsorted(slots, p)
                cols[e] = k
                e += 1
    return build_csr(n, rows[:e], cols[:e])
