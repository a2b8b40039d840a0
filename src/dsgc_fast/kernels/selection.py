"""Ranking and budgeted greedy selection kernels."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


#: up to this many blocks an insertion sort beats mergesort's set-up (same stable result)
_INSERTION_MAX = 32


@numba.njit(**JIT)
def rank(scores, order):
    """All indices by descending score; ties keep their position in ``order``.

    A stable mergesort of the negated scores laid out in ``order`` sequence, mapped back.
    """
    n = scores.shape[0]
    keys = np.empty(n, dtype=np.float64)
    for p in range(n):
        keys[p] = -scores[order[p]]
    if n <= _INSERTION_MAX:
        idx = np.empty(n, dtype=np.int64)
        for p in range(n):  # stable insertion sort: only strictly larger keys move right
            j = p
            while j > 0 and keys[idx[j - 1]] > keys[p]:
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = p
    else:
        idx = np.argsort(keys, kind="mergesort")
    out = np.empty(n, dtype=np.int64)
    for p in range(n):
        out[p] = order[idx[p]]
    return out


@numba.njit(**JIT)
def select(ranking, costs, budget, prefix, kept_reason, skipped_code, cutoff_code, mask, reasons):
    """Walk ``ranking``; keep a block if used + c_i <= budget.

    ``mask`` may arrive with blocks already kept (pinned, charged before the walk); they
    are passed over.  first_fit (``prefix`` False) skips a block that does not fit and
    continues; prefix stops there and marks the rest with ``cutoff_code``.  Returns the
    cost kept.
    """
    used = 0
    n = ranking.shape[0]
    for i in range(n):
        if mask[i]:
            used += costs[i]
    stopped = False
    for p in range(n):
        i = ranking[p]
        if mask[i]:
            continue
        if stopped:
            reasons[i] = cutoff_code
        elif used + costs[i] <= budget:
            used += costs[i]
            mask[i] = True
            reasons[i] = kept_reason[i]
        else:
            reasons[i] = skipped_code
            if prefix:
                stopped = True
    return used
