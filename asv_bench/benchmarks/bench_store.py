"""The agent turn on a ``MemoryStore`` and the compaction of a referent chain (tools/agent_turn.py).

``AgentTurn`` times one turn (``add_messages`` of the turn's new messages, ``compact_messages``,
``to_messages``) at about 150 active blocks, without encoding cost, after ``archived`` blocks
went to the archive; a flat line over ``archived`` is the target.  ``ChainCompaction`` times
``compact`` of a store whose referents form one chain (a live root at the middle) beside
``retain`` on the arrays it hands the engine.  ``ActiveGathers`` times two of the compaction's
per-turn gathers (one kernel call each): the active blocks' dependency graph and referent index.
"""

from __future__ import annotations

import functools

import numpy as np

import dsgc_fast
from dsgc_bench.agent_turn import AgentSession, chain_arrays, chain_store

from .common import skip_above


@functools.lru_cache(maxsize=1)
def _session(archived: int) -> AgentSession:
    return AgentSession(archived=archived, timed=3_000)


@functools.lru_cache(maxsize=1)
def _chain(n: int) -> tuple[dsgc_fast.MemoryStore, dict]:
    store = chain_store(n)
    return store, chain_arrays(store, [f"b{n // 2}"])


class AgentTurn:
    params = [[0, 10_000, 100_000]]
    param_names = ["archived"]
    number = 1
    repeat = (50, 300, 10.0)
    warmup_time = 0.0

    def setup(self, archived):
        skip_above(archived)
        self.session = _session(archived)

    def time_agent_turn(self, archived):
        self.session.turn()

    def track_encoder_calls_per_turn(self, archived):
        calls = self.session.encoder.calls
        for _ in range(20):
            self.session.turn()
        return (self.session.encoder.calls - calls) / 20

    track_encoder_calls_per_turn.unit = "calls"  # type: ignore[attr-defined]


class ActiveGathers:
    params = [[0, 100_000]]
    param_names = ["archived"]

    def setup(self, archived):
        skip_above(archived)
        self.columns = _session(archived).store.columns
        self.slots = self.columns.live_slots()  # a compaction gathers every block not deleted
        self.kept = ~self.columns.deleted.view()

    def time_graph_gather(self, archived):
        self.columns.active_graph(self.slots, self.kept)

    def time_referent_gather(self, archived):
        self.columns.active_index(self.slots)


class ChainCompaction:
    params = [[1_000, 20_000]]
    param_names = ["n"]

    def setup(self, n):
        skip_above(n)
        self.store, self.arrays = _chain(n)
        self.query = np.ones(16)
        self.live = [f"b{n // 2}"]
        self.time_compact(n)
        self.time_retain_same_arrays(n)

    def time_compact(self, n):
        self.store.compact(self.query, n, live=self.live)

    def time_retain_same_arrays(self, n):
        a = self.arrays
        dsgc_fast.retain(self.query, a["block_embs"], a["costs"], n, params=self.store.params, live=a["live"],
                         referents=a["referents"])  # fmt: skip
