"""Closure kernels of referent pinning: pin closure and closure-aware budgeted selection.

A block u "needs" block b when u uses a referent x whose live binder is b: the CSR
``need_blocks[need_indptr[u]:need_indptr[u+1]]`` lists those blocks (int32 or int64).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT
from .selection import verdict


@numba.njit(**JIT)
def need_links(live_binder, use_indptr, use_ids):
    """The need CSR (int64): row u lists ``live_binder[x]`` for each referent x that u uses, in use order,
    leaving out the unbound ones (-1).  Returns ``(need_indptr, need_blocks)``."""
    n = use_indptr.shape[0] - 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    blocks = np.empty(use_ids.shape[0], dtype=np.int64)
    w = 0
    for u in range(n):
        for t in range(use_indptr[u], use_indptr[u + 1]):
            b = live_binder[use_ids[t]]
            if b >= 0:
                blocks[w] = b
                w += 1
        indptr[u + 1] = w
    return indptr, blocks[:w]


@numba.njit(**JIT)
def closure_mask(roots, need_indptr, need_blocks, mask):
    """Set mask[b] for every block reachable from ``roots`` through use -> live-binder links.

    Breadth first: the block taken next was found long before, so its reads do not wait on
    the block just scanned and the memory system serves several at once (a depth-first
    stack chains each read to the previous one).  Indices are unsigned in the loop, which
    spares Numba's negative-index wraparound (``roots`` and the CSR are validated).
    """
    n = mask.shape[0]
    queue = np.empty(n, dtype=need_blocks.dtype)
    tail = 0
    for r in roots:
        if not mask[r]:
            mask[r] = True
            queue[tail] = r
            tail += 1
    head = 0
    while head < tail:
        u = np.uint64(queue[head])
        head += 1
        for k in range(np.uint64(need_indptr[u]), np.uint64(need_indptr[u + np.uint64(1)])):
            b = np.uint64(need_blocks[k])
            if not mask[b]:
                mask[b] = True
                queue[np.uint64(tail)] = b
                tail += 1


@numba.njit(**JIT)
def select_units(
    ranking,
    costs,
    budget,
    selection,
    kept_reason,
    skipped_code,
    cutoff_code,
    closure_code,
    reserved,
    excluded,
    need_indptr,
    need_blocks,
    mask,
    reasons,
):
    """Closure-aware greedy walk: a candidate is admitted with the unkept part of its closure.

    Blocks already in ``mask`` (pinned) are charged first with ``reserved`` tokens (the
    binding table); ``excluded`` blocks (tabled) are neither candidates nor entered by a
    closure.  A unit's search stops as soon as its cost exceeds what is left, so a failing
    candidate costs at most the blocks that fit.  ``selection.verdict`` ends each candidate
    (the selection rule).  Returns the cost kept.
    """
    n = ranking.shape[0]
    used = reserved
    for i in range(n):
        if mask[i]:
            used += costs[i]
    stamp = np.full(n, -1, dtype=np.int64)
    unit = np.empty(n, dtype=np.int64)
    stopped = False
    for p in range(n):
        i = ranking[p]
        if mask[i] or excluded[i]:
            continue
        if stopped:
            reasons[i] = cutoff_code
            continue
        stamp[i] = p
        unit[0] = i
        size = 1
        head = 0
        cost = costs[i]
        fits = used + cost <= budget
        while fits and head < size:
            u = unit[head]
            head += 1
            for k in range(need_indptr[u], need_indptr[u + 1]):
                b = need_blocks[k]
                if mask[b] or excluded[b] or stamp[b] == p:
                    continue
                stamp[b] = p
                unit[size] = b
                size += 1
                cost += costs[b]
                if used + cost > budget:
                    fits = False
                    break
        if fits:
            used += cost
            for k in range(size):
                mask[unit[k]] = True
                reasons[unit[k]] = closure_code
        stopped = verdict(i, fits, selection, kept_reason, skipped_code, reasons)
    return used


@numba.njit(**JIT)
def select_pinned(
    ranking, costs, budget, selection, kept_reason, codes, pin_codes, reserved, excluded, need_indptr, need_blocks,
    pinned, mask, reasons,
):  # fmt: skip
    """``select_units`` from the preset ``mask``, then the reason of every ``pinned`` block: pinned if kept, else tabled.

    ``codes`` as in ``pipeline.retain_store`` (skipped at 3, cut off at 4); ``pin_codes`` =
    (kept by closure, kept pinned, tabled) as int8 ``Reason`` codes; ``budget`` is already
    capped at the total cost plus ``reserved``.  Returns the cost kept.
    """
    used = select_units(
        ranking, costs, budget, selection, kept_reason, codes[3], codes[4], pin_codes[0], reserved, excluded,
        need_indptr, need_blocks, mask, reasons,
    )  # fmt: skip
    for i in range(pinned.shape[0]):
        if pinned[i]:
            reasons[i] = pin_codes[1] if mask[i] else pin_codes[2]
    return used


@numba.njit(**JIT)
def closure_forest(sources, need_indptr, need_blocks, blocked, parent_block, parent_link):
    """Breadth-first walks from each of ``sources`` in turn through use -> live-binder links.

    A walk never enters a block that is ``blocked`` or already reached by an earlier walk, so
    the blocks reached form a forest: ``parent_block[b]`` is the block whose link reached b and
    ``parent_link[b]`` that link's index in ``need_blocks`` (both -1 for sources and blocks not
    reached; the arrays arrive filled with -1).  Returns the reached blocks, sources included,
    in discovery order.  O(blocks reached + their links).
    """
    n = blocked.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    tail = 0
    for s in sources:
        if seen[s] or blocked[s]:
            continue
        seen[s] = True
        order[tail] = s
        head = tail
        tail += 1
        while head < tail:
            u = order[head]
            head += 1
            for k in range(need_indptr[u], need_indptr[u + 1]):
                b = need_blocks[k]
                if seen[b] or blocked[b]:
                    continue
                seen[b] = True
                parent_block[b] = u
                parent_link[b] = k
                order[tail] = b
                tail += 1
    return order[:tail]


@numba.njit(**JIT)
def forest_depths(order, parent_block, depth, source):
    """depth[b] = depth[parent_block[b]] + 1 and source[b] = source[parent_block[b]] along ``order``.

    ``order`` is ``closure_forest``'s discovery order (every block after its parent); a
    source gets depth 0 and itself as source.  Blocks not in ``order`` keep what the arrays
    arrive with.  O(len(order)).
    """
    for b in order:
        p = parent_block[b]
        if p < 0:
            depth[b] = 0
            source[b] = b
        else:
            depth[b] = depth[p] + 1
            source[b] = source[p]
