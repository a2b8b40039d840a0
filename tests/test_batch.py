"""``retain_batch``: every store's result equals ``retain`` (and ``dsgc_ref.retain``) on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
import dsgc_ref
from dsgc_fast.batch import retain_batch
from dsgc_ref.contract import POLICIES, SELECTIONS

from ._cases import assert_same
from .test_fast_mode import assert_equal_up_to_near_ties

FIELDS = ("retained", "mask", "rank", "scores", "relevance", "propagated", "similarity", "reasons")


@st.composite
def batches(draw):
    """A ragged batch: 0-6 stores of 0-25 blocks, edges with self-loops and duplicates."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 8))
    sizes = draw(st.lists(st.integers(0, 25), max_size=6))
    n = sum(sizes)
    embs = rng.normal(size=(n, d))
    if draw(st.booleans()):
        embs = np.round(embs, 1)  # exact ties
    if draw(st.booleans()):
        embs = embs.astype(np.float32)
    costs = rng.integers(0, draw(st.sampled_from([1, 5, 30])) + 1, size=n)
    edges, edge_sizes = [], []
    for size in sizes:
        k = int(rng.integers(0, 3 * size + 1)) if size else 0
        edges.append(rng.integers(0, max(size, 1), size=(k, 2)))
        edge_sizes.append(k)
    totals = [int(c.sum()) for c in np.split(costs, np.cumsum(sizes)[:-1])] if sizes else []
    budgets = [int(rng.integers(0, t + 6)) for t in totals]
    kwargs = dict(
        policy=draw(st.sampled_from(POLICIES)),
        selection=draw(st.sampled_from(SELECTIONS)),
        hops=draw(st.integers(1, 3)),
        decay=draw(st.sampled_from([0.0, 0.5, 1.0])),
        lambda_pi=draw(st.sampled_from([0.0, 1.0, 2.5])),
        tau=draw(st.sampled_from([1e-3, 0.25, 10.0])),
        density_exponent=draw(st.sampled_from([0.0, 0.5])),
    )
    shared = draw(st.booleans())
    queries = rng.normal(size=d) if shared else rng.normal(size=(len(sizes), d))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    edge_offsets = np.concatenate([[0], np.cumsum(edge_sizes)]).astype(np.int64)
    flat_edges = np.concatenate(edges) if edges else np.empty((0, 2), dtype=np.int64)
    return queries, embs, offsets, costs, budgets, flat_edges, edge_offsets, kwargs


def store_args(case, s):
    queries, embs, offsets, costs, budgets, edges, edge_offsets, kwargs = case
    lo, hi = offsets[s], offsets[s + 1]
    q = queries if queries.ndim == 1 else queries[s]
    return q, embs[lo:hi], costs[lo:hi], budgets[s], edges[edge_offsets[s] : edge_offsets[s + 1]], kwargs


def run_batch(case, **extra):
    queries, embs, offsets, costs, budgets, edges, edge_offsets, kwargs = case
    return retain_batch(
        queries, embs, offsets, costs, budgets, edges=edges, edge_offsets=edge_offsets, **kwargs, **extra
    )


def assert_identical(got: dsgc_fast.Retention, want: dsgc_fast.Retention) -> None:
    for name in FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes(), name
    assert (got.used, got.budget, got.policy, got.selection) == (want.used, want.budget, want.policy, want.selection)


@given(batches())
@settings(max_examples=150)
def test_each_store_equals_retain_and_the_oracle(case):
    result = run_batch(case)
    assert len(result) == len(case[2]) - 1
    for s in range(len(result)):
        q, embs, costs, budget, edges, kwargs = store_args(case, s)
        assert_identical(result[s], dsgc_fast.retain(q, embs, costs, budget, edges=edges, **kwargs))
        ref = dsgc_ref.retain(q.tolist(), embs.tolist(), costs.tolist(), budget, edges=edges.tolist(), **kwargs)
        assert_same(result[s], ref)


@given(batches())
@settings(max_examples=40)
def test_fast_mode_per_store(case):
    result = run_batch(case, mode="fast")
    for s in range(len(result)):
        q, embs, costs, budget, edges, kwargs = store_args(case, s)
        exact = dsgc_fast.retain(q, embs, costs, budget, edges=edges, **kwargs)
        assert_equal_up_to_near_ties(result[s], exact)


def test_parallel_dispatch_on_many_stores(seed):
    """Enough blocks for the parallel kernels (N >= DSGC_PARALLEL_MIN_N by default)."""
    rng = np.random.default_rng(seed)
    n_stores, size, d = 2_000, 20, 16
    embs = rng.normal(size=(n_stores * size, d)).astype(np.float32)
    queries = rng.normal(size=(n_stores, d))
    offsets = np.arange(n_stores + 1) * size
    costs = rng.integers(1, 50, size=n_stores * size)
    edges = rng.integers(0, size, size=(n_stores * 40, 2))
    edge_offsets = np.arange(n_stores + 1) * 40
    budgets = rng.integers(0, 400, size=n_stores)
    result = retain_batch(queries, embs, offsets, costs, budgets, edges=edges, edge_offsets=edge_offsets)
    for s in range(0, n_stores, 37):
        lo, hi = offsets[s], offsets[s + 1]
        one = dsgc_fast.retain(queries[s], embs[lo:hi], costs[lo:hi], budgets[s], edges=edges[40 * s : 40 * s + 40])
        assert_identical(result[s], one)
    assert np.array_equal(result.retained, np.flatnonzero(result.mask))


def test_negative_store_index_and_out_of_range():
    result = retain_batch(np.ones(2), np.ones((3, 2)), [0, 1, 3], [1, 1, 1], 5)
    assert result[-1].mask.shape == (2,)
    with pytest.raises(IndexError):
        result[2]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(offsets=[0, 2]), "offsets must start at 0"),
        (dict(offsets=[1, 3]), "offsets must start at 0"),
        (dict(offsets=[0, 2, 1, 3]), "never decrease"),
        (dict(budgets=[1, -1]), "budgets must be >= 0"),
        (dict(budgets=[1, 2, 3]), "budgets has 3 entries"),
        (dict(query_embs=np.ones((3, 2))), "one per store"),
        (dict(edges=[(0, 1)]), "edges needs edge_offsets"),
        (dict(edge_offsets=[0, 0, 0]), "edge_offsets is given but edges is None"),
        (dict(edges=[(0, 0), (0, 1)], edge_offsets=[0, 2, 2]), r"edges\[1\] = \[0, 1\] is out of range for store 0"),
        (dict(edges=[(0, 1)], edge_offsets=[0, 1]), "edge_offsets has 2 entries"),
        (dict(edges=[(0, 5)], edge_offsets=[0, 1, 1]), "out of range"),
        (dict(block_embs=np.array([[1.0, np.nan]] * 3)), r"NaN or inf \(row 0\)"),
        (dict(mode="turbo"), "mode must be one of"),
        (dict(policy="newest"), "policy"),
    ],
)
def test_validation(kwargs, match):
    args = dict(
        query_embs=np.ones((2, 2)), block_embs=np.ones((3, 2)), offsets=[0, 1, 3], costs=[1, 1, 1], budgets=[1, 2]
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        retain_batch(args.pop("query_embs"), args.pop("block_embs"), args.pop("offsets"), args.pop("costs"),
                     args.pop("budgets"), **args)  # fmt: skip
