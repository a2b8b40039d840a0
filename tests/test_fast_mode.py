"""``retain(mode="fast")`` equals the exact mode except where two scores differ by < 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import dsgc_fast

from ._cases import retention_cases

NEAR = 1e-9


def assert_equal_up_to_near_ties(fast: dsgc_fast.Retention, exact: dsgc_fast.Retention) -> None:
    """Same ranking up to swaps of blocks whose exact scores are within NEAR; when the
    ranking is the same, the same retained set, reasons and cost."""
    at_exact = exact.scores[exact.rank]
    at_fast = exact.scores[fast.rank]
    assert np.all(np.abs(at_exact - at_fast) < NEAR)
    assert np.all(np.abs(fast.scores - exact.scores) < NEAR)
    if np.array_equal(fast.rank, exact.rank):
        assert np.array_equal(fast.retained, exact.retained)
        assert np.array_equal(fast.reasons, exact.reasons)
        assert fast.used == exact.used


@given(retention_cases())
@settings(max_examples=200)
def test_fast_mode_matches_exact_mode(case):
    q, embs, costs, budget, kwargs = case
    exact = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    fast = dsgc_fast.retain(q, embs, costs, budget, mode="fast", **kwargs)
    assert_equal_up_to_near_ties(fast, exact)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [20, 1_000, 50_000])
def test_fast_mode_on_unit_embeddings(n, dtype, seed):
    rng = np.random.default_rng(seed)
    embs = rng.normal(size=(n, 384)).astype(dtype)
    embs /= np.linalg.norm(embs, axis=1, keepdims=True)
    costs = rng.integers(1, 200, size=n)
    edges = rng.integers(0, n, size=(2 * n, 2))
    budget = int(costs.sum()) // 20
    exact = dsgc_fast.retain(embs[0], embs, costs, budget, edges=edges)
    fast = dsgc_fast.retain(embs[0], embs, costs, budget, edges=edges, mode="fast")
    assert_equal_up_to_near_ties(fast, exact)
    assert np.array_equal(fast.retained, exact.retained)


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="mode must be one of"):
        dsgc_fast.retain(np.ones(2), np.ones((3, 2)), [1, 1, 1], 2, mode="turbo")
