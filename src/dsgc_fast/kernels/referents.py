"""The referent links of a set of blocks, gathered from a store's per-block CSRs (one kernel).

A store's own structure, not a retention stage: its from-scratch twin is
``ReferentIndex.from_lists`` over the blocks' uses and binds (``tests/test_store_gathers.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


@numba.njit(**JIT)
def active_links(slots, use_ptr, use_refs, bind_ptr, bind_refs):
    """The uses and binds of the blocks ``slots`` (ascending) with referent ids made local.

    ``use_ptr``/``use_refs`` and ``bind_ptr``/``bind_refs`` are CSRs of slot -> referent ids.
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
    touched = np.unique(ids)
    local = np.searchsorted(touched, ids)
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
