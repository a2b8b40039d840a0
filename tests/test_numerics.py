"""Numerical edge cases: extreme temperatures, equal scores, zero vectors, concurrent callers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref

from ._cases import assert_same


@pytest.mark.parametrize("tau", [1e-6, 1e-3, 1.0, 1e3, 1e6])
@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e6])
def test_extreme_temperatures_stay_finite(tau, scale):
    rng = np.random.default_rng(0)
    embs, q = rng.normal(size=(300, 8)) * scale, rng.normal(size=8)
    edges = rng.integers(0, 300, size=(600, 2))
    got = dsgc_fast.retain(q, embs, np.ones(300, int), 50, edges=edges, tau=tau, hops=2)
    assert np.isfinite(got.scores).all() and np.isfinite(got.relevance).all()
    assert abs(got.relevance.sum() - 1.0) < 1e-9
    ref = dsgc_ref.retain(q.tolist(), embs.tolist(), [1] * 300, 50, edges=edges.tolist(), tau=tau, hops=2)
    assert_same(got, ref)


def test_zero_vectors_give_uniform_relevance():
    got = dsgc_fast.retain(np.zeros(4), np.zeros((10, 4)), np.ones(10, int), 3)
    assert (got.relevance == 0.1).all()
    assert got.retained.tolist() == [0, 1, 2]  # all tied: input order


def test_huge_lambda_saturates_without_nan():
    rng = np.random.default_rng(1)
    embs, q = rng.normal(size=(20, 3)), rng.normal(size=3)
    got = dsgc_fast.retain(q, embs, np.ones(20, int), 5, edges=[(0, 1), (2, 3)], lambda_pi=1e308)
    assert not np.isnan(got.scores).any()
    assert set(got.retained.tolist()) >= {1, 3}


def test_concurrent_calls_from_python_threads_agree():
    rng = np.random.default_rng(2)
    n = 40_000
    embs = rng.normal(size=(n, 16)).astype(np.float32)
    costs = rng.integers(1, 20, size=n)
    edges = rng.integers(0, n, size=(2 * n, 2))
    graph = dsgc_fast.DependencyGraph.from_edges(n, edges)
    queries = rng.normal(size=(8, 16))
    serial = [dsgc_fast.retain(qk, embs, costs, 20_000, edges=graph).retained for qk in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            results = list(
                pool.map(lambda qk: dsgc_fast.retain(qk, embs, costs, 20_000, edges=graph).retained, queries)
            )
            for a, b in zip(serial, results):
                assert np.array_equal(a, b)


def test_graph_reuse_equals_edge_list():
    rng = np.random.default_rng(3)
    embs, q = rng.normal(size=(100, 5)), rng.normal(size=5)
    edges = rng.integers(0, 100, size=(300, 2))
    graph = dsgc_fast.DependencyGraph.from_edges(100, edges)
    a = dsgc_fast.retain(q, embs, np.ones(100, int), 30, edges=edges, hops=3)
    b = dsgc_fast.retain(q, embs, np.ones(100, int), 30, edges=graph, hops=3)
    assert a.scores.tobytes() == b.scores.tobytes()
    canonical = graph.edge_array()
    assert len({tuple(e) for e in canonical.tolist()}) == graph.n_edges == canonical.shape[0]
    assert set(map(tuple, canonical.tolist())) == {(j, i) for j, i in edges.tolist() if j != i}


def test_prerequisites_csr_is_the_reverse_relation():
    rng = np.random.default_rng(9)
    edges = rng.integers(0, 30, size=(80, 2))
    indptr, indices = dsgc_fast.DependencyGraph.from_edges(30, edges).prerequisites
    got = {(j, int(i)) for j in range(30) for i in indices[indptr[j] : indptr[j + 1]]}
    assert got == {(j, i) for j, i in edges.tolist() if j != i}
    assert all((np.diff(indices[indptr[j] : indptr[j + 1]]) > 0).all() for j in range(30))
