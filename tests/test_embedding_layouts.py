"""float16 inputs and ``TiledEmbeddings``: the same retention as the float64 copy, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
import dsgc_ref
from dsgc_fast.kernels.rowdot import TILE_ROWS

from ._cases import assert_same, examples, retention_cases, to_lists


@settings(max_examples=examples(0.5), deadline=None)
@given(case=retention_cases(max_n=120, max_d=40), dtype=st.sampled_from([np.float16, np.float32]), tiled=st.booleans())
def test_narrow_and_tiled_embeddings_retain_as_their_float64_copy(case, dtype, tiled):
    q, embs, costs, budget, kwargs = case
    narrow = embs.astype(dtype)
    block_embs = dsgc_fast.TiledEmbeddings.from_array(narrow) if tiled else narrow
    got = dsgc_fast.retain(q, block_embs, costs, budget, **kwargs)
    ref_q, ref_embs, ref_costs, ref_kwargs = to_lists(q, narrow.astype(np.float64), costs, kwargs)
    assert_same(got, dsgc_ref.retain(ref_q, ref_embs, ref_costs, budget, **ref_kwargs))


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 5_000, 40_001])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_tiles_at_every_size_equal_the_plain_array(n, dtype):
    rng = np.random.default_rng(n)
    embs = rng.normal(size=(n, 19)).astype(dtype)
    q = rng.normal(size=19).astype(np.float32)
    costs = rng.integers(1, 9, size=n)
    edges = rng.integers(0, max(n, 1), size=(2 * n, 2)) if n else None
    tiles = dsgc_fast.TiledEmbeddings.from_array(embs)
    assert tiles.shape == (n, 19) and tiles.dtype == dtype and tiles.tiles.shape[2] == TILE_ROWS
    assert np.array_equal(tiles.to_array(), embs)
    plain = dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 3, edges=edges)
    tiled = dsgc_fast.retain(q, tiles, costs, int(costs.sum()) // 3, edges=edges)
    assert np.array_equal(plain.similarity.view(np.int64), tiled.similarity.view(np.int64))
    assert np.array_equal(plain.retained, tiled.retained)


def test_float16_is_scored_as_float64_at_its_extremes():
    """Largest float16, subnormals and signed zeros, with float32 and float64 queries."""
    values = np.array([65504.0, -65504.0, 6e-8, -6e-8, 0.0, -0.0, 1.0, 1e-4], dtype=np.float16)
    embs = np.resize(values, (50, 11)).astype(np.float16)
    for q in (np.linspace(-2, 2, 11).astype(np.float32), np.linspace(-2, 2, 11) + 1e-13):
        got = dsgc_fast.retain(q, embs, np.ones(50), 10, policy="similarity")
        want = dsgc_fast.retain(q, embs.astype(np.float64), np.ones(50), 10, policy="similarity")
        assert np.array_equal(got.similarity.view(np.int64), want.similarity.view(np.int64))


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("tiled", [False, True])
def test_non_finite_float16_names_the_row(bad, tiled):
    embs = np.ones((40, 5), dtype=np.float16)
    embs[37, 2] = bad
    block_embs = dsgc_fast.TiledEmbeddings.from_array(embs) if tiled else embs
    with pytest.raises(ValueError, match=r"block_embs contains NaN or inf \(row 37\)"):
        dsgc_fast.retain(np.ones(5), block_embs, np.ones(40), 3)


def test_tiles_copy_their_input_and_accept_read_only_strided_arrays():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(70, 30)).astype(np.float32)
    view = base[::2, ::3]  # neither C- nor F-contiguous
    view.flags.writeable = False
    tiles = dsgc_fast.TiledEmbeddings.from_array(view)
    before = tiles.to_array().copy()
    base[:] = 0.0
    assert np.array_equal(tiles.to_array(), before) and np.array_equal(tiles.row(5), before[5])
    assert not tiles.tiles.flags.writeable
    q = rng.normal(size=10)
    got = dsgc_fast.retain(q, tiles, np.ones(35), 9)
    assert np.array_equal(got.similarity, dsgc_fast.retain(q, before, np.ones(35), 9).similarity)


def test_tiles_reject_a_wrong_dimension_and_bad_arrays():
    tiles = dsgc_fast.TiledEmbeddings.from_array(np.ones((4, 6), dtype=np.float32))
    with pytest.raises(ValueError, match="block_embs has d = 6 but query_emb has d = 5"):
        dsgc_fast.retain(np.ones(5), tiles, np.ones(4), 2)
    with pytest.raises(ValueError, match="must be 2-D"):
        dsgc_fast.TiledEmbeddings.from_array(np.ones(4))
    with pytest.raises(TypeError, match="real numbers"):
        dsgc_fast.TiledEmbeddings.from_array(np.array([["a"]]))


def test_retain_batch_reads_float16_as_its_float64_copy():
    rng = np.random.default_rng(4)
    embs = rng.normal(size=(60, 9)).astype(np.float16)
    q = rng.normal(size=(3, 9))
    offsets, costs, budgets = [0, 20, 45, 60], rng.integers(1, 5, size=60), [10, 12, 8]
    got = dsgc_fast.retain_batch(q, embs, offsets, costs, budgets)
    want = dsgc_fast.retain_batch(q, embs.astype(np.float64), offsets, costs, budgets)
    assert np.array_equal(got.similarity, want.similarity) and np.array_equal(got.mask, want.mask)
