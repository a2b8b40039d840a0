"""End-to-end ``retain`` over N per policy and per embedding form, with both floors (``E @ q``
and the streaming row sum) and the NumPy/SciPy peer in the same suite, and the per-call
memory of ``retain``."""

from __future__ import annotations

import tracemalloc

import numpy as np

import dsgc_fast
from dsgc_bench.peer import peer_graph, peer_retain
from dsgc_bench.timing import interleaved

from .common import SIZES, store


class Retain:
    """``retain`` with a prebuilt ``DependencyGraph`` (the agent-loop case: query changes)."""

    params = [SIZES, list(dsgc_fast.POLICIES)]
    param_names = ["n", "policy"]

    def setup(self, n, policy):
        self.s = store(n)
        self.graph = dsgc_fast.DependencyGraph.from_edges(n, self.s.edges)
        self.time_retain(n, policy)

    def time_retain(self, n, policy):
        s = self.s
        dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=self.graph, policy=policy)


class RetainFast:
    """``retain(..., mode="fast")`` (fast-math dot products), prebuilt graph."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        self.s = store(n)
        self.graph = dsgc_fast.DependencyGraph.from_edges(n, self.s.edges)
        self.time_retain_fast(n)

    def time_retain_fast(self, n):
        s = self.s
        dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=self.graph, mode="fast")


class RetainEdges:
    """``retain`` given the same raw (E, 2) edge array on every call: from ``PARALLEL_MIN_N``
    edges its graph is reused after the first call (``RetainNewEdges`` builds it every time)."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        self.s = store(n)
        dsgc_fast.retain(self.s.query, self.s.embs[:20], self.s.costs[:20], 10)

    def time_retain_edges(self, n):
        s = self.s
        dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)


class Floor:
    """``E @ q`` on the same float32 matrix: one BLAS pass, the cost floor of any scorer."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        self.s = store(n)

    def time_matvec(self, n):
        self.s.embs @ self.s.query


class Peer:
    """The NumPy/SciPy peer (``dsgc_bench.peer``) with its CSR graph prebuilt."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        self.s = store(n)
        self.csr = peer_graph(n, self.s.edges)

    def time_peer(self, n):
        s = self.s
        peer_retain(s.query, s.embs, s.costs, s.budget, self.csr)


class SmallCall:
    """N = 20 (issue 29: at least 3x faster than the peer): ``retain`` with a prebuilt graph, the same call
    reading every field of its result (a small call's fields are views made at their first read), and
    the peer / exact ratio of one interleaved run (best round of each, ``dsgc_bench.timing``)."""

    n = 20

    def setup(self):
        self.s = store(self.n)
        self.graph = dsgc_fast.DependencyGraph.from_edges(self.n, self.s.edges)
        self.csr = peer_graph(self.n, self.s.edges)
        self.time_retain_small()

    def time_retain_small(self):
        s = self.s
        return dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=self.graph)

    def time_retain_small_every_field_read(self):
        r = self.time_retain_small()
        return r.retained, r.rank, r.scores, r.relevance, r.propagated, r.similarity, r.working, r.pinned

    def time_peer_small(self):
        s = self.s
        peer_retain(s.query, s.embs, s.costs, s.budget, self.csr)

    def track_peer_over_exact(self):
        t_peer, t_exact = interleaved([self.time_peer_small, self.time_retain_small], rounds=5, settle=0.0)
        return t_peer / t_exact

    track_peer_over_exact.unit = "ratio"  # type: ignore[attr-defined]


class RetainMemory:
    """Peak memory one ``retain`` call allocates beyond its inputs, in bytes per block."""

    params = [SIZES]
    param_names = ["n"]
    unit = "bytes/block"

    def setup(self, n):
        self.s = store(n)
        self.graph = dsgc_fast.DependencyGraph.from_edges(n, self.s.edges)
        self.call()

    def call(self):
        s = self.s
        dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=self.graph)

    def track_peak_extra_bytes_per_block(self, n):
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        self.call()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return (peak - base) / n

    def peakmem_retain(self, n):
        self.call()


class StreamingFloor:
    """The streaming floor: a fast-math row sum over the same float32 bytes (``dsgc_bench.floor``)."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        from dsgc_bench.floor import streaming_floor

        self.read = streaming_floor(store(n).embs)
        self.read()

    def time_row_sum(self, n):
        self.read()


class RetainPrecision:
    """Exact ``retain`` per embedding form (float64 / float32 / float16 / int8 / tiled), prebuilt graph."""

    params = [SIZES, ["float64", "float32", "float16", "int8, per-row scale", "float32, tiled", "float16, tiled"]]
    param_names = ["n", "form"]

    def setup(self, n, form):
        from dsgc_bench.forms import embedding_form

        self.s = store(n)
        self.embs = embedding_form(self.s.embs, form)
        self.graph = dsgc_fast.DependencyGraph.from_edges(n, self.s.edges)
        self.time_retain(n, form)

    def time_retain(self, n, form):
        s = self.s
        dsgc_fast.retain(s.query, self.embs, s.costs, s.budget, edges=self.graph)


class PrecisionFloor:
    """The row-sum floor over the bytes each embedding form stores."""

    params = RetainPrecision.params
    param_names = RetainPrecision.param_names

    def setup(self, n, form):
        from dsgc_bench.floor import streaming_floor
        from dsgc_bench.forms import embedding_form

        self.read = streaming_floor(embedding_form(store(n).embs, form))
        self.read()

    def time_row_sum(self, n, form):
        self.read()


class RetainNewEdges:
    """``retain`` given a new raw edge array on every call (two arrays in turn), so the graph
    is built every time; ``RetainEdges`` passes the same array, whose graph is reused."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        self.s = store(n)
        self.arrays = [self.s.edges, np.ascontiguousarray(self.s.edges[::-1])]
        self.turn = 0
        self.time_retain_new_edges(n)

    def time_retain_new_edges(self, n):
        s = self.s
        self.turn ^= 1
        dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=self.arrays[self.turn])
