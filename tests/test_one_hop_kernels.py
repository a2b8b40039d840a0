"""The one-hop kernels (edge-ordered pass, balanced row ranges, fused scoring) and the large-store
path of ``retain`` that uses them, against ``dsgc_ref`` bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import _config, engine
from dsgc_fast.kernels import propagation, scoring, selection
from dsgc_ref import equations

from ._cases import assert_same, examples, retention_cases
from .test_equivalence import run_both


@st.composite
def graphs(draw, max_n: int = 200):
    """(graph, r): skewed random DAG-like edges (old blocks get many dependents), r > 0."""
    n = draw(st.integers(0, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(0, 4 * n)) if n > 1 else 0
    dependent = rng.integers(1, max(n, 2), size=m)
    edges = np.stack([dependent, (rng.random(m) * dependent).astype(np.int64)], axis=1)
    r = rng.random(n) * draw(st.sampled_from([1e-300, 1.0, 1e300]))
    return dsgc_fast.DependencyGraph.from_edges(n, edges), r


@given(graphs(), st.integers(1, 40))
@settings(max_examples=examples(1))
def test_balanced_rows_partition_the_rows(case, parts):
    graph, _ = case
    bounds = propagation.balanced_rows(graph.dep_indptr, parts)
    assert bounds.shape == (parts + 1,)
    assert bounds[0] == 0 and bounds[-1] == graph.n
    assert (np.diff(bounds) >= 0).all()


def test_balanced_rows_split_the_edges_of_a_skewed_graph():
    n = 10_000
    rng = np.random.default_rng(0)
    dependent = rng.integers(1, n, size=2 * n)
    edges = np.stack([dependent, (rng.random(2 * n) * dependent).astype(np.int64)], axis=1)
    graph = dsgc_fast.DependencyGraph.from_edges(n, edges)
    bounds = propagation.balanced_rows(graph.dep_indptr, 2)
    work = bounds + graph.dep_indptr[bounds]  # rows + edges before each boundary
    halves = np.diff(work)
    assert abs(int(halves[0]) - int(halves[1])) <= 2 * int(np.diff(graph.dep_indptr).max()) + 2
    assert bounds[1] < n // 2  # equal row counts would have given the first half most edges


@given(graphs(), st.integers(1, 9))
@settings(max_examples=examples(1))
def test_one_hop_equals_ref(case, parts):
    graph, r = case
    deps = [graph.dep_indices[graph.dep_indptr[i] : graph.dep_indptr[i + 1]].tolist() for i in range(graph.n)]
    want = np.array(equations.propagate_one_hop(r.tolist(), deps), dtype=np.float64)
    for kernel in (propagation.one_hop, propagation.one_hop_par):
        out = np.full(graph.n, np.nan)
        kernel(graph.dep_indptr, graph.dep_indices, graph.dep_rows, r, parts, out)
        assert out.tobytes() == want.tobytes()


@given(graphs(), st.integers(1, 9), st.sampled_from([0.0, 0.5, 2.0]), st.sampled_from([0.0, 0.5, 1.0]))
@settings(max_examples=examples(1))
def test_fused_one_hop_scores_equal_the_separate_kernels(case, parts, lambda_pi, density_exponent):
    graph, r = case
    costs = np.random.default_rng(graph.n).integers(0, 50, size=graph.n)
    pi = np.empty(graph.n)
    propagation.one_hop(graph.dep_indptr, graph.dep_indices, graph.dep_rows, r, 1, pi)
    scores = np.empty(graph.n)
    scoring.combine(r, pi, costs, lambda_pi, density_exponent, scores)
    kept = np.empty(graph.n, dtype=np.int8)
    selection.kept_codes(r, pi, lambda_pi, np.int8(1), np.int8(2), kept)
    for kernel in (propagation.one_hop_scores, propagation.one_hop_scores_par):
        got = np.full(graph.n, np.nan), np.full(graph.n, np.nan), np.full(graph.n, -1, dtype=np.int8)
        args = (graph.dep_indptr, graph.dep_indices, graph.dep_rows, r, costs, lambda_pi, density_exponent)
        kernel(*args, np.int8(1), np.int8(2), parts, *got)
        assert got[0].tobytes() == pi.tobytes()
        assert got[1].tobytes() == scores.tobytes()
        assert got[2].tolist() == kept.tolist()


def test_edge_rows_name_each_entry_row():
    graph = dsgc_fast.DependencyGraph.from_edges(5, [(1, 0), (2, 0), (4, 3), (3, 0)])
    assert graph.dep_rows.tolist() == [0, 0, 0, 3]
    assert graph.dep_rows.dtype == np.int32
    assert not graph.dep_rows.flags.writeable


def test_edge_cols_are_the_dependents_at_half_width():
    graph = dsgc_fast.DependencyGraph.from_edges(5, [(1, 0), (2, 0), (4, 3), (3, 0)])
    assert graph.dep_cols.tolist() == graph.dep_indices.tolist() == [1, 2, 3, 4]
    assert graph.dep_cols.dtype == np.int32
    assert not graph.dep_cols.flags.writeable


@given(retention_cases())
@settings(max_examples=examples(2))
def test_large_store_path_equals_ref(case):
    """Every store takes ``retain``'s large-store path, with the parallel kernels."""
    q, embs, costs, budget, kwargs = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "SMALL_N", 0)
        patch.setattr(_config, "PARALLEL_MIN_N", 0)
        fast, ref = run_both(q, embs, costs, budget, **kwargs)
    assert_same(fast, ref)
