"""The contract's exponential exp~(x), x <= 0: the kernel against the oracle bit for bit, and both
within 1 ulp of the correctly rounded exp (``decimal`` at 50 digits)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.kernels import exponential
from dsgc_ref import contract, equations

from ._cases import examples

#: exponents where something changes: zero, the smallest magnitudes, the edge of the normal range
#: (ln 2**-1022), the last one that rounds up to the smallest subnormal (ln 2**-1075), EXP_FLOOR
EDGES = [0.0, -0.0, -5e-324, -1e-300, -1e-16, -0.34657359027997264, -0.3465735902799727, -1.0, -708.3964185322641,
         -708.3964185322642, -744.4400719213812, -745.1332191019411, -745.1332191019412, -745.14, -759.99, -760.0,
         -760.0000000000001, -1e4, -1e308, -1.7976931348623157e308]  # fmt: skip


@numba.njit
def _over(x, out):
    for i in range(x.shape[0]):  # the vectorized loop the softmax kernels compile
        out[i] = exponential.exp_nonpositive(x[i])


def _ulps(a: float, b: float) -> int:
    return abs(int(np.float64(a).view(np.int64)) - int(np.float64(b).view(np.int64)))


def _correctly_rounded(x: float) -> float:
    with localcontext() as ctx:
        ctx.prec = 50
        return float(Decimal(x).exp())


def _check(xs: list[float]) -> None:
    got = np.empty(len(xs))
    _over(np.array(xs, dtype=np.float64), got)
    for x, vector in zip(xs, got):
        want = equations.exp_nonpositive(x)
        assert np.float64(vector).tobytes() == np.float64(want).tobytes(), x
        assert np.float64(exponential.exp_nonpositive(x)).tobytes() == np.float64(want).tobytes(), x
        assert _ulps(want, _correctly_rounded(x)) <= 1, x


def test_the_edges_of_the_range() -> None:
    _check(EDGES)
    assert equations.exp_nonpositive(0.0) == 1.0
    assert equations.exp_nonpositive(-745.1332191019411) == 5e-324  # rounds up to the smallest subnormal
    assert equations.exp_nonpositive(-745.14) == 0.0
    assert equations.exp_nonpositive(-1e308) == 0.0


@given(st.lists(st.floats(max_value=0.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=40))
@settings(max_examples=examples(2))
def test_kernel_equals_oracle_and_is_within_one_ulp(xs: list[float]) -> None:
    _check(xs)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 760.0])
def test_dense_samples_within_one_ulp(scale: float) -> None:
    """Thousands of exponents per scale: the same bits both ways, at most 1 ulp from exp."""
    xs = (-np.random.default_rng(7).random(4000) * scale).tolist()
    _check(xs)


def test_the_constants_are_what_the_contract_says() -> None:
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        assert float(ln2 - Decimal(contract.EXP_LN2_HI)) == contract.EXP_LN2_LO
        assert float(1 / ln2) == contract.EXP_INV_LN2
    # ln2_hi's last 21 bits are zero, so k * ln2_hi is exact for every k the function forms
    assert int(np.float64(contract.EXP_LN2_HI).view(np.int64)) % 2**21 == 0
    k_low = math.floor(contract.EXP_FLOOR * contract.EXP_INV_LN2 + 0.5)
    assert math.ldexp(1.0, k_low - contract.EXP_SPLIT) > 2.0**-1022  # the second factor stays normal
    assert tuple(1.0 / math.factorial(j) for j in range(14)) == contract.EXP_TAYLOR
