"""Chat batches, compactions and ``select`` from several threads and coroutines at once on one store.

``add_messages`` plans a batch (generated ids, the tool calls still open) against the
store's blocks and then adds it; both happen holding the store's lock, so concurrent batches
each see the blocks of the ones before.  Each test runs a fixed amount of work (no timing):
every batch must be accepted, every id distinct, and the store must end a valid chat list
with every tool unit whole.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from concurrent.futures import ThreadPoolExecutor

from dsgc_fast import SelectCache, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.aio import AsyncMemoryStore
from dsgc_fast.memory.messages import add_messages, check_messages, compact_messages, to_messages
from dsgc_fast.memory.store import MemoryStore

from .test_messages import call, units_of


def turn(worker: int, k: int, call_id: str = "call_0") -> list[dict]:
    """One complete turn: a question, a call (by default ``call_0`` in every turn) and its result."""
    return [
        {"role": "user", "content": f"worker {worker} asks about order {k}"},
        {"role": "assistant", "content": None, "tool_calls": [call(call_id, "lookup", f'{{"order": {k}}}')]},
        {"role": "tool", "tool_call_id": call_id, "content": f"order {k} of worker {worker} shipped"},
    ]


def assert_active_units_whole(store: MemoryStore) -> None:
    """No tool unit split in one snapshot of the active blocks (the value table, not a message, aside)."""
    blocks = [b for b in store.active_blocks() if "message" in b.meta]
    active = {b.id for b in blocks}
    for unit in units_of([b.meta["message"] for b in blocks], [b.id for b in blocks]):
        assert unit <= active or not (unit & active), f"tool unit {sorted(unit)} split"


def check_store(store: MemoryStore, batches: list[list[dict]], ids: list[list[str]]) -> None:
    """Every batch is in the store once, in one piece, and the store is a valid chat list."""
    flat = [i for batch in ids for i in batch]
    assert len(flat) == len(set(flat)) == sum(map(len, batches))
    store.recall(store.archived_ids())
    order = sorted(range(len(ids)), key=lambda b: store.get(ids[b][0]).seq)
    assert to_messages(store) == [m for b in order for m in batches[b]]
    for b in order:  # a batch's blocks are consecutive
        seqs = [store.get(i).seq for i in ids[b]]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert store.get(ids[b][2]).depends_on == (ids[b][1],)  # the result answers its own batch's call
    check_messages(to_messages(store))


def test_gathered_add_messages_are_all_accepted():
    """Regression (issue 28, defect 8): 60 ``add_messages`` under ``asyncio.gather`` refused
    2-14 batches with ``duplicate block id 'm2'``: the ids were planned outside the lock."""
    batches = [turn(0, k, f"call_{k}") for k in range(60)]

    async def run() -> list[list[str]]:
        async with AsyncMemoryStore(MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")) as memory:
            ids = await asyncio.gather(*(memory.add_messages(copy.deepcopy(b)) for b in batches))
            await asyncio.gather(*(memory.compact_messages(60 + 10 * k) for k in range(4)))
            check_store(memory.store, batches, ids)
            return ids

    assert len(asyncio.run(run())) == 60


def test_threads_add_compact_and_select_at_once(tmp_path):
    """Six threads, each adding its turns, compacting the shared store and calling ``select``
    on its own growing history (one shared cache), all at once on a file-backed store."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=tmp_path / "shared.db")
    start = threading.Barrier(6)
    cache = SelectCache()

    def work(worker: int) -> list[tuple[list[dict], list[str]]]:
        start.wait(timeout=60)
        done, history = [], [{"role": "system", "content": f"agent {worker}"}]
        for k in range(8):
            batch = turn(worker, k)
            done.append((batch, add_messages(store, copy.deepcopy(batch))))
            history += batch
            got = select(history, 40, tokenizer="whitespace", cache=cache, on_over_budget="roots_only")
            check_messages(got.messages)
            assert got.messages[-3:] == batch  # the newest turn is always sent
            if k % 3 == 2:
                compact_messages(store, 50, on_over_budget="roots_only")
                assert_active_units_whole(store)
        return done

    with ThreadPoolExecutor(6) as pool:
        results = [pair for done in pool.map(work, range(6)) for pair in done]
    check_store(store, [b for b, _ in results], [i for _, i in results])
    want = to_messages(store)
    store.close()
    with MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=tmp_path / "shared.db") as again:
        assert to_messages(again) == want and len(want) == 6 * 8 * 3
