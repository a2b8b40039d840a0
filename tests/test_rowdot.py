"""The row-SIMD exact dot products equal the left-to-right scalar sum of ``dsgc_ref``.

Every layout (row-major, tiled) and element type (float64, float32, float16 as its bits),
with float64 queries (two roundings per step) and float32-valued ones (one FMA per step).
"""

from __future__ import annotations

from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.kernels import scoring
from dsgc_fast.kernels.rowdot import TILE_ROWS, dot_rows16, dot_rows16_fused
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
        dot_rows16(embs, q, 0, 8, out)

    embs = np.ones((16, 16), dtype=np.float32)[:, ::2]  # strided rows: lanes would read wrong columns
    with pytest.raises(numba.core.errors.TypingError):
        call(embs, np.ones(8), np.empty(16))


def _tiles(x: np.ndarray) -> np.ndarray:
    """(N, d) -> (ceil(N / TILE_ROWS), d, TILE_ROWS), zero rows past N (``TiledEmbeddings``)."""
    n, d = x.shape
    k = -(-n // TILE_ROWS)
    padded = np.zeros((k * TILE_ROWS, d), dtype=x.dtype)
    padded[:n] = x
    return np.ascontiguousarray(padded.reshape(k, TILE_ROWS, d).transpose(0, 2, 1))


#: the largest magnitudes each type takes here (float16 up to its maximum, float32 far out)
_SCALES = {np.float16: [1e-7, 1e-3, 1.0, 3e4], np.float32: [1e-30, 1.0, 1e30], np.float64: [1e-300, 1.0, 1e150]}


@settings(max_examples=examples(1), deadline=None)
@given(
    n=st.integers(0, 80),
    d=st.integers(1, 41),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    scale_pick=st.integers(0, 3),
    float32_query=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_layout_and_type_is_the_left_to_right_sum(n, d, dtype, scale_pick, float32_query, seed):
    rng = np.random.default_rng(seed)
    scales = _SCALES[dtype]
    scale = scales[scale_pick % len(scales)]
    with np.errstate(over="ignore"):
        embs = np.clip(rng.normal(size=(n, d)) * scale, -np.finfo(dtype).max, np.finfo(dtype).max).astype(dtype)
    q = rng.normal(size=d)
    if float32_query:
        q = q.astype(np.float32).astype(np.float64)
    expected = [dot(q.tolist(), row) for row in embs.astype(np.float64).tolist()]
    bits = embs.view(np.uint16) if dtype == np.float16 else embs
    tiles = _tiles(bits)
    for kernel in (scoring.similarity, scoring.similarity_par):
        out = np.full(n, np.nan)
        kernel(bits, q, out)
        assert out.tolist() == expected  # bit for bit
    for kernel in (scoring.similarity_tiles, scoring.similarity_tiles_par):
        out = np.full(n, np.nan)
        kernel(tiles, q, n, out)
        assert out.tolist() == expected


def test_fused_steps_only_where_every_product_is_exact():
    q32 = np.array([0.1, -3.0, 1e-40], dtype=np.float32).astype(np.float64)  # 1e-40: a float32 subnormal
    assert scoring.products_exact(np.ones((2, 3), np.float32), q32)
    assert scoring.products_exact(np.ones((2, 3), np.uint16), q32)  # float16 bits
    assert scoring.products_exact(np.ones((1, 3, TILE_ROWS), np.float32), q32)
    assert not scoring.products_exact(np.ones((2, 3), np.float64), q32)  # 53-bit elements
    assert not scoring.products_exact(np.ones((2, 3), np.float32), np.array([0.1, 1.0, 2.0]))  # 0.1 needs 53 bits
    assert not scoring.products_exact(np.ones((2, 3), np.float32), np.array([1e39, 1.0, 2.0]))  # beyond float32


def test_a_product_that_a_fused_step_would_round_differently_is_not_fused():
    """q_1 = 1 + 2**-52 is not a float32 value: q_1 * e_1 needs 76 bits, so an FMA step
    round(s + q_1 * e_1) differs from the contract's round(s + round(q_1 * e_1))."""
    q = np.array([1.0, 1.0 + 2.0**-52, 0, 0, 0, 0, 0, 0])
    embs = np.zeros((16, 8), dtype=np.float32)
    embs[:, 0], embs[:, 1] = -1.0, 1.0 + 2.0**-23
    expected = dot(q.tolist(), embs[0].astype(np.float64).tolist())
    fused = float(Fraction(-1) + Fraction(q[1]) * Fraction(float(embs[0, 1])))  # one rounding

    @numba.njit
    def fused_rows(embs, q, out):
        dot_rows16_fused(embs, q, 0, 8, out)

    got_fused = np.empty(16)
    fused_rows(embs, q, got_fused)
    assert fused != expected
    assert got_fused.tolist() == [fused] * 16  # the fused kernel does round once
    assert not scoring.products_exact(embs, q)
    out = np.empty(16)
    scoring.similarity(embs, q, out)
    assert out.tolist() == [expected] * 16


def test_large_float16_matrix_rows_equal_the_scalar_row_loop():
    rng = np.random.default_rng(8)
    embs = (rng.normal(size=(5003, 389)) * rng.uniform(1e-3, 1e2, size=(5003, 1))).astype(np.float16)
    q = rng.normal(size=389).astype(np.float32).astype(np.float64)
    expected = np.array([scoring._dot_row(embs.view(np.uint16), q, j) for j in range(5003)])
    bits = embs.view(np.uint16)
    for kernel, args in ((scoring.similarity_par, (bits, q)), (scoring.similarity_tiles_par, (_tiles(bits), q, 5003))):
        out = np.empty(5003)
        kernel(*args, out)
        assert np.array_equal(out, expected)
