"""Input checks as single-pass kernels (``_validate`` raises; these only look).

A NumPy reduction costs about a microsecond of call overhead whatever its size, which is
most of a small store's validation; one kernel pass answers what several reductions did.
Both only read their argument and index within its shape, so they are safe on any values.
"""

from __future__ import annotations

import numba

from .._config import JIT


@numba.njit(**JIT, fastmath={"reassoc"})
def all_finite(x):
    """True iff every entry of the 2-D float array ``x`` is finite: sum_ij x_ij * 0.0 == 0.

    x * 0.0 is +-0 for a finite x and NaN for NaN or +-inf, and no order of the sum loses
    a NaN, so ``reassoc`` (the only fast-math flag here; not nnan or ninf, which would let
    LLVM drop the product) may vectorize the sum: one branch-free pass.
    """
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s += x[i, j] * 0.0
    return s == 0.0


@numba.njit(**JIT)
def cost_bounds(c):
    """(any c_i < 0, max_i c_i, sum_i c_i) of a non-empty int64 vector, in one pass.

    Integer minimum, maximum and sum, branch-free, so LLVM vectorizes the pass.  The sum
    wraps around on overflow; callers use it only once the maximum bounds it.
    """
    low = c[0]
    top = c[0]
    total = 0
    for i in range(c.shape[0]):
        v = c[i]
        low = min(low, v)
        top = max(top, v)
        total += v
    return low < 0, top, total
