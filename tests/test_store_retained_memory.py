"""What a store keeps in memory, per byte of input: at most 3 bytes, plus a fixed amount per block.

Measured with ``tracemalloc`` as the memory a store gives back when it is closed and dropped
(process-wide memos and imports stay, so they are not counted); the archive is a file, so
SQLite's pages are on disk.  The per-block allowance is the block's embedding row (at most
twice over while the row array grows by doubling) and ``BOOKKEEPING`` bytes of ids, costs,
flags and the block record.  Not a timing test.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc

import numpy as np
import pytest

from dsgc_fast.encoders import LEXICAL_DIM, LexicalEncoder
from dsgc_fast.memory.messages import add_messages, compact_messages, remove_messages
from dsgc_fast.memory.store import MemoryStore

#: bytes a store may keep per block beside its embedding row
BOOKKEEPING = 1536
#: bytes a store may keep per byte of input
PER_BYTE = 3


def json_session(rows: int) -> list[dict]:
    """One tool result: a table of ``rows`` records whose values are nearly all distinct."""
    rng = random.Random(0)
    table = [
        {
            "id": f"ord_{k:06d}",
            "customer": f"cust_{rng.randrange(10**6)}",
            "amount": rng.randrange(10**7) / 100,
            "sku": f"SKU-{rng.randrange(10**6):06d}",
            "note": f"item {k} for order {k * 7} sku-{k % 977}",
        }
        for k in range(rows)
    ]
    call = {"id": "c1", "type": "function", "function": {"name": "orders", "arguments": "{}"}}
    return [
        {"role": "user", "content": "list the orders"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(table)},
    ]


def text_session(count: int) -> list[dict]:
    """``count`` prose messages of about 900 characters, each with its own identifiers."""
    rng = random.Random(1)
    vocabulary = ["the", "order", "ticket", "refund", "account", "shipped", "customer", "asked", "invoice"]
    out = []
    for k in range(count):
        words = " ".join(rng.choice(vocabulary) for _ in range(60))
        out.append({"role": ("user", "assistant")[k % 2], "content": f"{words} ORD-{k:05d} acct 88{k:04d}-C {words}"})
    return out


def tiny_session(count: int) -> list[dict]:
    """``count`` one-line messages: the per-block allowance dominates."""
    return [{"role": ("user", "assistant")[k % 2], "content": f"ok {k} ORD-{k:05d}"} for k in range(count)]


def held(messages: list[dict], path) -> int:
    """Bytes the store holds after adding ``messages`` (given up by the caller) and compacting."""
    gc.collect()
    tracemalloc.start()
    try:
        store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
        add_messages(store, messages)
        messages.clear()  # the store's copies alone hold the texts now
        compact_messages(store, 10**9)
        gc.collect()
        with_store = tracemalloc.get_traced_memory()[0]
        store.close()
        del store
        gc.collect()
        return with_store - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("session", "size"),
    [(json_session, 6000), (text_session, 800), (tiny_session, 4000)],
    ids=["json", "text", "many-blocks"],
)
def test_a_store_holds_at_most_three_bytes_per_input_byte_and_a_fixed_amount_per_block(tmp_path, session, size):
    """Regression (issue 28, defect 9): a JSON tool result cost ~46x its size for the life of
    the store (induction kept state per distinct value; the lexical encoder's memo grew with
    every distinct token; the recent-rows memo kept whole batch arrays alive)."""
    messages = session(size)
    blocks, input_bytes = len(messages), sum(len(json.dumps(m)) for m in messages)
    allowance = PER_BYTE * input_bytes + blocks * (2 * LEXICAL_DIM * 4 + BOOKKEEPING)
    got = held(messages, tmp_path / "memory.db")
    assert got <= allowance, f"{got:,} bytes held for {input_bytes:,} bytes in {blocks} blocks (allowed {allowance:,})"


def encoder(texts: list[str]) -> np.ndarray:
    """A deterministic two-dimensional encoder with no state."""
    return np.array([[len(t) % 7 + 1.0, 1.0] for t in texts])


def add_and_remove(store: MemoryStore) -> int:
    """Add a large tool result's unit to ``store`` and remove it; returns the result's size."""
    messages = json_session(6000)
    size = len(messages[-1]["content"])
    ids = add_messages(store, messages)
    remove_messages(store, ids[1])
    return size


def test_a_removed_tool_result_gives_its_memory_back(tmp_path):
    """Induction state is released with the block: removing a large result's unit frees what it took
    (the same unit added and removed once before fills the process-wide memos, which stay; the
    encoder, a plain function, keeps no memo of its own)."""
    with MemoryStore(encoder=encoder, tokenizer="whitespace", archive=tmp_path / "warm.db") as warm:
        add_and_remove(warm)
    gc.collect()
    tracemalloc.start()
    try:
        store = MemoryStore(encoder=encoder, tokenizer="whitespace", archive=tmp_path / "m.db")
        add_messages(store, text_session(20))
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        size = add_and_remove(store)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
        store.close()
    finally:
        tracemalloc.stop()
    assert grown < size / 4, f"{grown:,} bytes still held after removing a {size:,}-byte result"
