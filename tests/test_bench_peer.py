"""The NumPy/SciPy peer implements the retention contract it is timed against, and the
synthetic stores slice back to what they were built from."""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
from dsgc_bench.peer import first_fit, peer_graph, peer_retain
from dsgc_bench.synthetic import make_ragged, make_store
from dsgc_fast.kernels.selection import select
from dsgc_fast.stages import SELECTION_CODES


@pytest.mark.parametrize("n", [20, 1_000, 5_000])
def test_peer_keeps_what_retain_keeps(n):
    s = make_store(n, 64, seed=n)
    peer = peer_retain(s.query, s.embs, s.costs, s.budget, peer_graph(n, s.edges))
    exact = dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)
    assert np.array_equal(peer.retained, exact.retained)
    assert peer.used == exact.used
    assert np.allclose(peer.scores, exact.scores, rtol=1e-5, atol=1e-12)


def test_peer_first_fit_is_the_greedy_walk(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(1, 300))
        costs = rng.integers(0, 20, size=n)
        ranking = rng.permutation(n)
        budget = int(rng.integers(0, costs.sum() + 2))
        mask = np.zeros(n, dtype=np.bool_)
        select(
            ranking,
            costs,
            budget,
            SELECTION_CODES["first_fit"],
            np.zeros(n, np.int8),
            np.int8(5),
            np.int8(6),
            mask,
            np.empty(n, np.int8),
        )
        assert np.array_equal(first_fit(ranking, costs, budget), mask)


def test_ragged_stores_slice_back_to_stores():
    r = make_ragged(3, 5, 8, seed=1)
    s = r.store(2)
    assert s.embs.shape == (5, 8) and s.edges.max() < 5 and s.budget == r.budgets[2]
    assert np.array_equal(s.embs, r.embs[10:15]) and np.array_equal(s.query, r.queries[2])
