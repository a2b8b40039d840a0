"""``retain_batch`` over many 20-block stores (d = 256), exact and fast mode, and the
NumPy/SciPy peer called once per store for the throughput comparison."""

from __future__ import annotations

import dsgc_fast
from dsgc_bench.peer import peer_graph, peer_retain

from .common import ragged


class RetainBatch:
    params = [[1, 100, 10_000, 100_000], ["exact", "fast"]]
    param_names = ["stores", "mode"]

    def setup(self, stores, mode):
        self.r = ragged(stores)
        self.time_retain_batch(stores, mode)

    def time_retain_batch(self, stores, mode):
        r = self.r
        dsgc_fast.retain_batch(
            r.queries, r.embs, r.offsets, r.costs, r.budgets, edges=r.edges, edge_offsets=r.edge_offsets, mode=mode
        )


class PeerLoop:
    """The peer per store (graph built per call): compare per-store time with RetainBatch."""

    params = [[1, 100, 1_000]]
    param_names = ["stores"]

    def setup(self, stores):
        r = ragged(stores)
        self.stores = [r.store(s) for s in range(stores)]

    def time_peer_loop(self, stores):
        for s in self.stores:
            peer_retain(s.query, s.embs, s.costs, s.budget, peer_graph(s.n, s.edges))
