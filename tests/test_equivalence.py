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
    ages = rng.integers(0, min(n, 40), size=n) * (rng.random(n) < 0.3)
    for policy in POLICIES:
        for hops in (1, 3):
            fast, ref = run_both(q, embs, costs, int(costs.sum()) // 5, edges=edges, policy=policy, hops=hops)
            assert_same(fast, ref)
    fast, ref = run_both(q, embs, costs, int(costs.sum()) // 5, edges=edges, policy="agent", ages=ages)
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


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_agent_without_working_ages_is_the_paper_rule(impl):
    """No ages, or all zero: the agent policy scores and decides exactly as dsgc."""
    rng = np.random.default_rng(6)
    embs, q, costs = rng.normal(size=(50, 6)), rng.normal(size=6), rng.integers(1, 5, size=50)
    edges = rng.integers(0, 50, size=(80, 2)).tolist()
    args = (q.tolist(), embs.tolist(), costs.tolist(), 40)
    paper = impl.retain(*args, edges=edges, policy="dsgc")
    for extra in ({}, {"ages": [0] * 50}):
        agent = impl.retain(*args, edges=edges, policy="agent", **extra)
        assert list(agent.scores) == list(paper.scores) and list(agent.retained) == list(paper.retained)
        assert [int(x) for x in agent.reasons] == [int(x) for x in paper.reasons]


def test_working_support_lifts_the_newest_units_and_says_so():
    """rho_i = gamma^(u-1) * kappa / N: the newest working unit is lifted most, reason KEPT_WORKING."""
    embs = np.eye(6, 3)[[0, 1, 1, 1, 1, 2]]  # block 5 is the query's own block
    q = np.eye(3)[2]
    ages = [0, 3, 2, 1, 0, 0]
    fast, ref = run_both(q, embs, np.ones(6, int), 3, policy="agent", ages=ages, recency_decay=0.5, working_weight=3.0)
    assert_same(fast, ref)
    assert fast.working.tolist() == [0.0, 0.125, 0.25, 0.5, 0.0, 0.0]  # kappa / N = 3 / 6
    assert fast.retained.tolist() == [2, 3, 5]
    assert fast.reason(3) == dsgc_fast.Reason.KEPT_WORKING


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_a_block_the_query_asks_for_outranks_the_working_set(impl):
    """The support is kappa mean relevances (kappa / N), not the query's own relevance.

    A long history: the query's own block (last), one old block that matches the query well
    (block 0), many weakly related blocks, and 30 recent tool blocks with working ages.  The
    old block's relevance exceeds the mean by far more than kappa, so it is kept at a budget
    the working set alone would fill; scaled by max_k r_k, the working set crowded it out.
    """
    n, d = 120, 8
    rng = np.random.default_rng(11)
    q = np.zeros(d)
    q[0] = 1.0
    embs = rng.normal(size=(n, d)) * 0.1
    embs[:, 0] = 0.2
    embs[0, 0] = 0.8  # the old block the query asks for
    embs[-1] = q  # the query's own block
    ages = [0] * n
    for k in range(30):  # tool blocks n-31 .. n-2, the newest is age 1
        ages[n - 2 - k] = k + 1
    args = (q.tolist(), embs.tolist(), [1] * n, 10)
    got = impl.retain(*args, policy="agent", ages=ages, live=[n - 1])
    assert 0 in list(got.retained)
    assert max(got.working) == 8.0 / n
    assert list(got.retained)[1:] == list(range(n - 9, n))  # the rest of the budget: the newest working blocks


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_zero_working_weight_ranks_as_dsgc(impl):
    rng = np.random.default_rng(12)
    embs, q, costs = rng.normal(size=(40, 5)), rng.normal(size=5), rng.integers(1, 5, size=40)
    ages = rng.integers(0, 10, size=40).tolist()
    args = (q.tolist(), embs.tolist(), costs.tolist(), 30)
    agent = impl.retain(*args, policy="agent", ages=ages, working_weight=0.0)
    paper = impl.retain(*args, policy="dsgc")
    assert list(agent.scores) == list(paper.scores) and list(agent.retained) == list(paper.retained)
    assert list(agent.working) == [0.0] * 40


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_ages_are_checked(impl):
    with pytest.raises(ValueError, match="agent"):
        impl.retain([1.0], [[1.0], [0.5]], [1, 1], 2, ages=[0, 1])
    with pytest.raises(ValueError, match="ages"):
        impl.retain([1.0], [[1.0], [0.5]], [1, 1], 2, policy="agent", ages=[0, 3])
    with pytest.raises(ValueError, match="ages"):
        impl.retain([1.0], [[1.0], [0.5]], [1, 1], 2, policy="agent", ages=[0])
