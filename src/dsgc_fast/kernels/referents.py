"""The referent links of a set of blocks, gathered from a store's per-block CSRs (one kernel).

A store's own structure, not a retention stage: its from-scratch twin is
``ReferentIndex.from_lists`` over the blocks' uses and binds (``tests/test_store_gathers.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


@numba.njit(**JIT)
def _relabeled(ids, n_ids):
    """``np.unique(ids, return_inverse=True)`` for ids in [0, n_ids): by marking when the ids are
    dense (O(n_ids), at most 16 per id), else by sorting."""
    if ids.shape[0] * 16 < n_ids:
        touched = np.unique(ids)
        return touched, np.searchsorted(touched, ids)
    rank = np.zeros(n_ids, dtype=np.int64)
    for x in ids:
        rank[x] = 1
    count = 0
    for x in range(n_ids):
        if rank[x]:
            rank[x] = count
            count += 1
        else:
            rank[x] = -1
    touched = np.empty(count, dtype=np.int64)
    for x in range(n_ids):
        if rank[x] >= 0:
            touched[rank[x]] = x
    local = np.empty(ids.shape[0], dtype=np.int64)
    for k in range(ids.shape[0]):
        local[k] = rank[ids[k]]
    return touched, local


@numba.njit(**JIT)
def active_links(slots, use_ptr, use_refs, bind_ptr, bind_refs, n_ids):
    """The uses and binds of the blocks ``slots`` (ascending) with referent ids made local.

    ``use_ptr``/``use_refs`` and ``bind_ptr``/``bind_refs`` are CSRs of slot -> referent ids
    in [0, ``n_ids``).
    Returns ``(touched, use_indptr, use_ids, binder, binder_slot)``: the referent ids the
    blocks use or bind, ascending (local id k is ``touched[k]``); the CSR of position -> local
    ids used; each local referent's newest binder among the blocks (its largest position, -1:
    none), and that binder's slot (-1: none).
    """
    n = slots.shape[0]
    use_indptr = np.zeros(n + 1, dtype=np.int64)
    binds = 0
    for k in range(n):
        s = slots[k]
        use_indptr[k + 1] = use_indptr[k] + use_ptr[s + 1] - use_ptr[s]
        binds += bind_ptr[s + 1] - bind_ptr[s]
    uses = use_indptr[n]
    ids = np.empty(uses + binds, dtype=np.int64)
    owner = np.empty(binds, dtype=np.int64)
    b = 0
    for k in range(n):
        s = slots[k]
        start = use_indptr[k]
        for t in range(use_ptr[s], use_ptr[s + 1]):
            ids[start + t - use_ptr[s]] = use_refs[t]
        for t in range(bind_ptr[s], bind_ptr[s + 1]):
            ids[uses + b] = bind_refs[t]
            owner[b] = k
            b += 1
    touched, local = _relabeled(ids, n_ids)
    binder = np.full(touched.shape[0], -1, dtype=np.int64)
    for b in range(binds):
        j = local[uses + b]
        if owner[b] > binder[j]:
            binder[j] = owner[b]
    binder_slot = np.full(touched.shape[0], -1, dtype=np.int64)
    for j in range(touched.shape[0]):
        if binder[j] >= 0:
            binder_slot[j] = slots[binder[j]]
    return touched, use_indptr, local[:uses].copy(), binder, binder_slot
