"""The softmax kernel, serial and split over tasks, against ``dsgc_ref.equations.softmax`` bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.kernels import scoring
from dsgc_ref import equations

from ._cases import examples


@given(
    n=st.one_of(st.integers(1, 300), st.integers(4090, 13000)),  # one, or several maximum ranges
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1e-300, 1e-3, 1.0, 30.0, 1e300]),
    tau=st.sampled_from([1e-3, 0.25, 1.0, 7.0]),
)
@settings(max_examples=examples(2))
def test_softmax_equals_ref_serial_or_on_threads(n, seed, scale, tau):
    """The serial kernel and its parallel twin give the oracle's bits: the denominator stays
    one left-to-right sum."""
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(size=n), 2) * scale  # rounded: ties, including ties at the maximum
    want = np.array(equations.softmax(a.tolist(), tau), dtype=np.float64)
    for kernel in (scoring.softmax, scoring.softmax_par):
        out = np.full(n, np.nan)
        kernel(a, tau, out)
        assert out.tobytes() == want.tobytes()
