"""The prerequisite graph in CSR form, both directions, built once and reusable."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcValueError

from . import _validate
from ._deferred import deferred

numba = deferred("numba")
_config = deferred("dsgc_fast._config")
checks = deferred("dsgc_fast.kernels.checks")
graph_kernels = deferred("dsgc_fast.kernels.graph_kernels")
propagation = deferred("dsgc_fast.kernels.propagation")


def _entry_width(n: int) -> type[np.signedinteger]:
    """The integer type of ``dep_rows`` and ``dep_cols``: int32 when every index fits, else int64."""
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


@dataclass(frozen=True)
class DependencyGraph:
    """Prerequisite edges ``(j, i)`` ("block j depends on block i") over ``n`` blocks.

    ``dep_indptr``/``dep_indices``  CSR: row i lists the j that depend on i (ascending); the
    direction scoring walks.  ``dep_rows`` and ``dep_cols``: the row and the column of each
    CSR entry, int32 when n fits (what the one-hop kernels walk), and ``prerequisites``: the
    reverse CSR (row j lists the i that j depends on); all are built on first use.

    The edge list is read as a set: duplicate edges count once and self-loops are dropped
    (a block is not its own prerequisite).  Build once with ``from_edges`` and pass the
    graph as ``edges=`` to ``retain`` to skip the CSR construction on later calls.  A graph
    made directly from arrays is checked to be such a CSR (rows strictly ascending, no
    self-loops, indices in range) and copied read-only, so no kernel ever reads out of
    bounds and later edits of the caller's arrays change nothing.
    """

    n: int
    dep_indptr: np.ndarray
    dep_indices: np.ndarray

    def __post_init__(self) -> None:
        n = _validate.block_count(self.n)
        indptr, indices = _validate.csr("dependents", self.dep_indptr, self.dep_indices, n, n)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        first = np.zeros(indices.shape[0], dtype=np.bool_)
        first[indptr[:-1][np.diff(indptr) > 0]] = True
        if (indices == rows).any() or not ((np.diff(indices) > 0) | first[1:]).all():
            raise DsgcValueError(
                "a DependencyGraph's rows must list distinct dependents in ascending order, without "
                "self-loops; build it with DependencyGraph.from_edges(n, edges)"
            )
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "dep_indptr", indptr)
        object.__setattr__(self, "dep_indices", indices)

    @classmethod
    def from_edges(cls, n: int, edges: Any) -> DependencyGraph:
        """Validate an (E, 2) edge list and build the dependents CSR.

        From ``PARALLEL_MIN_N`` edges the rows are sorted and deduplicated over row ranges on
        threads, and ``dep_rows`` and ``dep_cols`` are written in the same pass
        (``kernels.graph_kernels``); a smaller list takes the serial ``build_csr``, and those
        two arrays are built on first use.  Either way the arrays are the same.
        """
        n = _validate.block_count(n)
        e = _validate.edges(edges, n)
        if not _config.parallel(e.shape[0]):
            return cls.built(n, *graph_kernels.build_csr(n, e[:, 1].copy(), e[:, 0].copy()))
        start, idx, indptr = graph_kernels.row_distinct(
            n, e[:, 1], e[:, 0], propagation.PARTS
        )  # rows: prerequisites; cols: dependents
        m = int(indptr[n])
        indices = np.empty(m, dtype=np.int64)
        width = _entry_width(n)
        rows, cols = np.empty(m, dtype=width), np.empty(m, dtype=width)
        graph_kernels.gather_rows(start, idx, indptr, propagation.PARTS, indices, rows, cols)
        return cls.built(n, indptr, indices, rows, cols)

    @classmethod
    def built(
        cls, n: int, dep_indptr: np.ndarray, dep_indices: np.ndarray, dep_rows: np.ndarray | None = None,
        dep_cols: np.ndarray | None = None,
    ) -> DependencyGraph:  # fmt: skip
        """A graph over a dependents CSR that ``build_csr`` has just made (canonical by construction): no re-check.

        ``dep_rows`` and ``dep_cols``, when given, are those of that CSR in ``_entry_width(n)``.
        The arrays become the graph's own, read-only: the caller must not keep them.
        """
        graph = object.__new__(cls)
        fields = [("n", n), ("dep_indptr", dep_indptr), ("dep_indices", dep_indices)]
        if dep_rows is not None and dep_cols is not None:  # cached_property values, set ahead
            fields += [("dep_rows", dep_rows), ("dep_cols", dep_cols)]
        for name, value in fields:
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(graph, name, value)
        return graph

    @cached_property
    def dep_rows(self) -> np.ndarray:
        """The row of each entry of ``dep_indices`` (``_entry_width``: int32 when n fits, else int64)."""
        rows = np.empty(self.n_edges, dtype=_entry_width(self.n))
        graph_kernels.fill_edge_rows(self.dep_indptr, rows)
        rows.flags.writeable = False
        return rows

    @cached_property
    def dep_cols(self) -> np.ndarray:
        """``dep_indices`` in the width of ``dep_rows`` (int32 when n fits): the copy the
        one-hop kernels read, half the bytes of the int64 array."""
        cols = self.dep_indices.astype(self.dep_rows.dtype)
        cols.flags.writeable = False
        return cols

    @cached_property
    def prerequisites(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, indices) CSR: row j lists the blocks j depends on, ascending."""
        e = self.edge_array()
        indptr, indices = graph_kernels.build_csr(self.n, e[:, 0].copy(), e[:, 1].copy())
        indptr.flags.writeable = False
        indices.flags.writeable = False
        return indptr, indices

    @property
    def n_edges(self) -> int:
        """Distinct non-self-loop edges."""
        return int(self.dep_indices.shape[0])

    def edge_array(self) -> np.ndarray:
        """The canonical (E, 2) int64 edge list (dependent, prerequisite), sorted by prerequisite."""
        counts = np.diff(self.dep_indptr)
        prerequisite = np.repeat(np.arange(self.n, dtype=np.int64), counts)
        return np.stack([self.dep_indices, prerequisite], axis=1)


class _LastEdges:
    """The graph built from the last large raw edge array, reused while the same values come back.

    An agent that passes the same (E, 2) array on every call would otherwise rebuild the
    CSR each time.  The cache keeps a private copy of that array (the caller's dtype and
    shape) and answers only when a new array has the same dtype, shape and bytes as that
    copy, compared in full: so a caller that edits its array in place between calls, or
    passes another array at the same address, gets the graph of what it passes now.  (An
    identity check would answer wrongly after an in-place edit; a sampled content check
    could miss one.)  The compare reads both arrays once, a fraction of a build.  One entry,
    behind a lock; arrays under ``PARALLEL_MIN_N`` edges are built directly (cheap).  A
    caller that wants no copy kept builds a ``DependencyGraph`` once and passes that.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entry: tuple[int, np.ndarray, DependencyGraph] | None = None

    def graph(self, n: int, edges: Any) -> DependencyGraph:
        if not (isinstance(edges, np.ndarray) and edges.ndim == 2 and edges.shape[0] >= _config.PARALLEL_MIN_N):
            return DependencyGraph.from_edges(n, edges)
        with self._lock:
            entry = self._entry
        if entry is not None and entry[0] == n and self._same(entry[1], edges):
            return entry[2]
        snapshot = edges.copy(order="C")  # before the build: what the graph is built from
        graph = DependencyGraph.from_edges(n, snapshot)
        snapshot.flags.writeable = False
        with self._lock:
            self._entry = (n, snapshot, graph)
        return graph

    @staticmethod
    def _same(snapshot: np.ndarray, edges: np.ndarray) -> bool:
        if snapshot.dtype != edges.dtype or snapshot.shape != edges.shape:
            return False
        mine = snapshot.reshape(-1).view(np.uint8)
        theirs = np.ascontiguousarray(edges).reshape(-1).view(np.uint8)
        body = mine.shape[0] - mine.shape[0] % 8
        if mine[body:].tobytes() != theirs[body:].tobytes():
            return False
        words = body // 8
        if _config.parallel(words):
            return bool(
                checks.same_words_par(
                    mine[:body].view(np.uint64), theirs[:body].view(np.uint64), numba.get_num_threads()
                )
            )
        return bool(checks.same_words(mine[:body].view(np.uint64), theirs[:body].view(np.uint64), 1))

    def clear(self) -> None:
        with self._lock:
            self._entry = None


_LAST_EDGES = _LastEdges()


def as_graph(edges: Any, n: int) -> DependencyGraph:
    """Accept a prebuilt ``DependencyGraph`` (checked against n) or an edge list.

    A large edge array equal, byte for byte, to the one of the previous call reuses that
    call's graph (``_LastEdges``).
    """
    if isinstance(edges, DependencyGraph):
        if edges.n != n:
            raise DsgcValueError(f"edges is a DependencyGraph over {edges.n} blocks, but there are {n} blocks")
        return edges
    if edges is None and type(n) is int and 0 <= n <= _EMPTY_MAX_N:
        return _empty_graph(n)
    return _LAST_EDGES.graph(n, edges)


#: the largest store whose edgeless graph is kept (``_empty_graph``): small calls build none
_EMPTY_MAX_N = 256


@lru_cache(maxsize=_EMPTY_MAX_N + 1)
def _empty_graph(n: int) -> DependencyGraph:
    """The graph of ``n`` blocks without edges, built once per ``n`` (read-only, so one object serves every call)."""
    return DependencyGraph.from_edges(n, None)
