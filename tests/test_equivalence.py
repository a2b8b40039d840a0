"""dsgc_fast.retain must equal dsgc_ref.retain bit for bit on every input (float64)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import dsgc_fast
import dsgc_ref
from dsgc_ref.contract import POLICIES

from ._cases import assert_same, examples, retention_cases, to_lists


def run_both(q, embs, costs, budget, **kwargs):
    fast = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    rq, re, rc, rk = to_lists(q, embs, costs, kwargs)
    ref = dsgc_ref.retain(rq, re, rc, budget, **rk)
    return fast, ref


@given(retention_cases())
@settings(max_examples=examples(3))
def test_fast_equals_ref_random(case):
    q, embs, costs, budget, kwargs = case
    fast, ref = run_both(q, embs, costs, budget, **kwargs)
    assert_same(fast, ref)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("selection", ["first_fit", "prefix"])
def test_all_ties_keep_input_order(policy, selection):
    embs = np.ones((12, 4))
    costs = np.full(12, 2)
    fast, ref = run_both(np.ones(4), embs, costs, 9, policy=policy, selection=selection)
    assert_same(fast, ref)
    if policy != "recency":
        assert fast.rank.tolist() == list(range(12))
        assert fast.retained.tolist() == [0, 1, 2, 3]


def test_explicit_order_breaks_ties():
    order = np.array([3, 1, 0, 2])
    fast, ref = run_both(np.ones(2), np.ones((4, 2)), [1, 1, 1, 1], 2, order=order)
    assert_same(fast, ref)
    assert fast.rank.tolist() == [3, 1, 0, 2]
    assert fast.retained.tolist() == [1, 3]


def test_recency_follows_order():
    order = np.array([2, 0, 3, 1])  # block 1 is newest, then 3
    fast, ref = run_both(np.ones(2), np.eye(4, 2), [1, 1, 1, 1], 2, policy="recency", order=order)
    assert_same(fast, ref)
    assert fast.rank.tolist() == [1, 3, 0, 2]
    assert fast.retained.tolist() == [1, 3]


@pytest.mark.parametrize("n", [20, 50, 10_000])
def test_equal_at_sizes(n, seed):
    rng = np.random.default_rng(seed + n)
    embs = rng.normal(size=(n, 16))
    q = rng.normal(size=16)
    costs = rng.integers(1, 30, size=n)
    edges = rng.integers(0, n, size=(2 * n, 2))
    for policy in POLICIES:
        for hops in (1, 3):
            fast, ref = run_both(q, embs, costs, int(costs.sum()) // 5, edges=edges, policy=policy, hops=hops)
            assert_same(fast, ref)


@pytest.mark.slow
def test_equal_at_one_million_blocks():
    n, d = 1_000_000, 2
    rng = np.random.default_rng(7)
    embs = rng.normal(size=(n, d))
    q = rng.normal(size=d)
    costs = rng.integers(1, 50, size=n)
    edges = rng.integers(0, n, size=(2 * n, 2))
    fast, ref = run_both(q, embs, costs, int(costs.sum()) // 20, edges=edges)
    assert_same(fast, ref)


def test_float32_inputs_match_ref_on_exact_conversion():
    rng = np.random.default_rng(3)
    embs = rng.normal(size=(200, 9)).astype(np.float32)
    q = rng.normal(size=9).astype(np.float32)
    costs = rng.integers(1, 9, size=200).astype(np.int32)
    edges = rng.integers(0, 200, size=(300, 2)).astype(np.int32)
    fast, ref = run_both(q, embs, costs, 300, edges=edges, hops=2)
    assert_same(fast, ref)


def test_one_query_matrix_equals_point_query():
    rng = np.random.default_rng(4)
    embs, q = rng.normal(size=(40, 5)), rng.normal(size=5)
    point = dsgc_fast.retain(q, embs, np.ones(40, int), 10)
    matrix = dsgc_fast.retain(q[None, :], embs, np.ones(40, int), 10, query_weights=[3.0])
    assert point.scores.tobytes() == matrix.scores.tobytes()
    assert point.retained.tolist() == matrix.retained.tolist()


def test_no_graph_ranks_like_similarity():
    rng = np.random.default_rng(5)
    embs, q = rng.normal(size=(60, 6)), rng.normal(size=6)
    costs = rng.integers(1, 5, size=60)
    sim = dsgc_fast.retain(q, embs, costs, 40, policy="similarity", edges=[(0, 1)])
    nog = dsgc_fast.retain(q, embs, costs, 40, policy="no_graph", edges=[(0, 1)])
    assert sim.rank.tolist() == nog.rank.tolist()
    assert sim.retained.tolist() == nog.retained.tolist()
