"""Ranking and budgeted greedy selection kernels."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL, cache_twin


@numba.njit(**JIT)
def kept_code(r, pi, lambda_pi, by_support, by_relevance):
    """by_support if lambda_pi * pi > r else by_relevance (why a block is kept if admitted)."""
    return by_support if lambda_pi * pi > r else by_relevance


@numba.njit(**JIT)
def kept_codes(relevance, support, lambda_pi, by_support, by_relevance, out):
    """out_i = ``kept_code`` of block i."""
    for i in range(relevance.shape[0]):
        out[i] = kept_code(relevance[i], support[i], lambda_pi, by_support, by_relevance)


@numba.njit(**JIT)
def rule_kept(rule, relevance, support, working, lambda_pi, codes, out):
    """out_i = the reason block i gets if the ranking admits it.

    ``codes`` = (kept by support, kept by relevance, kept by recency, skipped, cut off, kept
    by working-set support) as int8 ``Reason`` codes.  RECENCY (rule 2): recency; AGENT
    (rule 3): support if lambda_pi * (pi_i + rho_i) > r_i (working-set support if
    rho_i > pi_i), else relevance; otherwise ``kept_code``.  ``working`` is read by AGENT only.
    """
    if rule == 2:
        for i in range(out.shape[0]):
            out[i] = codes[2]
    elif rule == 3:
        for i in range(out.shape[0]):
            if lambda_pi * (support[i] + working[i]) > relevance[i]:
                out[i] = codes[5] if working[i] > support[i] else codes[0]
            else:
                out[i] = codes[1]
    else:
        kept_codes(relevance, support, lambda_pi, codes[0], codes[1], out)


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


#: the code of ``"prefix"`` in ``stages.SELECTION_CODES`` (the one rule that stops the walk)
PREFIX = 1


@numba.njit(**JIT)
def stops(selection):
    """Whether the walk stops at the first candidate that does not fit: the selection rule.

    ``selection`` is a ``stages.SELECTION_CODES`` code: first_fit skips the candidate and goes
    on, prefix stops there (every later candidate is cut off).
    """
    return selection == PREFIX


@numba.njit(**JIT)
def verdict(i, fits, selection, kept_reason, skipped_code, reasons):
    """The walk's tail for candidate ``i`` (its unit already charged and marked if it ``fits``).

    reasons_i = kept_reason_i if it fits, else ``skipped_code``; returns whether the walk stops
    here (``stops(selection)`` and it does not fit).  Shared by ``select`` and
    ``closure.select_units``.
    """
    if fits:
        reasons[i] = kept_reason[i]
        return False
    reasons[i] = skipped_code
    return stops(selection)


@numba.njit(**JIT)
def select(ranking, costs, budget, selection, kept_reason, skipped_code, cutoff_code, mask, reasons):
    """Walk ``ranking``; keep a block if used + c_i <= budget.

    ``mask`` may arrive with blocks already kept (pinned, charged before the walk); they
    are passed over.  A block that does not fit is skipped; ``verdict`` says whether the walk
    stops there (prefix), marking the rest with ``cutoff_code``.  Returns the cost kept.
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
            continue
        fits = used + costs[i] <= budget
        if fits:
            used += costs[i]
            mask[i] = True
        stopped = verdict(i, fits, selection, kept_reason, skipped_code, reasons)
    return used


@numba.njit(**JIT)
def mask_positions(mask, lo, hi, out, start):
    """out[start:start + k] <- the k indices i in [lo, hi) where ``mask`` is True, ascending;
    returns start + k."""
    for i in range(np.uint64(lo), np.uint64(hi)):
        if mask[i]:
            out[start] = i
            start += 1
    return start


def _retained_impl(mask, parts):
    """The indices where ``mask`` is True, ascending (``np.flatnonzero``), over ``parts`` ranges.

    Each range counts its blocks, the counts give each range its place in the output, and
    each range writes its own indices there, so any split (and the parallel twin) gives the
    same array.
    """
    n = mask.shape[0]
    parts = max(1, min(parts, n))
    starts = np.zeros(parts + 1, dtype=np.int64)
    for p in numba.prange(parts):
        k = 0
        for i in range(np.uint64(n * p // parts), np.uint64(n * (p + 1) // parts)):  # unsigned: it vectorizes
            k += np.int64(mask[i])
        starts[p + 1] = k
    for p in range(parts):
        starts[p + 1] += starts[p]
    out = np.empty(starts[parts], dtype=np.int64)
    for p in numba.prange(parts):
        mask_positions(mask, n * p // parts, n * (p + 1) // parts, out, starts[p])
    return out


retained = numba.njit(_retained_impl, **JIT)
retained_par = numba.njit(cache_twin(_retained_impl, "_par"), **JIT_PARALLEL)


#: a round aims at this fraction of what is left, so that it usually fits whole
_UNDERSHOOT = 0.8
#: fewest candidates per round
_MIN_ROUND = 64
#: after this many rounds the remainder is ranked whole (bounds adversarial cost patterns)
_MAX_ROUNDS = 8
#: keys sampled to place a round's score threshold
_SAMPLE = 1024
#: the first round parks the blocks scoring below this many times what is left (see below)
_PARK_AIM = 2.0


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
def _at(seq, a):
    """seq[a], or a itself when ``seq`` is None (the identity order; Numba prunes the branch)."""
    if seq is None:
        return a
    return seq[a]


@numba.njit(**JIT)
def _sample(scores, costs, act, m, rem, prefix):
    """An evenly strided sample of the eligible blocks of ``act[:m]`` (``act`` None: blocks
    0..m-1): (their negated scores, their total cost, the stride).  Eligible: every block
    under prefix, else those costing at most ``rem``."""
    stride = max(1, m // _SAMPLE)
    keys = np.empty((m + stride - 1) // stride, dtype=np.float64)
    size = 0
    total = 0
    for j in range(0, m, stride):
        i = _at(act, j)
        if prefix or costs[i] <= rem:
            keys[size] = -scores[i]
            size += 1
            total += costs[i]
    return keys[:size], total, stride


@numba.njit(**JIT)
def _place(keys, total, stride, rem, aim):
    """A score placing about ``aim`` times ``rem`` worth of eligible blocks at or above it,
    from a ``_sample`` (counts scaled by the stride, so the cost above it is approximate);
    -inf (take everything) when the sample has fewer blocks than one round's minimum."""
    size = keys.shape[0]
    if size == 0 or total == 0:
        return -np.inf
    k = max(_MIN_ROUND // stride, int(aim * rem * size / (total * stride)))
    if k >= size:
        return -np.inf
    return -np.partition(keys, k)[k]


@numba.njit(**JIT)
def _sides(score, cost, rem, prefix, threshold, floor):
    """(to the candidates, to the band) for one block: eligible (every block under prefix,
    else those costing at most ``rem``) and at or above ``threshold``, or eligible and in
    [floor, threshold)."""
    fits = (cost <= rem) | prefix
    above = fits & (score >= threshold)
    return above, fits & (score >= floor) & ~above


@numba.njit(**JIT)
def _route(i, score, block_cost, rem, prefix, threshold, floor, cand, c, band, w):
    """One step of a pass (``_split_range``, ``_split_band``): block i, with its score and
    cost, written to cand[c] and to the band's three arrays at w; only the position of the
    side it belongs to (``_sides``) advances.  Returns (new c, the cost it adds to cand, new w).
    ``_split_band`` reads and writes the same band: w never passes the position it reads."""
    above, inside = _sides(score, block_cost, rem, prefix, threshold, floor)
    act, band_scores, band_costs = band
    cand[np.uint64(c)] = i
    act[np.uint64(w)] = i
    band_scores[np.uint64(w)] = score
    band_costs[np.uint64(w)] = block_cost
    return c + np.int64(above), block_cost * np.int64(above), w + np.int64(inside)


@numba.njit(**JIT)
def _split_range(scores, costs, src, lo, hi, rem, prefix, threshold, floor, cand, c, band, w):
    """The first round's pass over ``src[lo:hi]`` (None: blocks lo..hi-1), in tie order:
    eligible blocks at or above ``threshold`` are appended to ``cand`` from position ``c``,
    those in [floor, threshold) to the band from ``w`` (``_sides``).  ``band`` = (indices,
    scores, costs) side by side: a band block's score and cost are copied beside it while
    they are in cache.  Returns (new c, cost appended to cand, new w, the cheapest block of
    the range).

    Branch-free (each block is written to both arrays, and only the position of the one it
    belongs to advances): which side a block falls on is unpredictable, and a branch per
    block cost about twice as much.  Writes stay within cand[c:hi - lo + c] and the band's
    [w:...].  Indices are unsigned, which spares Numba's negative-index wraparound.
    """
    cost = 0
    cheapest = costs[_at(src, lo)]
    for a in range(np.uint64(lo), np.uint64(hi)):
        i = _at(src, a)
        u = np.uint64(i)
        block_cost = costs[u]
        c, added, w = _route(i, scores[u], block_cost, rem, prefix, threshold, floor, cand, c, band, w)
        cost += added
        cheapest = min(cheapest, block_cost)
    return c, cost, w, cheapest


def _split_parts_impl(scores, costs, src, bounds, rem, prefix, threshold, floor, cand, band, reasons, code, counts):
    """``_split_range`` over each (non-empty) range bounds[p]..bounds[p+1], into cand and the band from
    bounds[p]; counts[p] = (blocks to cand, their cost, blocks to the band, the cheapest
    block).  Each range also sets ``reasons`` of blocks bounds[p]..bounds[p+1]-1 to ``code``."""
    for p in numba.prange(bounds.shape[0] - 1):
        lo = bounds[p]
        hi = bounds[p + 1]
        reasons[lo:hi] = code
        c, cost, w, cheapest = _split_range(
            scores, costs, src, lo, hi, rem, prefix, threshold, floor, cand, lo, band, lo
        )
        counts[p, 0] = c - lo
        counts[p, 1] = cost
        counts[p, 2] = w - lo
        counts[p, 3] = cheapest


split_parts = numba.njit(_split_parts_impl, **JIT)
split_parts_par = numba.njit(cache_twin(_split_parts_impl, "_par"), **JIT_PARALLEL)


@numba.njit(**JIT)
def _split(scores, costs, src, m, rem, prefix, threshold, floor, cand, band, reasons, code, parts):
    """``_split_range`` over all of ``src[:m]`` (m >= 1) from position 0, ``reasons`` set to
    ``code``: (count, cost, kept in the band, the cheapest block).

    In ``parts`` contiguous ranges, on threads when ``parts`` > 1 (``split_parts_par`` writes
    each range's blocks from the range's start); the ranges are then moved to the front in
    order, so cand and the band hold the same blocks in the same order as one pass gives.
    The band's indices must not be ``src``.
    """
    parts = max(1, min(parts, m))
    bounds = np.empty(parts + 1, dtype=np.int64)
    for p in range(parts + 1):
        bounds[p] = p * m // parts
    counts = np.empty((parts, 4), dtype=np.int64)
    if parts == 1:
        split_parts(scores, costs, src, bounds, rem, prefix, threshold, floor, cand, band, reasons, code, counts)
        return counts[0, 0], counts[0, 1], counts[0, 2], counts[0, 3]
    split_parts_par(scores, costs, src, bounds, rem, prefix, threshold, floor, cand, band, reasons, code, counts)
    act, band_scores, band_costs = band
    count = 0
    cost = 0
    w = 0
    cheapest = counts[0, 3]
    for p in range(parts):
        lo = bounds[p]
        for k in range(counts[p, 0]):  # forward moves: each destination precedes its source
            cand[count + k] = cand[lo + k]
        for k in range(counts[p, 2]):
            act[w + k] = act[lo + k]
            band_scores[w + k] = band_scores[lo + k]
            band_costs[w + k] = band_costs[lo + k]
        count += counts[p, 0]
        cost += counts[p, 1]
        w += counts[p, 2]
        cheapest = min(cheapest, counts[p, 3])
    return count, cost, w, cheapest


@numba.njit(**JIT)
def _band_values(scores, costs, band, m):
    """(scores, costs) of the band's blocks ``band[:m]``, side by side with it."""
    band_scores = np.empty(m, dtype=np.float64)
    band_costs = np.empty(m, dtype=np.int64)
    for a in range(m):
        band_scores[a] = scores[band[a]]
        band_costs[a] = costs[band[a]]
    return band_scores, band_costs


@numba.njit(**JIT)
def _split_band(band, band_scores, band_costs, m, rem, prefix, threshold, cand):
    """A later round's pass over the band ``band[:m]``, whose scores and costs lie side by
    side with it: as ``_split_range`` (every block of the band is above the parking floor),
    the blocks that stay in the band moved to the front of the three arrays, in order.
    Returns (count, cost, blocks left in the band)."""
    c = 0
    w = 0
    cost = 0
    for a in range(np.uint64(m)):
        c, added, w = _route(
            band[a], band_scores[a], band_costs[a], rem, prefix, threshold, -np.inf, cand, c,
            (band, band_scores, band_costs), w,
        )  # fmt: skip
        cost += added
    return c, cost, w


@numba.njit(**JIT)
def select_budgeted(
    scores, order, costs, budget, selection, kept_reason, skipped_code, cutoff_code, parts, mask, reasons
):
    """``select(rank(scores, order), ...)`` on an all-False ``mask``, without ranking every block.

    ``order`` None is the input order (nothing to read).  ``parts`` > 1 runs the first
    round's pass (the only one over every block: it also sets every reason to skipped, or
    cut off under prefix, and finds the cheapest block) on threads, in that many ranges.

    The blocks scoring at or above any threshold (ties included) are a prefix of the
    ranking, and a prefix whose total cost fits is kept whole whatever its inner order.  So
    the walk goes in rounds over the remaining blocks (kept in tie order), one pass each:

    - first_fit never keeps a block costing more than what is left, and what is left only
      shrinks, so such blocks are dropped (their reason stays "skipped");
    - the others split at a threshold placed from a sample of their scores and costs:
      a bulk round aims a little short of what is left and usually fits whole, so it is
      kept unsorted; when it does not fit, or little is left, the prefix (aimed a little
      past what is left) is sorted stably and walked exactly as ``select`` walks.

    The first round also parks the blocks scoring below a second threshold, aimed at
    ``_PARK_AIM`` times what is left: the following rounds pass over the band between the
    two thresholds only, reading its scores and costs from copies the first pass writes
    beside it (a band spread thinly over the store would touch nearly every cache line of
    ``scores`` and ``costs`` in every round).  Parked blocks (all scoring below every block of the band) are not
    copied anywhere; only if the band runs out while something still fits are they
    collected again, in tie order, by one pass over ``order``.  So a typical walk reads every
    block once and writes only the band.

    The walk ends when what is left is below the cheapest block.  After ``_MAX_ROUNDS``
    rounds the remainder is ranked whole.  prefix stops at the first block that does not
    fit; the blocks not yet walked stay "cut off".  Returns the cost kept.
    """
    prefix = stops(selection)
    n = scores.shape[0]
    act = np.empty(n, dtype=np.int64)  # the band: remaining blocks above the parking floor, in tie order
    band_scores, band_costs = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.int64)  # beside it
    cand = np.empty(n, dtype=np.int64)
    cheapest = 0  # the cheapest block's cost, once the first round has seen every block
    floor = -np.inf  # blocks scoring below it are parked (first round only)
    stale = False  # whether band_scores and band_costs are still to be gathered for act[:m]
    m = n
    rem = budget
    for rounds in range(1, n + 1):
        if not prefix and rem < cheapest:  # nothing left can fit
            break
        if m == 0:
            if floor == -np.inf:
                break
            for a in range(n):  # the band ran out: bring back the parked blocks
                i = _at(order, a)
                if scores[i] < floor and (prefix or costs[i] <= rem):
                    act[m] = i
                    m += 1
            floor = -np.inf
            stale = True
            if m == 0:
                break
        if rounds == 1:
            keys, total, stride = _sample(scores, costs, order, m, rem, prefix)
            threshold = _place(keys, total, stride, rem, _UNDERSHOOT)
            if threshold > -np.inf:
                floor = _place(keys, total, stride, rem, _PARK_AIM)
            count, cost, m, cheapest = _split(
                scores, costs, order, m, rem, prefix, threshold, floor, cand, (act, band_scores, band_costs),
                reasons, cutoff_code if prefix else skipped_code, parts,
            )  # fmt: skip
        else:
            if stale:
                band_scores, band_costs = _band_values(scores, costs, act, m)
                stale = False
            threshold = -np.inf
            if rounds <= _MAX_ROUNDS:
                keys, total, stride = _sample(band_scores, band_costs, None, m, rem, prefix)
                threshold = _place(keys, total, stride, rem, _UNDERSHOOT)
            count, cost, m = _split_band(act, band_scores, band_costs, m, rem, prefix, threshold, cand)
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
