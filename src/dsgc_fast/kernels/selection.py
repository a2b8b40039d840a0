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


#: a round's candidate count aims this far past the budget (from the mean remaining cost)
_OVERSHOOT = 1.25
#: fewest candidates per round
_MIN_ROUND = 64
#: after this many rounds the remainder is ranked whole (bounds adversarial cost patterns)
_MAX_ROUNDS = 8


@numba.njit(**JIT)
def _stable_order(keys):
    """Indices sorting ``keys`` ascending, ties in index order (as ``rank`` orders them)."""
    n = keys.shape[0]
    if n <= _INSERTION_MAX:
        idx = np.empty(n, dtype=np.int64)
        for p in range(n):
            j = p
            while j > 0 and keys[idx[j - 1]] > keys[p]:
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = p
        return idx
    return np.argsort(keys, kind="mergesort")


@numba.njit(**JIT)
def select_budgeted(scores, order, costs, budget, prefix, kept_reason, skipped_code, cutoff_code, mask, reasons):
    """``select(rank(scores, order), ...)`` on an all-False ``mask``, without ranking every block.

    Blocks are taken in rounds.  first_fit never keeps a block costing more than what is
    left, and what is left only shrinks, so before each round such blocks are marked
    skipped and dropped.  If the rest fits whole it is kept whole (order cannot matter).
    Otherwise the k best remaining blocks are found by a partial selection of the negated
    scores, with every block tied at the threshold included so a round is always a prefix
    of the remaining ranking; they are sorted stably and walked exactly as ``select``
    walks.  k aims a little past what is left (from the mean remaining cost), so a typical
    budget takes a few rounds over ever fewer blocks; after ``_MAX_ROUNDS`` the remainder
    is ranked whole.  prefix stops at the first block that does not fit and marks every
    block not yet walked cut off.  Returns the cost kept.
    """
    n = scores.shape[0]
    act = order.copy()  # the remaining blocks, in tie order
    m = n
    rem = budget
    rounds = 0
    while m > 0:
        total = 0
        w = 0
        for a in range(m):
            i = act[a]
            if prefix or costs[i] <= rem:
                act[w] = i
                w += 1
                total += costs[i]
            else:
                reasons[i] = skipped_code
        m = w
        if m == 0:
            break
        if total <= rem:
            for a in range(m):
                i = act[a]
                mask[i] = True
                reasons[i] = kept_reason[i]
            rem -= total
            break
        rounds += 1
        k = m if rounds > _MAX_ROUNDS else min(m, max(_MIN_ROUND, int(_OVERSHOOT * rem * m / total) + 1))
        keys = np.empty(m, dtype=np.float64)
        for a in range(m):
            keys[a] = -scores[act[a]]
        threshold = np.inf if k == m else np.partition(keys, k - 1)[k - 1]
        count = 0
        for a in range(m):
            if keys[a] <= threshold:
                count += 1
        cand = np.empty(count, dtype=np.int64)
        cand_keys = np.empty(count, dtype=np.float64)
        c = 0
        w = 0
        for a in range(m):
            if keys[a] <= threshold:
                cand[c] = act[a]
                cand_keys[c] = keys[a]
                c += 1
            else:
                act[w] = act[a]
                w += 1
        m = w
        walk = _stable_order(cand_keys)
        for j in range(count):
            i = cand[walk[j]]
            if costs[i] <= rem:
                rem -= costs[i]
                mask[i] = True
                reasons[i] = kept_reason[i]
            else:
                reasons[i] = skipped_code
                if prefix:
                    for jj in range(j + 1, count):
                        reasons[cand[walk[jj]]] = cutoff_code
                    for a in range(m):
                        reasons[act[a]] = cutoff_code
                    return budget - rem
    return budget - rem
