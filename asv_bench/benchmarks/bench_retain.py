"""End-to-end ``retain`` over N per policy, with the floor ``E @ q`` and the NumPy/SciPy
peer in the same suite, and the per-call memory of ``retain``."""

from __future__ import annotations

import tracemalloc

import dsgc_fast
from dsgc_bench.peer import peer_graph, peer_retain

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
    """``retain`` given the raw (E, 2) edge list: the graph is built inside the call."""

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
