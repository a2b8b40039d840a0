"""Building a graph from raw edges: the row-range builds equal the serial CSR and the oracle, and the raw-edge
cache reuses a graph only for the same edge bytes, never answering for other edges."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import _config
from dsgc_fast import graph as graph_module
from dsgc_fast._config import PARALLEL_MIN_N
from dsgc_fast.kernels.checks import same_words
from dsgc_fast.kernels.graph_kernels import build_csr, gather_rows, row_distinct
from dsgc_ref import equations

from ._cases import examples


def _big_edges(seed: int, n: int = 5_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(PARALLEL_MIN_N + 17, 2))


def test_the_same_large_array_reuses_its_graph():
    graph_module._LAST_EDGES.clear()
    e = _big_edges(1)
    first = graph_module.as_graph(e, 5_000)
    assert graph_module.as_graph(e, 5_000) is first
    assert graph_module.as_graph(e.copy(), 5_000) is first  # equal bytes, another array: the same graph
    fresh = dsgc_fast.DependencyGraph.from_edges(5_000, e)
    assert np.array_equal(first.dep_indptr, fresh.dep_indptr) and np.array_equal(first.dep_indices, fresh.dep_indices)


@pytest.mark.parametrize("where", [0, 1, -1, "last byte"])
def test_an_edit_in_place_between_calls_gives_the_new_graph(where):
    graph_module._LAST_EDGES.clear()
    e = _big_edges(2)
    first = graph_module.as_graph(e, 5_000)
    if where == "last byte":
        e[-1, 1] = (e[-1, 1] + 1) % 5_000
    else:
        e[where, 0] = (e[where, 0] + 1) % 5_000
    second = graph_module.as_graph(e, 5_000)
    assert second is not first
    fresh = dsgc_fast.DependencyGraph.from_edges(5_000, e)
    assert np.array_equal(second.dep_indices, fresh.dep_indices) and np.array_equal(second.dep_indptr, fresh.dep_indptr)


def test_the_graph_does_not_change_when_the_caller_edits_its_array_later():
    graph_module._LAST_EDGES.clear()
    e = _big_edges(3)
    g = graph_module.as_graph(e, 5_000)
    before = g.dep_indices.copy()
    e[:] = 0
    assert np.array_equal(g.dep_indices, before)


def test_other_dtype_shape_or_n_rebuild_and_small_arrays_are_not_cached():
    graph_module._LAST_EDGES.clear()
    e = _big_edges(4)
    first = graph_module.as_graph(e, 5_000)
    assert graph_module.as_graph(e.astype(np.int32), 5_000) is not first
    assert graph_module.as_graph(e, 6_000) is not first
    assert graph_module.as_graph(e[:-1], 5_000) is not first
    small = e[:100]
    assert graph_module.as_graph(small, 5_000) is not graph_module.as_graph(small, 5_000)


def test_non_contiguous_and_read_only_edge_arrays():
    graph_module._LAST_EDGES.clear()
    wide = np.zeros((PARALLEL_MIN_N + 5, 3), dtype=np.int32)
    wide[:, :2] = _big_edges(5)[: PARALLEL_MIN_N + 5]
    view = wide[:, :2]
    view.flags.writeable = False
    g = graph_module.as_graph(view, 5_000)
    assert graph_module.as_graph(view, 5_000) is g
    assert np.array_equal(g.dep_indices, dsgc_fast.DependencyGraph.from_edges(5_000, view.copy()).dep_indices)


def test_invalid_large_arrays_raise_and_are_not_cached():
    graph_module._LAST_EDGES.clear()
    e = _big_edges(6)
    e[7, 0] = 5_000
    for _ in range(2):
        with pytest.raises(ValueError, match=r"edges\[7\]"):
            dsgc_fast.retain(np.ones(2), np.ones((5_000, 2)), np.ones(5_000), 10, edges=e)


def test_threads_retaining_with_their_own_edges_get_their_own_graphs():
    n = 5_000
    arrays = [_big_edges(10 + k, n) for k in range(4)]
    wants = [dsgc_fast.DependencyGraph.from_edges(n, a).dep_indices for a in arrays]
    failures = []

    def work(k: int) -> None:
        for _ in range(5):
            got = graph_module.as_graph(arrays[k], n).dep_indices
            if not np.array_equal(got, wants[k]):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 20_000])
def test_same_words_finds_a_difference_anywhere(size):
    a = np.arange(size, dtype=np.uint64)
    assert same_words(a, a.copy(), 3)
    for k in {0, size // 2, size - 1} if size else set():
        b = a.copy()
        b[k] ^= np.uint64(1) << np.uint64(63)
        assert not same_words(a, b, 3)


@st.composite
def edge_lists(draw):
    """(n, (E, 2) edges): skewed pairs with duplicates and self-loops, as int64 or int32."""
    n = draw(st.integers(0, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(0, 6 * n)) if n else 0
    dependent = rng.integers(0, max(n, 1), size=m)
    prerequisite = (rng.random(m) ** 3 * max(n, 1)).astype(np.int64)  # old blocks get most dependents
    edges = np.stack([dependent, prerequisite], axis=1)
    if m and draw(st.booleans()):
        edges = np.concatenate([edges, edges[: m // 2]])  # duplicates
    return n, edges.astype(draw(st.sampled_from([np.int64, np.int32])))


@given(edge_lists(), st.sampled_from([1, 3, 40]))
@settings(max_examples=examples(2))
def test_row_range_builds_equal_the_serial_csr_and_the_oracle(case, parts):
    """``row_distinct`` + ``gather_rows`` on threads, over any number of row ranges: the CSR of
    ``build_csr`` and ``dsgc_ref``'s dependents lists, with each entry's row and column."""
    n, edges = case
    want_indptr, want_indices = build_csr(n, edges[:, 1].astype(np.int64), edges[:, 0].astype(np.int64))
    lists = equations.dependents_lists(n, edges.tolist())
    assert want_indices.tolist() == [j for row in lists for j in row]
    assert want_indptr.tolist() == np.cumsum([0] + [len(row) for row in lists]).tolist()
    _config.parallel(n)  # starts the threads (see its docstring)
    start, idx, indptr = row_distinct(n, edges[:, 1], edges[:, 0], parts)
    m = int(indptr[n])
    indices, rows, cols = np.empty(m, np.int64), np.empty(m, np.int32), np.empty(m, np.int32)
    gather_rows(start, idx, indptr, parts, indices, rows, cols)
    assert np.array_equal(indptr, want_indptr) and np.array_equal(indices, want_indices)
    assert rows.tolist() == np.repeat(np.arange(n), np.diff(want_indptr)).tolist()
    assert cols.tolist() == want_indices.tolist()


@given(edge_lists())
@settings(max_examples=examples(1))
def test_from_edges_on_threads_gives_the_serial_graph(case):
    n, edges = case
    serial = dsgc_fast.DependencyGraph.from_edges(n, edges)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_config, "PARALLEL_MIN_N", 0)
        threaded = dsgc_fast.DependencyGraph.from_edges(n, edges)
    for g in (serial, threaded):
        lazy = dsgc_fast.DependencyGraph.built(n, g.dep_indptr.copy(), g.dep_indices.copy())  # rows, cols on use
        for name in ("dep_indptr", "dep_indices", "dep_rows", "dep_cols"):
            got, want = getattr(g, name), getattr(lazy, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), name
            assert not got.flags.writeable, name
    assert np.array_equal(serial.dep_indices, threaded.dep_indices)
