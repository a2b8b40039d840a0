"""Soak: thousands of add/compact/recall cycles on a file-backed store; memory and archive hold.

``DSGC_SOAK_CYCLES`` sets the number of cycles (default 300, about 3 s here; the long
campaign in ``make fuzz`` runs 20,000).  Each cycle adds 1-3 blocks (some binding or
using referents, some depending on the newest block), compacts to a 150-token budget with
the newest block live, and every tenth cycle recalls a few archived blocks.  Checked:

* every cycle: the report keeps at most the budget and decides every active block once;
* every 50 cycles and at the end: the database holds every block exactly once, in the table
  the store says (active or archived), with one compaction-log row per compaction;
* at the end: SQLite's integrity check passes and a reopened store equals the live one;
* memory over the second half: Python allocations made and kept (tracemalloc, started at
  the half) and RSS grow by at most
  what the added blocks need (a 256-d float64 embedding and bookkeeping per block), and a
  store that stops growing (compact/recall on a fixed set) does not grow at all.
"""

from __future__ import annotations

import os
import sqlite3
import tracemalloc

import numpy as np

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import RECENT_TEXTS, MemoryStore

CYCLES = int(os.environ.get("DSGC_SOAK_CYCLES", "300"))
BUDGET = 150
WORDS = [
    "account",
    "refund",
    "kyc",
    "charge",
    "payout",
    "merchant",
    "invoice",
    "ledger",
    "fraud",
    "clear",
    "flagged",
    "review",
    "é",
    "雪",
]
#: Python bytes a block may add: its embedding row (1 KiB in the store's float32; 2 KiB in
#: float64, when the 7.5 KiB below was measured), id/slot/uses/binds entries, and the
#: growable arrays doubling inside the traced window (the new buffer is traced, the freed old
#: one was allocated before tracing began): about 7.5 KiB measured here
PER_BLOCK_PY = 10 * 1024
#: resident bytes a block may add: the above plus SQLite's page cache and allocator slack
PER_BLOCK_RSS = 12 * 1024
RSS_SLACK = 24 * 2**20


def rss() -> int:
    """Resident set size of this process in bytes."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def add_blocks(store: MemoryStore, rng: np.random.Generator, k: int) -> None:
    for _ in range(k):
        i = store.total
        store.add(
            f"turn {i}: " + " ".join(rng.choice(WORDS, size=int(rng.integers(3, 15))).tolist()),
            binds={f"r{i % 13}": f"v{i}"} if i % 5 == 0 else None,
            uses=[f"r{(7 * i) % 13}"] if i % 3 == 0 else [],
            depends_on=[store.ids()[-1]] if i % 2 and len(store) else [],
        )


def check_archive(store: MemoryStore, path, compactions: int) -> None:
    """The database holds every block once, where the store says, and the whole compaction log."""
    conn = sqlite3.connect(path)
    try:
        active = [r[0] for r in conn.execute("SELECT id FROM active ORDER BY seq")]
        archived = [r[0] for r in conn.execute("SELECT id FROM archive ORDER BY seq")]
        logged = conn.execute("SELECT COUNT(*) FROM compactions").fetchone()[0]
    finally:
        conn.close()
    assert active == store.ids() and archived == store.archived_ids()
    assert len(active) + len(archived) == store.total and not set(active) & set(archived)
    assert logged == compactions


def random_query(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=5).tolist())


def cycle(store: MemoryStore, rng: np.random.Generator, grow: bool, query: str | None = None) -> None:
    if grow:
        add_blocks(store, rng, int(rng.integers(1, 4)))
    before = set(store.ids()) | set(store.archived_ids())  # the decision is over the whole history
    report = store.compact(query or random_query(rng), BUDGET, live=[store.ids()[-1]])
    assert report.used <= BUDGET and store.used <= BUDGET
    assert not set(report.kept) & set(report.evicted) and set(report.kept) | set(report.evicted) == before
    if not grow:
        store.recall(store.archived_ids())
    elif int(rng.integers(0, 10)) == 0 and store.archived_ids():
        store.recall(rng.choice(store.archived_ids(), size=3).tolist())


def test_soak_growing_store(tmp_path):
    path = tmp_path / "soak.db"
    rng = np.random.default_rng(20261130)
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    half = CYCLES // 2
    try:
        for c in range(CYCLES):
            if c == half:  # trace the second half: what it allocates and keeps
                tracemalloc.start()
                rss_half, total_half = rss(), store.total
            cycle(store, rng, grow=True)
            if c % 50 == 0:
                check_archive(store, path, compactions=c + 1)
        py_growth, rss_end = tracemalloc.get_traced_memory()[0], rss()
    finally:
        tracemalloc.stop()
    added = store.total - total_half
    assert py_growth <= PER_BLOCK_PY * added, py_growth / added
    assert rss_end - rss_half <= RSS_SLACK + PER_BLOCK_RSS * added, (rss_end - rss_half) / added
    check_archive(store, path, compactions=CYCLES)
    state = (store.ids(), store.archived_ids(), store.total, store.used)
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    reopened = MemoryStore(encoder=LexicalEncoder(), archive=path)
    assert (reopened.ids(), reopened.archived_ids(), reopened.total, reopened.used) == state
    reopened.close()


def test_soak_compaction_cycles_on_a_fixed_store_do_not_grow_memory(tmp_path):
    path = tmp_path / "fixed.db"
    rng = np.random.default_rng(7)
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    add_blocks(store, rng, 60)
    # the queries come from a pool the store's memo of encoded texts holds whole: tracemalloc
    # counts what is allocated after it starts, not what is freed of older blocks, so a
    # bounded cache that keeps replacing entries would read as growth of up to its size
    queries = [random_query(rng) for _ in range(RECENT_TEXTS // 8)]
    for query in [*queries, *queries[:20]]:  # warm-up: compile kernels, fill caches
        cycle(store, rng, grow=False, query=query)
    cycles = max(CYCLES // 2, 100)
    try:
        for c in range(cycles):
            if c == cycles // 2:
                tracemalloc.start()
                rss_half = rss()
            cycle(store, rng, grow=False, query=queries[int(rng.integers(len(queries)))])
        py_growth, rss_end = tracemalloc.get_traced_memory()[0], rss()
    finally:
        tracemalloc.stop()
    assert py_growth <= 256 * 1024, py_growth
    assert rss_end - rss_half <= RSS_SLACK, rss_end - rss_half
    check_archive(store, path, compactions=len(queries) + 20 + cycles)
    store.close()
