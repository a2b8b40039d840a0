"""CSR construction from an edge list (one kernel; helpers stay in this file for the cache)."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


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
        seg = idx[counts[r] : counts[r + 1]]
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
        prev = -1
        for k in range(seg.shape[0]):
            v = seg[k]
            if v != prev:
                idx[w] = v
                w += 1
                prev = v
        indptr[r + 1] = w
    return indptr, idx[:w].copy()


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
