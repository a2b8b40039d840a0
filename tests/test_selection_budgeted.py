"""``select_budgeted`` (no full ranking) gives exactly what ``select`` over ``rank`` gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.kernels.selection import rank, retained, retained_par, select, select_budgeted
from dsgc_fast.stages import SELECTION_CODES

SKIPPED, CUTOFF = np.int8(5), np.int8(6)


def walks(scores, order, costs, budget, selection):
    """(mask, reasons, used) of the full walk, then of the budgeted walk with its first pass
    in 1, 2 and 7 ranges, and (input order only) told ``order=None``."""
    kept = (np.arange(scores.shape[0]) % 2).astype(np.int8)
    identity = np.array_equal(order, np.arange(scores.shape[0]))
    budgeted = [(order, parts) for parts in (1, 2, 7)] + ([(None, 1), (None, 3)] if identity else [])
    out = []
    for walk in [None, *budgeted]:
        mask = np.zeros(scores.shape[0], dtype=np.bool_)
        reasons = np.full(scores.shape[0], -1, dtype=np.int8)
        if walk is None:
            used = select(rank(scores, order), costs, budget, selection, kept, SKIPPED, CUTOFF, mask, reasons)
        else:
            seq, parts = walk
            used = select_budgeted(scores, seq, costs, budget, selection, kept, SKIPPED, CUTOFF, parts, mask, reasons)
        out.append((mask, reasons, used))
    return out


def assert_same_walk(scores, order, costs, budget, selection):
    (m1, r1, u1), *others = walks(scores, order, costs, budget, selection)
    for m2, r2, u2 in others:
        assert u1 == u2
        assert np.array_equal(m1, m2)
        assert np.array_equal(r1, r2)


@given(
    n=st.integers(1, 3000),
    seed=st.integers(0, 2**32 - 1),
    distinct=st.sampled_from([2, 50, 10**9]),
    max_cost=st.sampled_from([0, 1, 10, 300]),
    fraction=st.sampled_from([0.0, 0.001, 0.05, 0.3, 0.9, 1.0, 1.5]),
    selection=st.sampled_from(sorted(SELECTION_CODES.values())),
    shuffled=st.booleans(),
)
@settings(max_examples=200)
def test_budgeted_walk_equals_full_walk(n, seed, distinct, max_cost, fraction, selection, shuffled):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, distinct, size=n) / distinct  # few distinct values: many ties
    costs = rng.integers(0, max_cost + 1, size=n)
    order = rng.permutation(n) if shuffled else np.arange(n)
    budget = min(int(costs.sum() * fraction), int(costs.sum()))
    assert_same_walk(scores, order.astype(np.int64), costs.astype(np.int64), budget, selection)


@pytest.mark.parametrize("selection", sorted(SELECTION_CODES.values()))
def test_large_store_with_small_blocks_deep_in_the_ranking(selection, seed):
    """Cheap blocks far down the ranking still fit under first_fit after the big ones stop fitting."""
    rng = np.random.default_rng(seed)
    n = 200_000
    scores = rng.random(n)
    costs = np.where(rng.random(n) < 0.01, 1, rng.integers(100, 400, size=n)).astype(np.int64)
    costs[np.argsort(scores)[: n // 2]] //= 50  # the worse half is cheap
    budget = int(costs.sum()) // 20
    assert_same_walk(scores, np.arange(n, dtype=np.int64), costs, budget, selection)


@pytest.mark.parametrize("seed", range(6))
def test_parked_blocks_return_in_tie_order(seed):
    """The first round parks the low scorers; when the band above them runs out while cheap
    blocks still fit, they come back in tie order (many ties, shuffled order)."""
    rng = np.random.default_rng(seed)
    n = 30_000
    scores = rng.integers(0, 40, size=n) / 40
    costs = np.where(scores >= 0.5, rng.integers(100, 300, size=n), rng.integers(1, 4, size=n)).astype(np.int64)
    order = rng.permutation(n).astype(np.int64)
    budget = int(costs.sum()) // 25 + int(rng.integers(0, 1000))  # the expensive band runs out first
    assert_same_walk(scores, order, costs, budget, False)


@given(n=st.integers(0, 2000), seed=st.integers(0, 2**32 - 1), density=st.sampled_from([0.0, 0.01, 0.5, 1.0]))
@settings(max_examples=50)
def test_retained_is_flatnonzero_for_any_split(n, seed, density):
    mask = np.random.default_rng(seed).random(n) < density
    for kernel in (retained, retained_par):
        for parts in (1, 2, 7, 4096):
            got = kernel(mask, parts)
            assert got.dtype == np.int64
            assert np.array_equal(got, np.flatnonzero(mask))
