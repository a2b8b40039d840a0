"""``MemoryStore`` compacts its whole history by ``select``'s function (issue 26, item 2).

A store fed a chat history through ``add_messages`` and compacted turn after turn (any budgets)
sends at each turn exactly what ``select`` sends over the store's whole history, archive
included: a block still used is never left out because an earlier, smaller budget archived it,
and ``recall`` changes what is held in memory, never what is sent.  The tests after the
property pin where the store's history is not the messages it was given (docs/memory.md).
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import MemoryStore, ReferentEvictionError, SelectCache, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import add_messages, chat_messages, compact_messages, to_messages

from .test_messages import call, conversations
from .test_select import complete_prefixes, same_report


def compact_and_select(store, history, budget, **options):
    """The report of ``compact_messages`` and ``select``'s selection over ``history``, or None for both when they raise."""
    try:
        report = compact_messages(store, budget, **options)
    except ReferentEvictionError:
        with pytest.raises(ReferentEvictionError):
            select(history, budget, tokenizer="whitespace", cache=SelectCache(), **options)
        return None, None
    return report, select(history, budget, tokenizer="whitespace", cache=SelectCache(), **options)


@settings(max_examples=60, deadline=None)
@given(
    conversations(pin=True),
    st.lists(st.integers(0, 160), min_size=1, max_size=8),
    st.sampled_from(dsgc_fast.POLICIES),
    st.sampled_from(["raise", "roots_only"]),
    st.booleans(),
)
def test_each_turn_sends_what_select_sends_over_the_whole_history(messages, budgets, policy, mode, recall):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    ends = [k for k in complete_prefixes(messages) if k >= 2]  # each turn has a user message
    fed = 0
    for turn, budget in enumerate(budgets):
        end = ends[min(turn, len(ends) - 1)]
        add_messages(store, copy.deepcopy(messages[fed:end]))
        fed = end
        history = messages[:fed]
        if not any("dsgc" in m for m in history):  # an unannotated history is the store's own, archive included
            assert chat_messages(store.history(), copy=True) == history
        report, got = compact_and_select(store, history, budget, policy=policy, on_over_budget=mode)
        if report is None:
            continue
        same_report(got, report)
        assert got.messages == to_messages(store) and got.used == report.used == store.used
        if report.binding_table is not None:  # the table is a block of the store's history from now on
            return
        if recall and store.archived_ids():  # recall holds more in memory; the next turn decides the same
            store.recall(store.archived_ids()[:1])


def test_a_result_archived_at_a_small_budget_is_sent_when_a_later_turn_needs_it():
    """The issue's failure: the mirror archived the binder before its use arrived and never brought it back."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    lookup = {"role": "assistant", "content": None, "tool_calls": [call("c1", "lookup", '{"account": "ACC-7731"}')]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ACC-7731 kyc status cleared on 2024-03-02"}
    said = [("system", "billing support rules"), ("user", "check account ACC-7731 for me")]
    history = [{"role": role, "content": text} for role, text in said] + [lookup, result]
    history += [{"role": "assistant", "content": "ACC-7731 is in good standing"}]
    history += [{"role": "user", "content": "thanks, and the weather today?"}]
    add_messages(store, copy.deepcopy(history))
    compact_messages(store, 10, on_over_budget="roots_only")  # a small budget: the lookup goes to the archive
    assert "m3" in store.archived_ids()
    later = [{"role": "assistant", "content": "sunny"}, {"role": "user", "content": "did ACC-7731 kyc clear?"}]
    add_messages(store, copy.deepcopy(later))
    report, got = compact_and_select(store, history + later, 400)
    assert "m3" in report.kept and "m3" in store.ids()  # back in the same transaction, no recall asked
    assert got.messages == to_messages(store)


@pytest.mark.parametrize("budget", [6, 9, 14, 40])
def test_a_pinned_block_is_kept_at_every_compaction_though_its_message_does_not_say_so(budget):
    """``pinned`` lives in the block (the ``dsgc`` annotation), not in the chat message: ``to_messages`` and
    ``history()`` give the message without it, so ``select`` over them alone would not pin the block."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("the refund policy: 30 days", id="policy", pinned=True, cost=5)
    add_messages(store, [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}])
    for _ in range(2):
        add_messages(store, [{"role": "user", "content": "what about the weather"}])
        report = compact_messages(store, budget, on_over_budget="roots_only")
        assert "policy" in report.kept and "policy" in store.ids()
        add_messages(store, [{"role": "assistant", "content": "sunny"}])
    assert all("dsgc" not in m for m in chat_messages(store.history()))


@pytest.mark.parametrize("budget", [3, 6, 9])
def test_a_declared_prerequisite_is_kept_with_its_dependent(budget):
    """``depends_on`` is the store's own (no chat message carries it): whenever a dependent is kept, so is its
    prerequisite, archived or not before the compaction."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("ledger header row", id="head", cost=3)
    store.add("unrelated note about lunch", id="lunch", cost=3)
    store.compact("lunch", 3)
    assert "head" in store.archived_ids()
    store.add("ledger totals for march", id="totals", depends_on=["head"], cost=3)
    report = store.compact("ledger totals for march", budget, policy="dsgc")
    assert "totals" not in report.kept or "head" in report.kept
    assert set(report.kept) <= set(store.ids())


def test_deleted_blocks_are_out_of_every_decision():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    ids = add_messages(
        store,
        [
            {"role": "user", "content": "my card is 4111 1111 1111 1111"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what is my card number"},
        ],
    )
    compact_messages(store, 6, on_over_budget="roots_only")
    assert ids[0] in store.archived_ids()
    store.delete(ids[0])
    report = compact_messages(store, 500)
    assert ids[0] not in report.kept + report.evicted and ids[0] not in store.ids()
    history = chat_messages(store.history(), copy=True)
    assert all("4111" not in m["content"] for m in history)
    assert select(history, 500, tokenizer="whitespace", cache=SelectCache()).messages == to_messages(store)
