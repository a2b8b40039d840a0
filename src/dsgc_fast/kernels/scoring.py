"""Scoring kernels: dot products, softmax, query mixtures and score combination.

Each row-owned kernel has one body and two dispatchers (serial and ``parallel=True``);
``out[i]`` is written by exactly one iteration, so both give identical bits at any thread
count.  Scalar reductions (the softmax maximum and denominator) are sequential loops.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL


def _similarity_impl(embs, q, out):
    """out_i = sum_t q_t * e_{i,t}, left to right from 0.0, in float64 (embs may be float32)."""
    n, d = embs.shape
    for i in numba.prange(n):
        s = 0.0
        for t in range(d):
            s += q[t] * np.float64(embs[i, t])
        out[i] = s


similarity = numba.njit(_similarity_impl, **JIT)
similarity_par = numba.njit(_similarity_impl, **JIT_PARALLEL)


def _softmax_impl(a, tau, out):
    """out_i = exp((a_i - max a) / tau) / sum_k exp((a_k - max a) / tau); sum left to right."""
    n = a.shape[0]
    m = a[0]
    for i in range(1, n):
        if a[i] > m:
            m = a[i]
    for i in numba.prange(n):
        out[i] = math.exp((a[i] - m) / tau)
    s = 0.0
    for i in range(n):
        s += out[i]
    for i in numba.prange(n):
        out[i] = out[i] / s


softmax = numba.njit(_softmax_impl, **JIT)
softmax_par = numba.njit(_softmax_impl, **JIT_PARALLEL)


def _accumulate_impl(acc, w, x):
    """acc_i <- acc_i + w * x_i (one query's share of a mixture)."""
    for i in numba.prange(acc.shape[0]):
        acc[i] += w * x[i]


accumulate = numba.njit(_accumulate_impl, **JIT)
accumulate_par = numba.njit(_accumulate_impl, **JIT_PARALLEL)


def _combine_impl(r, pi, costs, lambda_pi, density_exponent, out):
    """out_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent (no division at 0)."""
    dens = density_exponent != 0.0
    for i in numba.prange(r.shape[0]):
        v = r[i] + lambda_pi * pi[i]
        if dens:
            v = v / np.float64(max(costs[i], 1)) ** density_exponent
        out[i] = v


combine = numba.njit(_combine_impl, **JIT)
combine_par = numba.njit(_combine_impl, **JIT_PARALLEL)
