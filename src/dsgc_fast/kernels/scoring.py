"""Scoring kernels: dot products, softmax, query mixtures and score combination.

The dot-product and softmax kernels have one body and two dispatchers (serial and
``parallel=True``); ``out[i]`` is written by exactly one iteration, so both give identical
bits at any thread count.  The cheap elementwise kernels are serial only (a parallel region
costs more than they do); the softmax denominator is one sequential loop (its order is
the contract's) and the maximum is taken over ranges, on threads in the twin (any order
gives the same maximum).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_FAST, JIT_FAST_PARALLEL, JIT_PARALLEL, cache_twin
from .exponential import exp_nonpositive
from .rowdot import (
    LANES,
    TILE_ROWS,
    dot_rows8,
    dot_rows8_fused,
    dot_rows16,
    dot_rows16_fused,
    dot_tile,
    dot_tile_fused,
    significand_bits,
    widen,
)

#: rows per parallel task
_CHUNK = 4096

#: score rules of ``rule_scores``: by a, by (r + lambda_pi * pi) / c ** density, by position,
#: by (r + lambda_pi * (pi + rho)) / c ** density (the agent policy)
SIMILARITY, WEIGHTED, RECENCY, AGENT = 0, 1, 2, 3


@numba.njit(**JIT)
def products_exact(embs, q):
    """True when every product q_t * e_t is exact in float64 (so an FMA step is exact too).

    That is the case when every q_t is a float32 value and the elements are float32 or half
    bits (24 + 24 significant bits at most, magnitudes far from float64's limits; see
    ``rowdot``).  Embeddings of float64 are never fused.
    """
    if significand_bits(embs) > 24:
        return False
    widened = 0  # entries that are not float32 values, counted without an early exit: the loop vectorizes
    for t in range(q.shape[0]):
        widened += np.float64(np.float32(q[t])) != q[t]
    return widened == 0


@numba.njit(**JIT)
def _dot_row(embs, q, j):
    """sum_t q_t * e_{j,t}, left to right from 0.0, in float64 (one row, scalar)."""
    s = 0.0
    for t in range(embs.shape[1]):
        s += q[t] * widen(embs[j, t])
    return s


@numba.njit(**JIT)
def _rows(embs, q, i, count, fused, out):
    """out[i:i+count] for 8 <= count <= 16 in one ``rowdot`` pass, then each row's last d % 8 terms.

    One group of 8 rows, or two: from row i and ending at row i + count (overlapping the
    first when count < 16).
    """
    last = i + count - LANES
    if count > LANES:
        if fused:
            dot_rows16_fused(embs, q, i, last, out)
        else:
            dot_rows16(embs, q, i, last, out)
    elif fused:
        dot_rows8_fused(embs, q, i, i, out)
    else:
        dot_rows8(embs, q, i, i, out)
    d = embs.shape[1]
    for j in range(i, i + count):
        s = out[j]
        for t in range(d - d % LANES, d):
            s += q[t] * widen(embs[j, t])
        out[j] = s


def _similarity_impl(embs, q, out):
    """out_i = sum_t q_t * e_{i,t}, left to right from 0.0, in float64.

    ``embs`` is float64, float32 or float16 as its bits (uint16).  Rows go 16 at a time
    through ``rowdot`` (vector lanes are rows, so each row keeps its own summation order and
    the bits equal the one-row loop and ``dsgc_ref``), fused (one FMA per step) when
    ``products_exact``; the ragged last 8 to 16 rows take one pass whose last group of 8
    overlaps the one before (a row computed twice gets the same bits twice), and fewer than 8
    left after a block of 16 take the last 8 rows; a task of fewer than 8 rows runs the
    scalar loop.  Rows are owned by one task, so any thread count gives the same bits.
    """
    n = embs.shape[0]
    fused = products_exact(embs, q)
    for c in numba.prange((n + _CHUNK - 1) // _CHUNK):
        lo = c * _CHUNK
        hi = min(lo + _CHUNK, n)
        if hi - lo >= LANES:
            i = lo
            while hi - i > 16:
                _rows(embs, q, i, 16, fused, out)
                i += 16
            if hi - i < LANES:  # after a block of 16: the last 8 rows, overlapping it
                i = hi - LANES
            _rows(embs, q, i, hi - i, fused, out)
        else:
            for j in range(lo, hi):
                out[j] = _dot_row(embs, q, j)


similarity = numba.njit(_similarity_impl, **JIT)
similarity_par = numba.njit(cache_twin(_similarity_impl, "_par"), **JIT_PARALLEL)


def _similarity_tiles_impl(tiles, q, n, out):
    """out_i = sum_t q_t * e_{i,t} (as ``similarity``) for i < n, from the tiled layout.

    ``tiles`` (T, d, TILE_ROWS): tile k, column t holds rows k * TILE_ROWS + r side by side
    (padded with zero rows past n).  Each tile is one ``rowdot.dot_tile`` call, fused when
    ``products_exact``; the last, partial tile is summed into a scratch vector and its first
    rows copied.  Tiles are owned by one task, so any thread count gives the same bits.
    """
    fused = products_exact(tiles, q)
    full = n // TILE_ROWS
    per_task = _CHUNK // TILE_ROWS
    n_tiles = tiles.shape[0]
    for c in numba.prange((n_tiles + per_task - 1) // per_task):
        for k in range(c * per_task, min(c * per_task + per_task, n_tiles)):
            if k < full:
                if fused:
                    dot_tile_fused(tiles, q, k, out, k * TILE_ROWS)
                else:
                    dot_tile(tiles, q, k, out, k * TILE_ROWS)
            else:
                scratch = np.empty(TILE_ROWS, dtype=np.float64)
                if fused:
                    dot_tile_fused(tiles, q, k, scratch, 0)
                else:
                    dot_tile(tiles, q, k, scratch, 0)
                for r in range(n - k * TILE_ROWS):
                    out[k * TILE_ROWS + r] = scratch[r]


similarity_tiles = numba.njit(_similarity_tiles_impl, **JIT)
similarity_tiles_par = numba.njit(cache_twin(_similarity_tiles_impl, "_par"), **JIT_PARALLEL)


def _similarity_fast_impl(embs, q, out):
    """out_i = <q, e_i> in float64 with fast-math: SIMD partial sums and FMA (fast mode).

    Not bit-identical to the left-to-right sum: the reassociated float64 sum differs from
    it by a few units in the last place of sum_t |q_t e_{i,t}| (about 1e-16 relative).
    """
    n, d = embs.shape
    for c in numba.prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(c * _CHUNK + _CHUNK, n)):
            s = 0.0
            for t in range(d):
                s += q[t] * widen(embs[i, t])
            out[i] = s


similarity_fast = numba.njit(_similarity_fast_impl, **JIT_FAST)
similarity_fast_par = numba.njit(cache_twin(_similarity_fast_impl, "_par"), **JIT_FAST_PARALLEL)


@numba.njit(**JIT)
def maximum(a, lo, hi):
    """max of a[lo:hi] (lo < hi, no NaN), in eight interleaved running maxima.

    The maximum of a set does not depend on the order it is taken in, so eight independent
    comparison chains give the one-chain result twice as fast.  (A NaN is skipped by the
    comparisons, so the result may then differ from a left-to-right loop's; every caller
    rejects non-finite similarities.)
    """
    lanes = np.full(8, a[lo])
    body = hi - (hi - lo) % 8
    for i in range(lo, body, 8):
        for k in range(8):
            if a[i + k] > lanes[k]:
                lanes[k] = a[i + k]
    m = a[lo]
    for k in range(8):
        if lanes[k] > m:
            m = lanes[k]
    for i in range(body, hi):
        if a[i] > m:
            m = a[i]
    return m


def _softmax_impl(a, tau, out):
    """out_i = exp~((a_i - max a) / tau) / sum_k exp~((a_k - max a) / tau); sum left to right.

    The maximum is taken over ``_CHUNK`` ranges (``maximum``: any grouping gives the same
    maximum) and exp~ is the contract's exponential (``exponential.exp_nonpositive``): its
    loop has no call, so it vectorizes.  The denominator is one sequential loop after it
    (its order is the contract's) and the divisions are row-owned, so the serial kernel and
    its parallel twin (ranges, exponentials and divisions on threads) give the same bits.
    """
    n = a.shape[0]
    chunks = (n + _CHUNK - 1) // _CHUNK
    tops = np.empty(chunks, dtype=np.float64)
    for c in numba.prange(chunks):
        tops[c] = maximum(a, c * _CHUNK, min(n, c * _CHUNK + _CHUNK))
    m = maximum(tops, 0, chunks)
    for i in numba.prange(n):
        out[i] = exp_nonpositive((a[i] - m) / tau)
    s = 0.0
    for i in range(n):
        s += out[i]
    for i in numba.prange(n):
        out[i] = out[i] / s


softmax = numba.njit(_softmax_impl, **JIT)
softmax_par = numba.njit(cache_twin(_softmax_impl, "_par"), **JIT_PARALLEL)


@numba.njit(**JIT)
def accumulate(acc, w, x):
    """acc_i <- acc_i + w * x_i (one query's share of a mixture)."""
    for i in range(acc.shape[0]):
        acc[i] += w * x[i]


@numba.njit(**JIT)
def score_of(r, pi, cost, lambda_pi, density_exponent):
    """I = (r + lambda_pi * pi) / max(c, 1) ** density_exponent (no division at exponent 0)."""
    v = r + lambda_pi * pi
    if density_exponent != 0.0:
        v = v / np.float64(max(cost, 1)) ** density_exponent
    return v


@numba.njit(**JIT)
def combine(r, pi, costs, lambda_pi, density_exponent, out):
    """out_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent (``score_of``).

    Serial: one cheap elementwise pass is not worth waking threads.
    """
    for i in range(r.shape[0]):
        out[i] = score_of(r[i], pi[i], costs[i], lambda_pi, density_exponent)


@numba.njit(**JIT)
def rule_scores(rule, sim, rel, pi, rho, costs, lambda_pi, density_exponent, order, out):
    """The ranking score of every block under a score rule, into ``out``.

    SIMILARITY: I_i = a_i; WEIGHTED: I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** p
    (``combine``); RECENCY: I_i = the position of i in ``order`` (None: the input order), so
    the last block in the order is the newest and ranks first; AGENT: ``score_of`` with
    pi_i + rho_i as the support (``rho`` is read by AGENT only).
    """
    n = out.shape[0]
    if rule == SIMILARITY:
        for i in range(n):
            out[i] = sim[i]
    elif rule == RECENCY:
        if order is None:
            for i in range(n):
                out[i] = np.float64(i)
        else:
            for p in range(n):
                out[order[p]] = np.float64(p)
    elif rule == AGENT:
        for i in range(n):
            out[i] = score_of(rel[i], pi[i] + rho[i], costs[i], lambda_pi, density_exponent)
    else:
        combine(rel, pi, costs, lambda_pi, density_exponent, out)


@numba.njit(**JIT)
def working_support(ages, gamma, kappa, out):
    """out_i = gamma^(u_i - 1) * kappa / N for working age u_i >= 1, else 0.0 (N = len(ages)).

    1/N is the mean relevance.  The scale s = kappa / N is one division; the weights follow
    w_1 = 1.0, w_(u+1) = w_u * gamma (one multiplication per unit back) and out_i = w_(u_i) * s,
    as in ``dsgc_ref.equations.working_support``; ``ages`` is non-empty.
    """
    n = ages.shape[0]
    scale = kappa / np.float64(n)
    oldest = 0
    for i in range(n):
        oldest = max(oldest, ages[i])
    weights = np.empty(max(oldest, 1), dtype=np.float64)
    weights[0] = 1.0
    for u in range(1, oldest):
        weights[u] = weights[u - 1] * gamma
    for i in range(n):
        out[i] = weights[ages[i] - 1] * scale if ages[i] >= 1 else 0.0
