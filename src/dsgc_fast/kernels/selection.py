"""Ranking and budgeted greedy selection kernels."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


@numba.njit(**JIT)
def kept_code(r, pi, lambda_pi, by_support, by_relevance):
    """by_support if lambda_pi * pi > r else by_relevance (why a block is kept if admitted)."""
    return by_support if lambda_pi * pi > r else by_relevance


@numba.njit(**JIT)
def kept_codes(relevance, support, lambda_pi, by_support, by_relevance, out):
    """out_i = ``kept_code`` of block i."""
    for i in range(relevance.shape[0]):
        out[i] = kept_code(relevance[i], support[i], lambda_pi, by_support, by_relevance)


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


#: a round aims at this fraction of what is left, so that it usually fits whole
_UNDERSHOOT = 0.8
#: fewest candidates per round
_MIN_ROUND = 64
#: after this many rounds the remainder is ranked whole (bounds adversarial cost patterns)
_MAX_ROUNDS = 8
#: keys sampled to place a round's score threshold
_SAMPLE = 1024
#: the first round parks the blocks scoring below this many times what is left (see below)
_PARK_AIM = 4.0


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
def _threshold(scores, costs, act, m, rem, prefix, aim):
    """A score placing about ``aim`` times ``rem`` worth of eligible blocks at or above it.

    Eligible: every block under prefix, else those costing at most ``rem``.  Placed from
    an evenly strided sample of ``act[:m]`` (sample counts scaled by the stride), so the
    cost above it is only approximate; -inf (take everything) when the sample has fewer
    eligible blocks than one round's minimum.
    """
    stride = max(1, m // _SAMPLE)
    keys = np.empty((m + stride - 1) // stride, dtype=np.float64)
    size = 0
    total = 0
    for j in range(0, m, stride):
        i = act[j]
        if prefix or costs[i] <= rem:
            keys[size] = -scores[i]
            size += 1
            total += costs[i]
    if size == 0 or total == 0:
        return -np.inf
    k = max(_MIN_ROUND // stride, int(aim * rem * size / (total * stride)))
    if k >= size:
        return -np.inf
    return -np.partition(keys[:size], k)[k]


@numba.njit(**JIT)
def select_budgeted(scores, order, costs, budget, prefix, kept_reason, skipped_code, cutoff_code, mask, reasons):
    """``select(rank(scores, order), ...)`` on an all-False ``mask``, without ranking every block.

    The blocks scoring at or above any threshold (ties included) are a prefix of the
    ranking, and a prefix whose total cost fits is kept whole whatever its inner order.
    So the walk goes in rounds over the remaining blocks (kept in tie order), one pass each:

    - first_fit never keeps a block costing more than what is left, and what is left only
      shrinks, so such blocks are dropped (their reason stays "skipped");
    - the others split at a threshold placed from a sample of their scores and costs:
      a bulk round aims a little short of what is left and usually fits whole, so it is
      kept unsorted; when it does not fit, or little is left, the prefix (aimed a little
      past what is left) is sorted stably and walked exactly as ``select`` walks.

    The first round also parks the blocks scoring below a second threshold, aimed at
    ``_PARK_AIM`` times what is left: the following rounds pass over the band between the
    two thresholds only.  Parked blocks (all scoring below every block of the band) are not
    copied anywhere; only if the band runs out while something still fits are they
    collected again, in tie order, by one pass over ``order``.  So a typical walk reads every
    block once and writes only the band.

    The walk ends when what is left is below the cheapest block.  After ``_MAX_ROUNDS``
    rounds the remainder is ranked whole.  prefix stops at the first block that does not
    fit; the blocks not yet walked stay "cut off".  Returns the cost kept.
    """
    n = scores.shape[0]
    reasons[:] = cutoff_code if prefix else skipped_code
    act = np.empty(n, dtype=np.int64)  # the band: remaining blocks above the parking floor, in tie order
    cand = np.empty(n, dtype=np.int64)
    cheapest = costs.min() if n else 0
    floor = -np.inf  # blocks scoring below it are parked (first round only)
    m = n
    rem = budget
    for rounds in range(1, n + 1):
        if not prefix and rem < cheapest:  # nothing left can fit
            break
        src = order if rounds == 1 else act
        if m == 0:
            if floor == -np.inf:
                break
            for a in range(n):  # the band ran out: bring back the parked blocks
                i = order[a]
                if scores[i] < floor and (prefix or costs[i] <= rem):
                    act[m] = i
                    m += 1
            floor = -np.inf
            if m == 0:
                break
        if rounds > _MAX_ROUNDS:
            threshold = -np.inf
        else:
            threshold = _threshold(scores, costs, src, m, rem, prefix, _UNDERSHOOT)
        if rounds == 1 and threshold > -np.inf:
            floor = _threshold(scores, costs, src, m, rem, prefix, _PARK_AIM)
        count = 0
        cost = 0
        w = 0
        for a in range(m):
            i = src[a]
            if prefix or costs[i] <= rem:
                if scores[i] >= threshold:
                    cand[count] = i
                    count += 1
                    cost += costs[i]
                elif scores[i] >= floor:
                    act[w] = i
                    w += 1
        m = w
        if cost <= rem:
            for c in range(count):
                mask[cand[c]] = True
                reasons[cand[c]] = kept_reason[cand[c]]
            rem -= cost
            continue
        keys = np.empty(count, dtype=np.float64)
        for c in range(count):
            keys[c] = -scores[cand[c]]
        walk = _stable_order(keys)
        for j in range(count):
            i = cand[walk[j]]
            if costs[i] <= rem:
                rem -= costs[i]
                mask[i] = True
                reasons[i] = kept_reason[i]
            elif prefix:
                reasons[i] = skipped_code
                return budget - rem
    return budget - rem
