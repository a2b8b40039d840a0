"""Session operations of ``MemoryStore``: delete / pop / truncate_after / clear, search, the
chat-message additions (precomputed embeddings, annotation meta, ``remove_messages``) and the
async facade."""

from __future__ import annotations

import asyncio
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast import MemoryStore
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.aio import AsyncMemoryStore
from dsgc_fast.memory.messages import (
    SessionError,
    add_messages,
    compact_messages,
    remove_messages,
    to_messages,
)
from dsgc_fast.memory.schema import SCHEMA_VERSION

ENC = LexicalEncoder()


def account_store(archive=":memory:") -> MemoryStore:
    """a binds 'that account' (older), n is a note, b rebinds it, q uses it; costs in words."""
    store = MemoryStore(encoder=ENC, archive=archive, tokenizer="whitespace")
    store.add("account 8841-C was flagged last week", id="a", binds={"that account": "8841-C"})
    store.add("kyc takes two days for a sole trader", id="n")
    store.add("the account is now 9000-B", id="b", binds={"that account": "9000-B"}, depends_on=["a"])
    store.add("did that account clear kyc", id="q", uses=["that account"])
    return store


def table_ids(path, table):
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute(f"SELECT id FROM {table} ORDER BY seq")]
    finally:
        conn.close()


# -- delete ------------------------------------------------------------------------------
def test_delete_takes_active_and_archived_blocks_out_and_keeps_their_rows(tmp_path):
    path = tmp_path / "s.db"
    store = account_store(path)
    store.compact("did that account clear kyc", 12, live=["q"])
    assert "a" in store.archived_ids()
    assert store.delete(["n", "a"]) == ["a", "n"]
    assert "a" not in store.ids() + store.archived_ids() and "n" not in store.ids() + store.archived_ids()
    assert store.has("a")  # ids are never reused
    with pytest.raises(KeyError, match="was deleted"):
        store.get("a")
    with pytest.raises(KeyError, match="was deleted"):
        store.recall(["a"])
    with pytest.raises(ValueError, match="already deleted"):
        store.delete("a")
    with pytest.raises(ValueError, match="duplicate block id"):
        store.add("again", id="a")
    with pytest.raises(ValueError, match="was deleted"):
        store.add("depends on a deleted block", depends_on=["a"])
    record = {d.block.id: d for d in store.deleted()}
    assert (
        record["a"].operation == "delete" and record["a"].compaction == 1 and record["a"].reason.startswith("evicted")
    )
    assert record["n"].block.text == "" and record["n"].block.meta == {}  # erased: a tombstone stays
    store.close()
    assert table_ids(path, "deleted") == ["a", "n"]
    again = MemoryStore(
        encoder=ENC, archive=path, tokenizer="whitespace"
    )  # a reopened store sees the same three states
    assert again.ids() == ["b", "q"] and again.archived_ids() == [] and len(again.deleted()) == 2
    again.close()


def test_deleting_the_live_binder_recalls_the_next_newest_binder():
    store = account_store()
    store.compact("did that account clear kyc", 15, live=["q"])
    assert store.ids() == ["b", "q"] and store.archived_ids() == ["a", "n"]
    store.delete("b")
    assert store.ids() == ["a", "q"]  # 'a' binds 'that account' again, and 'q' uses it
    assert store.binder_of("that account") == "a"
    store.delete("a")
    assert store.binder_of("that account") is None and store.ids() == ["q"]


def test_pop_truncate_after_and_clear():
    store = account_store()
    popped = store.pop()
    assert popped.id == "q" and popped.text == "did that account clear kyc"
    assert store.truncate_after("a") == ["n", "b"]
    assert store.ids() == ["a"]
    with pytest.raises(KeyError, match="was deleted"):
        store.truncate_after("b")
    assert store.clear() == ["a"]
    assert store.ids() == [] and store.total == 4
    with pytest.raises(IndexError):
        store.pop()
    store.add("a new start", id="fresh")
    assert store.ids() == ["fresh"]
    assert sorted(d.operation for d in store.deleted()) == ["clear", "pop", "truncate_after", "truncate_after"]


def test_a_deletion_inside_a_failing_atomic_group_rolls_back():
    store = account_store()
    with pytest.raises(RuntimeError, match="boom"), store.atomic():
        store.delete(["a", "b"])
        raise RuntimeError("boom")
    assert store.ids() == ["a", "n", "b", "q"] and store.deleted() == []


def test_a_schema_version_1_store_is_upgraded_when_opened_for_writing(tmp_path):
    import shutil
    from pathlib import Path

    path = tmp_path / "v1.db"
    shutil.copy(Path(__file__).parent / "data" / "store-v1.db", path)
    store = MemoryStore(encoder=ENC, archive=path)
    store.delete("n0")
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM settings WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    conn.close()
    assert table_ids(path, "deleted") == ["n0"]


# -- search ------------------------------------------------------------------------------
def test_search_ranks_the_archive_and_can_recall_the_hits():
    store = MemoryStore(encoder=ENC)
    texts = [
        "refund for invoice 7",
        "kyc documents for a sole trader",
        "payout schedule",
        "kyc documents for a sole trader",
    ]
    for k, text in enumerate(texts):
        store.add(text, id=f"x{k}")
    store.add("current question", id="now", pinned=True)
    store.compact("current question", 2)
    assert store.ids() == ["now"]
    hits = store.search("which kyc documents does a sole trader need", 2)
    assert [h.block.id for h in hits] == ["x1", "x3"]  # equal similarity: the older first
    assert hits[0].similarity == hits[1].similarity and hits[0].compaction == 1
    assert store.ids() == ["now"]  # searching alone recalls nothing
    assert store.search("kyc", 0) == [] and len(store.search("kyc", 10)) == 4
    store.search("refund invoice", 1, recall=True)
    assert store.ids() == ["x0", "now"]
    store.delete("x1")
    assert "x1" not in [h.block.id for h in store.search("kyc documents", 5)]


@pytest.mark.parametrize(
    ("query", "k", "error", "match"),
    [
        ("kyc", -1, ValueError, "k must be"),
        ("kyc", 1.5, ValueError, "k must be"),
        (np.ones(3), 1, ValueError, "d = 3"),
        (np.full(256, np.nan), 1, ValueError, "finite"),
    ],
)
def test_search_rejects_bad_arguments(query, k, error, match):
    store = account_store()
    with pytest.raises(error, match=match):
        store.search(query, k)


# -- chat messages -----------------------------------------------------------------------
SESSION = [
    {"role": "system", "content": "You are a support assistant."},
    {"role": "user", "content": "Look up charge ch_1 for account 8841-C."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "charge ch_1 disputed"},
    {"role": "assistant", "content": "The charge is disputed."},
    {"role": "user", "content": "Thanks, and the payout?"},
]


def test_remove_messages_takes_a_tool_call_with_its_results():
    store = MemoryStore(encoder=ENC)
    ids = add_messages(store, SESSION)
    assert remove_messages(store, [ids[3]]) == [ids[2], ids[3]]
    assert [m["role"] for m in to_messages(store)] == ["system", "user", "assistant", "user"]
    add_messages(
        store,
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
            }
        ],
    )
    add_messages(
        store, [{"role": "tool", "tool_call_id": "c1", "content": "charge ch_1 refunded"}]
    )  # the call id is free again
    compact_messages(store, 200)
    assert to_messages(store)[-1]["content"] == "charge ch_1 refunded"


def test_add_messages_takes_precomputed_embeddings_and_annotation_meta():
    store = MemoryStore(encoder=ENC)
    vectors = np.arange(2 * 256, dtype=np.float64).reshape(2, 256) / 1000
    messages = [
        {"role": "user", "content": "hi", "dsgc": {"meta": {"items": [{"role": "user", "content": "hi"}]}}},
        {"role": "assistant", "content": "hello"},
    ]
    ids = add_messages(store, messages, embeddings=vectors)
    assert np.array_equal(store.get(ids[1]).embedding, vectors[1].astype(store.embedding_dtype))
    assert (
        store.get(ids[0]).meta["items"] == [{"role": "user", "content": "hi"}]
        and store.get(ids[0]).meta["role"] == "user"
    )
    vectors[0] = 0  # the store kept its own copy
    assert store.get(ids[0]).embedding[1] == np.float32(0.001)
    with pytest.raises(ValueError, match=r"an \(1, d\) array"):
        add_messages(store, [{"role": "user", "content": "x"}], embeddings=np.ones((2, 256)))
    with pytest.raises(SessionError, match="may not use the keys"):
        add_messages(store, [{"role": "user", "content": "x", "dsgc": {"meta": {"role": "tool"}}}])
    assert len(store) == 2


# -- async facade ------------------------------------------------------------------------
def test_the_async_facade_runs_the_store_off_the_event_loop():
    async def session() -> tuple[list[str], list[dict], list[str]]:
        async with await AsyncMemoryStore.open(encoder=ENC) as store:
            await store.add_messages(SESSION)
            results = await asyncio.gather(*(store.search("charge", 1) for _ in range(4)))
            report = await store.compact_messages(40)
            return report.kept, await store.to_messages(), [str(r) for r in results]

    kept, messages, _ = asyncio.run(session())
    assert kept and messages[0]["role"] == "system" and messages[-1]["content"] == "Thanks, and the payout?"
    with pytest.raises(TypeError, match="MemoryStore"):
        AsyncMemoryStore(object())


@given(
    states=st.lists(st.sampled_from(["active", "archived", "deleted"]), min_size=1, max_size=24),
    count=st.integers(1, 6),
)
def test_the_newest_first_walk_reads_every_block_not_deleted(states, count):
    """``_older_blocks`` (the walk of the open-call check) gives every block not deleted, newest first, a few at a time."""
    store = MemoryStore(encoder=ENC)
    for k in range(len(states)):
        store.add(f"block number {k}", id=f"b{k}", cost=1)
    gone = [f"b{k}" for k, s in enumerate(states) if s == "deleted"]
    if gone:
        store.delete(gone)
    kept = [f"b{k}" for k, s in enumerate(states) if s == "active"]
    if len(store):
        store.compact("block", len(kept), live=kept)
    assert store.ids() == kept
    walked, end = [], store.total
    while end > 0:
        blocks, end = store.older_blocks(end, count)
        assert len(blocks) <= count and (blocks or end == 0)
        walked += [b.id for b in blocks]
    assert walked == [f"b{k}" for k in reversed(range(len(states))) if states[k] != "deleted"]
