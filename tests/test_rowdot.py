"""The row-SIMD exact dot products equal the left-to-right scalar sum of ``dsgc_ref``."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.kernels import scoring
from dsgc_fast.kernels.rowdot import dot_rows16
from dsgc_ref.equations import dot

from ._cases import examples


@settings(max_examples=examples(1), deadline=None)
@given(
    n=st.integers(0, 70),
    d=st.integers(1, 41),
    dtype=st.sampled_from([np.float32, np.float64]),
    scale=st.sampled_from([1e-300, 1e-30, 1.0, 1e30, 1e150]),
    seed=st.integers(0, 2**32 - 1),
)
def test_similarity_is_the_left_to_right_sum_of_each_row(n, d, dtype, scale, seed):
    rng = np.random.default_rng(seed)
    embs = (rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=(n, 1)) * min(scale, 1e30)).astype(dtype)
    q = rng.normal(size=d) * (scale if dtype == np.float32 else 1.0)
    expected = [dot(q.tolist(), row) for row in embs.astype(np.float64).tolist()]
    for kernel in (scoring.similarity, scoring.similarity_par):
        out = np.full(n, np.nan)
        kernel(embs, q, out)
        assert out.tolist() == expected  # bit for bit


def test_large_matrix_rows_equal_the_scalar_row_loop():
    rng = np.random.default_rng(7)
    embs = (rng.normal(size=(9001, 389)) * rng.uniform(1e-3, 1e3, size=(9001, 1))).astype(np.float32)
    q = rng.normal(size=389)
    out = np.empty(9001)
    scoring.similarity_par(embs, q, out)
    expected = np.array([scoring._dot_row(embs, q, j) for j in range(9001)])
    assert np.array_equal(out, expected)


def test_the_intrinsic_refuses_arrays_that_are_not_c_contiguous():
    @numba.njit
    def call(embs, q, out):
        dot_rows16(embs, q, 0, out)

    embs = np.ones((16, 16), dtype=np.float32)[:, ::2]  # strided rows: lanes would read wrong columns
    with pytest.raises(numba.core.errors.TypingError):
        call(embs, np.ones(8), np.empty(16))
