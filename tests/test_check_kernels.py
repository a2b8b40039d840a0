"""The input-check kernels agree with the NumPy reductions they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dsgc_fast.kernels import checks

from ._cases import examples

_floats = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 40)),
    elements=st.floats(allow_nan=True, allow_infinity=True, width=64),
)
_floats32 = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 4), st.integers(1, 40)),
    elements=st.floats(allow_nan=True, allow_infinity=True, width=32),
)
_costs = hnp.arrays(np.int64, st.integers(1, 60), elements=st.integers(-(2**62), 2**62))


@settings(max_examples=examples(2))
@given(_floats)
def test_all_finite_is_numpy_isfinite_all(x):
    """Serial, and on threads over 1, 3 and 64 column ranges (more ranges than columns too)."""
    want = bool(np.isfinite(x).all())
    assert checks.all_finite(x) == want
    for parts in (1, 3, 64):
        assert checks.all_finite_par(x, parts) == want


@settings(max_examples=examples(2))
@given(_floats32)
def test_widen_finite_is_astype_and_isfinite_all(x):
    out = np.full(x.shape, 7.0)
    assert checks.widen_finite(x, out) == bool(np.isfinite(x).all())
    assert out.tobytes() == x.astype(np.float64).tobytes()


@settings(max_examples=examples(2))
@given(_costs)
def test_cost_bounds_are_min_sign_max_and_sum(c):
    """Serial and on threads, over 1, 3 and 64 ranges (more ranges than entries too)."""
    for kernel in (checks.cost_bounds, checks.cost_bounds_par):
        for parts in (1, 3, 64):
            negative, top, total = kernel(c, parts)
            assert negative == bool(c.min() < 0)
            assert top == c.max()
            assert total == c.sum()
