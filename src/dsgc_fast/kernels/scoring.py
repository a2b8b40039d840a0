"""Scoring kernels: dot products, softmax, query mixtures and score combination.

The dot-product kernels have one body and two dispatchers (serial and ``parallel=True``);
``out[i]`` is written by exactly one iteration, so both give identical bits at any thread
count.  The cheap elementwise kernels are serial only (a parallel region costs more than
they do); scalar reductions (the softmax maximum and denominator) are sequential loops.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._config import JIT, JIT_FAST, JIT_FAST_PARALLEL, JIT_PARALLEL, cache_twin


#: rows whose dot products are interleaved (independent accumulation chains in flight)
_ROWS = 8
#: embedding columns per scratch tile (8 x 1024 float64 products: 64 KiB)
_TILE = 1024
#: rows per parallel task (each exact task owns one scratch tile)
_CHUNK = 4096


@numba.njit(**JIT)
def _dot8(embs, q, i, prod, out):
    """out[i:i+8] = their dot products with q: eight interleaved left-to-right sums."""
    d = embs.shape[1]
    tile = prod.shape[0] // 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for t0 in range(0, d, tile):
        w = min(tile, d - t0)
        qt = q[t0 : t0 + w]
        for r in range(8):
            row = embs[i + r, t0 : t0 + w]
            dst = prod[r * tile : r * tile + w]
            for k in range(w):
                dst[k] = qt[k] * np.float64(row[k])
        p0 = prod[0:w]
        p1 = prod[tile : tile + w]
        p2 = prod[2 * tile : 2 * tile + w]
        p3 = prod[3 * tile : 3 * tile + w]
        p4 = prod[4 * tile : 4 * tile + w]
        p5 = prod[5 * tile : 5 * tile + w]
        p6 = prod[6 * tile : 6 * tile + w]
        p7 = prod[7 * tile : 7 * tile + w]
        for k in range(w):
            s0 += p0[k]
            s1 += p1[k]
            s2 += p2[k]
            s3 += p3[k]
            s4 += p4[k]
            s5 += p5[k]
            s6 += p6[k]
            s7 += p7[k]
    out[i] = s0
    out[i + 1] = s1
    out[i + 2] = s2
    out[i + 3] = s3
    out[i + 4] = s4
    out[i + 5] = s5
    out[i + 6] = s6
    out[i + 7] = s7


@numba.njit(**JIT)
def _dot4(embs, q, i, prod, out):
    """out[i:i+4] = their dot products with q: four interleaved left-to-right sums."""
    d = embs.shape[1]
    tile = prod.shape[0] // 8
    s0 = s1 = s2 = s3 = 0.0
    for t0 in range(0, d, tile):
        w = min(tile, d - t0)
        qt = q[t0 : t0 + w]
        for r in range(4):
            row = embs[i + r, t0 : t0 + w]
            dst = prod[r * tile : r * tile + w]
            for k in range(w):
                dst[k] = qt[k] * np.float64(row[k])
        p0 = prod[0:w]
        p1 = prod[tile : tile + w]
        p2 = prod[2 * tile : 2 * tile + w]
        p3 = prod[3 * tile : 3 * tile + w]
        for k in range(w):
            s0 += p0[k]
            s1 += p1[k]
            s2 += p2[k]
            s3 += p3[k]
    out[i] = s0
    out[i + 1] = s1
    out[i + 2] = s2
    out[i + 3] = s3


def _similarity_impl(embs, q, out):
    """out_i = sum_t q_t * e_{i,t}, left to right from 0.0, in float64 (embs may be float32).

    A single left-to-right sum waits on each add before the next (a latency-bound chain),
    so rows are taken eight (then four) at a time: their products q_t * e_{i,t} (each
    rounded on its own, vectorized along t) go to a scratch tile, then the rows' sums
    advance together.  Every row keeps its own summation order, so the bits equal the
    one-row loop (and ``dsgc_ref``); a last ragged block overlaps the one before it (rows
    computed twice by the same arithmetic get the same bits).  Rows are owned by one task,
    so any thread count gives the same bits.
    """
    n, d = embs.shape
    tile = min(d, _TILE)
    for c in numba.prange((n + _CHUNK - 1) // _CHUNK):
        lo = c * _CHUNK
        hi = min(lo + _CHUNK, n)
        if hi - lo < 4:
            for j in range(lo, hi):
                s = 0.0
                for t in range(d):
                    s += q[t] * np.float64(embs[j, t])
                out[j] = s
        else:
            prod = np.empty(_ROWS * tile, dtype=np.float64)
            i = lo
            while hi - i >= _ROWS:
                _dot8(embs, q, i, prod, out)
                i += _ROWS
            if hi - i >= 4:
                _dot4(embs, q, i, prod, out)
                i += 4
            if i < hi:
                _dot4(embs, q, hi - 4, prod, out)


similarity = numba.njit(_similarity_impl, **JIT)
similarity_par = numba.njit(cache_twin(_similarity_impl, "_par"), **JIT_PARALLEL)


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
                s += q[t] * np.float64(embs[i, t])
            out[i] = s


similarity_fast = numba.njit(_similarity_fast_impl, **JIT_FAST)
similarity_fast_par = numba.njit(cache_twin(_similarity_fast_impl, "_par"), **JIT_FAST_PARALLEL)


@numba.njit(**JIT)
def softmax(a, tau, out):
    """out_i = exp((a_i - max a) / tau) / sum_k exp((a_k - max a) / tau); sum left to right.

    Serial on purpose: the sum must run left to right anyway, so it is fused with the
    exponentials into one pass, and a cheap elementwise pass is not worth waking threads.
    """
    n = a.shape[0]
    m = a[0]
    for i in range(1, n):
        if a[i] > m:
            m = a[i]
    s = 0.0
    for i in range(n):
        e = math.exp((a[i] - m) / tau)
        out[i] = e
        s += e
    for i in range(n):
        out[i] = out[i] / s


@numba.njit(**JIT)
def accumulate(acc, w, x):
    """acc_i <- acc_i + w * x_i (one query's share of a mixture)."""
    for i in range(acc.shape[0]):
        acc[i] += w * x[i]


@numba.njit(**JIT)
def combine(r, pi, costs, lambda_pi, density_exponent, out):
    """out_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent (no division at 0).

    Serial: one cheap elementwise pass is not worth waking threads.
    """
    dens = density_exponent != 0.0
    for i in range(r.shape[0]):
        v = r[i] + lambda_pi * pi[i]
        if dens:
            v = v / np.float64(max(costs[i], 1)) ** density_exponent
        out[i] = v
