"""Input checks as single-pass kernels (``_validate`` raises; these only look).

A NumPy reduction costs about a microsecond of call overhead whatever its size, which is
most of a small store's validation; one kernel pass answers what several reductions did.
Both only read their argument and index within its shape, so they are safe on any values.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT, JIT_PARALLEL, cache_twin


@numba.njit(**JIT, fastmath={"reassoc"})
def _finite_columns(x, lo, hi):
    """True iff every x[i, j] with lo <= j < hi is finite: sum_ij x_ij * 0.0 == 0.

    x * 0.0 is +-0 for a finite x and NaN for NaN or +-inf, and no order of the sum loses
    a NaN, so ``reassoc`` (the only fast-math flag here; not nnan or ninf, which would let
    LLVM drop the product) may vectorize the sum: one branch-free pass.
    """
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no wraparound, so it vectorizes
            s += x[i, j] * 0.0
    return s == 0.0


@numba.njit(**JIT)
def all_finite(x):
    """True iff every entry of the 2-D float array ``x`` is finite (``_finite_columns``)."""
    return _finite_columns(x, 0, x.shape[1])


@numba.njit(**JIT_PARALLEL)
def all_finite_par(x, parts):
    """``all_finite`` over ``parts`` column ranges on threads (a yes/no answer: any split agrees)."""
    n = x.shape[1]
    finite = np.empty(parts, dtype=np.bool_)
    for p in numba.prange(parts):
        finite[p] = _finite_columns(x, n * p // parts, n * (p + 1) // parts)
    return finite.all()


@numba.njit(**JIT, fastmath={"reassoc"})
def widen_finite(x, out):
    """out <- x (a 2-D float32 or float64 array) as float64 (exact); True iff every entry is finite.

    One pass for the conversion and the check (``all_finite``'s sum of x_ij * 0.0).
    """
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = np.float64(x[i, j])
            out[i, j] = v
            s += v * 0.0
    return s == 0.0


@numba.njit(**JIT)
def _cost_bounds_range(c, lo, hi):
    """(min, max, sum) of c[lo:hi], lo < hi: integer reductions, branch-free, so LLVM vectorizes them."""
    low = c[lo]
    top = c[lo]
    total = 0
    for i in range(np.uint64(lo), np.uint64(hi)):
        v = c[i]
        low = min(low, v)
        top = max(top, v)
        total += v
    return low, top, total


def _cost_bounds_impl(c, parts):
    """(any c_i < 0, max_i c_i, sum_i c_i) of a non-empty int64 vector, over ``parts`` ranges.

    Integer minimum, maximum and sum: exact in any order, so the parallel twin (ranges on
    threads) gives the serial answer.  The sum wraps around on overflow; callers use it only
    once the maximum bounds it.
    """
    n = c.shape[0]
    parts = max(1, min(parts, n))
    bounds = np.empty((parts, 3), dtype=np.int64)
    for p in numba.prange(parts):
        low, top, total = _cost_bounds_range(c, n * p // parts, n * (p + 1) // parts)
        bounds[p, 0] = low
        bounds[p, 1] = top
        bounds[p, 2] = total
    low, top, total = bounds[0, 0], bounds[0, 1], bounds[0, 2]
    for p in range(1, parts):
        low = min(low, bounds[p, 0])
        top = max(top, bounds[p, 1])
        total += bounds[p, 2]
    return low < 0, top, total


cost_bounds = numba.njit(_cost_bounds_impl, **JIT)
cost_bounds_par = numba.njit(cache_twin(_cost_bounds_impl, "_par"), **JIT_PARALLEL)


#: words compared between two early-exit checks of ``same_words``
_SPAN = 4096


@numba.njit(**JIT)
def _equal_from(a, b, lo, hi):
    """True iff a[lo:hi] == b[lo:hi]: the XOR of each span ORed branch-free, then tested.

    Unsigned indices spare Numba's negative-index wraparound, which keeps LLVM from
    vectorizing a loop that does not start at 0.
    """
    for start in range(lo, hi, _SPAN):
        acc = np.uint64(0)
        for k in range(np.uint64(start), np.uint64(min(start + _SPAN, hi))):
            acc |= a[k] ^ b[k]
        if acc != 0:
            return False
    return True


def _same_words_impl(a, b, parts):
    """True iff the uint64 vectors ``a`` and ``b`` (one length) are equal, in ``parts`` ranges.

    Each part compares its range span by span and stops at the first span that differs; the
    parallel twin takes the parts on threads.
    """
    equal = np.ones(parts, dtype=np.bool_)
    n = a.shape[0]
    for p in numba.prange(parts):
        equal[p] = _equal_from(a, b, n * p // parts, n * (p + 1) // parts)
    return equal.all()


same_words = numba.njit(_same_words_impl, **JIT)
same_words_par = numba.njit(cache_twin(_same_words_impl, "_par"), **JIT_PARALLEL)
