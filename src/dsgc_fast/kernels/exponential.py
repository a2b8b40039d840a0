"""The softmax's exponential exp~(x), x <= 0, as ``dsgc_ref.contract`` defines it (EXP_*).

    y = max(x, EXP_FLOOR);  k = floor(y / ln 2 + 1/2);  r = (y - k ln2_hi) - k ln2_lo
    p = sum_{j=0..13} r^j / j!  (Horner's rule);  exp~(x) = (p * 2^k1) * 2^(k - k1), k1 = max(k, -1000)

Every step is one float64 operation rounded to nearest and nothing is fused (this module is
compiled without fast-math flags, and LLVM keeps an inlined callee's flags), so the bits are
``dsgc_ref.equations.exp_nonpositive``'s on any machine.  Unlike a call into libm, the body
has no branch and no call, so a loop over it vectorizes: about half the time of libm's
``exp`` per element on this machine's AVX2/AVX-512 units.  The powers of two are built from
their bits (``_power_of_two``): 2^k1 and 2^(k - k1) are normal floats, so the first product
is exact and the second rounds once, also where the result is subnormal.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from dsgc_ref.contract import EXP_FLOOR, EXP_INV_LN2, EXP_LN2_HI, EXP_LN2_LO, EXP_SPLIT, EXP_TAYLOR

from .._config import JIT

#: Horner's rule: the top coefficient 1/13!, then 1/12! ... 1/0! in turn
_TOP, _HORNER = EXP_TAYLOR[-1], EXP_TAYLOR[-2::-1]
#: the IEEE 754 exponent bias of float64, and where the exponent field starts
_BIAS, _EXPONENT_SHIFT = 1023, 52


@intrinsic
def _bits_as_float(typingctx, bits):
    """The float64 whose IEEE 754 bits are the int64 ``bits`` (a bit cast, no conversion)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@numba.njit(**JIT)
def _power_of_two(k):
    """2.0 ** k for an integer -1022 <= k <= 1023 (a normal float: its exponent field is k + 1023)."""
    return _bits_as_float((k + _BIAS) << _EXPONENT_SHIFT)


@numba.njit(**JIT)
def exp_nonpositive(x):
    """exp~(x) for x <= 0 (the module docstring); the same bits as ``dsgc_ref.equations.exp_nonpositive``."""
    y = max(x, EXP_FLOOR)
    kf = np.floor(y * EXP_INV_LN2 + 0.5)
    r = (y - kf * EXP_LN2_HI) - kf * EXP_LN2_LO
    p = _TOP
    for c in _HORNER:
        p = p * r + c
    k = np.int64(kf)
    k1 = k if k > EXP_SPLIT else np.int64(EXP_SPLIT)
    return (p * _power_of_two(k1)) * _power_of_two(k - k1)
