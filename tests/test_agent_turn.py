"""The agent turn: one encoder call per batch, the query's row reused, and the store's chat facts equal to ChatUnits."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dsgc_bench.agent_turn import AgentSession, CountingEncoder, turns
from dsgc_bench.chat_history import chat_history
from dsgc_fast import MemoryStore
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import add_messages, compact_messages, remove_messages, to_messages


def test_a_batch_is_encoded_in_one_call_and_its_user_message_is_the_query():
    encoder = CountingEncoder(LexicalEncoder())
    store = MemoryStore(encoder)
    batches = turns(chat_history(60))
    for batch in batches[:8]:
        calls = encoder.calls
        add_messages(store, batch)
        assert encoder.calls <= calls + 1
        calls = encoder.calls
        report = compact_messages(store, 400)
        assert encoder.calls == calls  # the newest user message's row is reused as the query
        assert report.query == next(m["content"] for m in reversed(batch) if m["role"] == "user")


def test_a_reused_query_row_is_the_encoders_row_of_the_text():
    store = MemoryStore(CountingEncoder(LexicalEncoder()))
    add_messages(store, [{"role": "user", "content": "where is refund RF-12?"}])
    fresh = MemoryStore()
    add_messages(fresh, [{"role": "user", "content": "where is refund RF-12?"}])
    fresh._core.recent_rows.clear()  # this one encodes the query again
    a = compact_messages(store, 100).decisions["m0"]
    b = compact_messages(fresh, 100).decisions["m0"]
    assert a.similarity == b.similarity and a.score == b.score


def _session(seed: int) -> list[list[dict]]:
    return turns(chat_history(40 + 10 * seed))


def _stores() -> tuple[MemoryStore, MemoryStore]:
    fast, rules = MemoryStore(tokenizer="whitespace"), MemoryStore(tokenizer="whitespace")
    rules.columns.chat.ambiguous = True  # compact_messages applies ChatUnits itself
    return fast, rules


@pytest.mark.parametrize("seed", range(6))
def test_the_stores_chat_facts_compact_as_chat_units_do(seed):
    """Random budgets, live ids, recalls, deletions and cuts: both paths give the same report and store."""
    rng = random.Random(seed)
    fast, rules = _stores()
    for batch in _session(seed):
        for store in (fast, rules):
            add_messages(store, batch)
        if rng.random() < 0.2 and fast.archived_ids():
            pick = rng.choice(fast.archived_ids())
            for store in (fast, rules):
                store.recall(pick)
        if rng.random() < 0.1 and len(fast.ids()) > 3:
            pick = rng.choice(fast.ids()[1:-1])
            for store in (fast, rules):
                remove_messages(store, pick)
        budget = rng.choice([5, 40, 120, 400])
        live = rng.sample(fast.ids(), 1) if rng.random() < 0.3 and fast.ids() else []
        over = rng.choice(["roots_only", "truncate"])
        policy = rng.choice(["agent", "agent", "dsgc", "recency"])
        got = [
            compact_messages(store, budget, live=live, on_over_budget=over, policy=policy) for store in (fast, rules)
        ]
        assert got[0].to_dict() == got[1].to_dict()
        assert fast.ids() == rules.ids() and fast.archived_ids() == rules.archived_ids()
        assert to_messages(fast) == to_messages(rules)


def test_ambiguous_call_ids_take_the_rules_path():
    """Two blocks made call c1 (added as plain blocks with chat meta): the store leaves the rules to ChatUnits."""
    store = MemoryStore(tokenizer="whitespace")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    for _ in range(2):
        store.add("f({})", meta={"role": "assistant", "message": message})
        store.add("ok", meta={"role": "tool", "message": result})
    add_messages(store, [{"role": "user", "content": "go"}])
    assert store.columns.chat.ambiguous
    assert store.compact_turn(100, query=None, live=()) is None
    assert compact_messages(store, 100).kept == ["b0", "b1", "b2", "b3", "m4"]


def test_a_compaction_decides_over_every_block_not_deleted():
    """The decision covers the archive too (issue 26, item 2): O(blocks not deleted) per compaction, docs/memory.md."""
    session = AgentSession(archived=300, warm=3)
    store = session.store
    store.delete(store.archived_ids()[:5])
    history = set(store.ids()) | set(store.archived_ids())
    report = compact_messages(store, session.budget)
    assert set(report.kept) | set(report.evicted) == history and not set(report.kept) & set(report.evicted)
    assert set(report.kept) <= set(store.ids())


def test_the_active_slots_follow_adds_evictions_recalls_and_deletions():
    session = AgentSession(archived=300, warm=0)
    store = session.store
    for k in range(30):
        session.turn()
        if k % 7 == 3 and store.archived_ids():
            store.recall(store.archived_ids()[-1])
        if k % 11 == 5:
            remove_messages(store, store.ids()[-1])
        assert np.array_equal(store.columns.active_slots(), np.flatnonzero(store.columns.active.view()))


def test_the_newest_first_walk_reads_active_archived_and_skips_deleted_blocks():
    from dsgc_fast.memory.messages import _newest_first

    session = AgentSession(archived=200, warm=5)
    store = session.store
    store.delete(store.archived_ids()[5:40] + store.ids()[2:4])
    expected = sorted(store.ids() + store.archived_ids(), key=lambda i: -store.get(i).seq)
    assert [block.id for block in _newest_first(store)] == expected
