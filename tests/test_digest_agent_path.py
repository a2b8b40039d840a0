"""Digests on the agent path: ``select`` and ``MemoryStore`` send a tool result's digest in place.

The decision is ``compaction.decide``'s digest rule (whole / digest / evict per tool unit);
these tests check what a caller relies on: transcripts stay valid, values are verbatim, the
budget is charged the digest's framed cost, repeated compactions lose nothing more, select
and the store agree, ``recall`` brings the whole back, and a binder still used keeps its value.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast import MemoryStore, min_budget, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.digest import is_digest, render_digest, value_words
from dsgc_fast.memory.digest_blocks import block_digest
from dsgc_fast.memory.explain_html import kind_of
from dsgc_fast.memory.messages import add_messages, check_messages, compact_messages, to_messages
from dsgc_fast.memory.token_counts import block_tokens, token_counter

from .test_messages import sentences
from .test_select import same_report, sessions

TOKENIZER = "approx"


def orders(k0: int, n: int) -> str:
    rows = [
        {"id": f"ORD-{k}", "status": "shipped", "total": f"{k * 0.25:.2f}", "note": "packed with care and sent " * 6}
        for k in range(k0, k0 + n)
    ]
    return json.dumps({"orders": rows, "page": 1})


def call(call_id: str, name: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def session(bound: str | None = None) -> list[dict]:
    """Two listings, then a question; with ``bound``, the first listing binds "the order" to it
    and an assistant message between them uses it."""
    listing = {"role": "tool", "tool_call_id": "c1", "content": orders(1000, 30)}
    note = {"role": "assistant", "content": "Noted the order you mentioned."}
    if bound is not None:
        listing["dsgc"] = {"binds": {"the order": bound}}
        note["dsgc"] = {"uses": ["the order"]}
    return [
        {"role": "system", "content": "You help with a shop's orders."},
        {"role": "user", "content": "Show my orders."},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "list_orders")]},
        listing,
        note,
        {"role": "user", "content": "And the archived ones?"},
        {"role": "assistant", "content": None, "tool_calls": [call("c2", "list_archived"), call("c3", "count")]},
        {"role": "tool", "tool_call_id": "c2", "content": orders(2000, 25)},
        {"role": "tool", "tool_call_id": "c3", "content": '{"count": 55}'},
        {"role": "assistant", "content": "You have 55 orders in all."},
        {"role": "user", "content": "Cancel ORD-1003 and ORD-2010."},
    ]


def whole_cost(messages: list[dict]) -> int:
    return select(messages, 10**9, tokenizer=TOKENIZER, digests=False).used


def budgets(messages: list[dict]) -> list[int]:
    total = whole_cost(messages)
    return sorted({total * k // 40 for k in range(2, 40)})


def digested_somewhere(messages: list[dict]) -> list[int]:
    found = [
        b for b in budgets(messages) if select(messages, b, tokenizer=TOKENIZER, digests=True, values=False).digested
    ]
    assert found, "no budget digests anything: the fixture no longer exercises digests"
    return found


def test_digest_sent_in_place_keeps_the_transcript_valid_and_values_verbatim():
    messages = session()
    before = copy.deepcopy(messages)
    counter = token_counter(TOKENIZER)
    for budget in digested_somewhere(messages):
        s = select(messages, budget, tokenizer=TOKENIZER, digests=True, values=False)
        check_messages(s.messages)  # every tool result answers a kept call, every call is answered
        sent = dict(zip(s.indices, s.messages))
        for i, digest in s.digested.items():
            original, message = messages[i], sent[i]
            assert {k: v for k, v in message.items() if k != "content"} == {
                k: v for k, v in original.items() if k != "content"
            }
            assert message["content"] == digest.text and is_digest(digest.text)
            assert set(digest.kept) <= set(value_words(original["content"]))
            assert set(digest.kept).isdisjoint(digest.dropped)
            for line in digest.text.split("\n")[1:]:
                if " -> " in line and not line.endswith(")"):
                    assert line.split(" -> ", 1)[1].strip('"') in original["content"]
            assert digest.cost == block_tokens(digest.text, message, counter)
            assert s.report.decisions[s.ids[i]].cost == digest.cost
        assert s.used <= budget
        assert s.used == sum(s.report.decisions[s.ids[i]].cost for i in s.indices)
    assert messages == before


def test_explanations_and_html_say_digested():
    messages = session()
    budget = digested_somewhere(messages)[0]
    s = select(messages, budget, tokenizer=TOKENIZER, digests=True)
    for i, digest in s.digested.items():
        decision = s.report.decisions[s.ids[i]]
        assert decision.kept and decision.digest == digest
        assert decision.why().startswith(f"digested (kept {len(digest.kept)} of ")
        assert "digest: dropped values:" in s.report.explain(s.ids[i])
        assert kind_of(decision, s.report.truncated) == "digested"
        assert s.report.to_dict()["digested"][s.ids[i]]["kept"] == list(digest.kept)
    assert "k-digested" in s.report.to_html()
    rows = {line.split()[0]: line.split()[1] for line in s.report.table().splitlines()[4:] if line.strip()}
    assert {i for i, decision in rows.items() if decision == "digested"} == {s.ids[i] for i in s.digested}


def test_policy_dsgc_and_digests_off_never_digest():
    messages = session()
    for budget in budgets(messages):
        assert not select(messages, budget, tokenizer=TOKENIZER, digests=False).digested
        assert not select(messages, budget, tokenizer=TOKENIZER, policy="dsgc", digests=True).digested
        assert not select(messages, budget, tokenizer=TOKENIZER, policy="dsgc").digested
    with pytest.raises(TypeError, match="digests must be a bool"):
        select(messages, 100, digests="yes")


def test_digests_are_on_by_default_with_the_agent_policy():
    messages = session()
    assert digested_somewhere(messages)
    for budget in budgets(messages):
        default = select(messages, budget, tokenizer=TOKENIZER)
        on = select(messages, budget, tokenizer=TOKENIZER, digests=True)
        assert default.indices == on.indices and default.messages == on.messages
        assert default.digested.keys() == on.digested.keys()
    store = store_of(messages)
    budget = digested_somewhere(messages)[0]
    report = compact_messages(store, budget, values=False)
    assert report.digested, "MemoryStore's compaction digests by default too"


def store_of(messages: list[dict]) -> MemoryStore:
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=TOKENIZER)
    add_messages(store, copy.deepcopy(messages))
    return store


def test_select_and_store_agree():
    messages = session()
    for budget in digested_somewhere(messages):
        s = select(messages, budget, tokenizer=TOKENIZER, digests=True)
        store = store_of(messages)
        report = compact_messages(store, budget, digests=True)
        same_report(s, report)
        assert to_messages(store) == s.messages
        assert store.used == s.used


def test_repeated_compactions_lose_nothing_more_and_recall_brings_the_whole_back():
    messages = session()
    budget = digested_somewhere(messages)[0]
    store = store_of(messages)
    first = compact_messages(store, budget, digests=True, values=False)
    sent = to_messages(store)
    assert first.digested
    for block_id, digest in first.digested.items():
        block = store.get(block_id)
        assert block.text == digest.text and block.cost == digest.cost
        assert block_digest(block, store.tokenizer) is None  # a digest of a digest is itself
        assert render_digest(block.text, block_id) == block.text
    again = compact_messages(store, budget, digests=True, values=False)
    assert not again.digested and to_messages(store) == sent and again.kept == first.kept
    assert sorted(again.evicted) == sorted(store.archived_ids())  # the decision covers the archive too
    block_id = next(iter(first.digested))
    slot = next(
        k
        for k, m in enumerate(messages)
        if m.get("tool_call_id") == store.get(block_id).meta["message"].get("tool_call_id")
    )
    (whole,) = store.recall([block_id])
    assert whole.id == block_id and whole.text == messages[slot]["content"]
    assert store.get(block_id).meta["message"]["content"] == messages[slot]["content"]
    assert messages[slot] in to_messages(store)


@pytest.mark.parametrize(("bound", "in_digest"), [("ORD-1003", True), ("ORD-1025", False)])
def test_a_binder_still_used_keeps_its_bound_value(bound, in_digest):
    messages = session(bound)
    assert (bound in render_digest(messages[3]["content"], "m3")) == in_digest
    seen_user_kept = False
    for budget in budgets(messages):
        s = select(messages, budget, tokenizer=TOKENIZER, digests=True)
        if 4 in s.indices:
            seen_user_kept = True
            assert 3 in s.indices
            if 3 in s.digested:
                assert in_digest and bound in s.digested[3].text
        check_messages(s.messages)
    assert seen_user_kept


def test_nothing_retain_keeps_is_evicted():
    messages = session("ORD-1003")
    for budget in budgets(messages):
        whole = select(messages, budget, tokenizer=TOKENIZER, digests=False)
        digested = select(messages, budget, tokenizer=TOKENIZER, digests=True, values=False)
        assert set(whole.indices) <= set(digested.indices)
        if not digested.digested:
            assert digested.indices == whole.indices and digested.used == whole.used


def test_digests_are_built_once_per_block(monkeypatch):
    import dsgc_fast.memory.history as history

    built = []

    def counted(block, counter):
        built.append(block.id)
        return block_digest(block, counter)

    monkeypatch.setattr(history, "block_digest", counted)
    messages = session()
    cache = history.SelectCache(LexicalEncoder())
    for budget in budgets(messages)[::4]:
        select(messages, budget, tokenizer=TOKENIZER, cache=cache, digests=True)
    grown = [*messages, {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks."}]
    select(grown, whole_cost(grown) // 2, tokenizer=TOKENIZER, cache=cache, digests=True)
    assert sorted(built) == sorted(f"m{k}" for k in range(len(grown)))


def test_store_refuses_a_digests_flag_that_is_not_a_bool():
    store = store_of(session())
    with pytest.raises(TypeError, match="digests must be a bool"):
        compact_messages(store, 10**6, digests=1)


@st.composite
def listing_sessions(draw):
    """``test_select``'s sessions (tool units, pins, a bound referent) with JSON listings as tool
    results (long notes and long lists, which digests reduce)."""
    messages = draw(sessions())
    for m in messages:
        if m["role"] == "tool":
            n, k0, note = draw(st.integers(0, 40)), draw(st.integers(0, 999)), draw(sentences)
            rows = [{"id": f"X-{k0 + j}", "n": j, "note": " ".join([note] * 12)} for j in range(n)]
            m["content"] = json.dumps({"items": rows, "size": n})
    return messages


@given(listing_sessions(), st.integers(0, 100))
def test_random_sessions_select_and_store_agree_within_budget(messages, share):
    need = min_budget(messages, tokenizer=TOKENIZER)
    budget = need + (whole_cost(messages) - need) * share // 100
    s = select(messages, budget, tokenizer=TOKENIZER, digests=True)
    check_messages(s.messages)
    assert s.used <= budget
    assert set(select(messages, budget, tokenizer=TOKENIZER).indices) <= set(s.indices)
    store = store_of(messages)
    report = compact_messages(store, budget, digests=True)
    same_report(s, report)
    assert to_messages(store) == s.messages


def test_an_archived_digest_is_recalled_whole():
    messages = session()
    store = store_of(messages)
    first = compact_messages(store, digested_somewhere(messages)[0], digests=True, values=False)
    block_id = next(iter(first.digested))
    compact_messages(store, min_budget(messages, tokenizer=TOKENIZER), digests=True, values=False)
    assert block_id in store.archived_ids()
    whole = {b.id: b for b in store.recall([block_id])}[block_id]
    original = next(m for m in messages if m.get("tool_call_id") == whole.meta["message"]["tool_call_id"])
    assert whole.text == original["content"] and "digested" not in whole.meta
    assert original in to_messages(store)
    check_messages(to_messages(store))


def test_the_langchain_adapter_sends_the_digest_it_was_charged_for():
    lc = pytest.importorskip("langchain_core.messages")
    from dsgc_fast.integrations.langchain import select_messages

    chat = session()
    messages = lc.convert_to_messages(chat)
    for budget in digested_somewhere(chat):
        chosen = select(chat, budget, tokenizer=TOKENIZER, digests=True)
        sent = select_messages(messages, max_tokens=budget, tokenizer=TOKENIZER, digests=True)
        assert [m.content for m in sent] == [m["content"] or "" for m in chosen.messages]
        for k, digest in chosen.digested.items():
            (out,) = [m for m in sent if getattr(m, "tool_call_id", None) == chat[k]["tool_call_id"]]
            assert out.content == digest.text and is_digest(out.content) and out is not messages[k]
        assert messages == lc.convert_to_messages(chat)  # the caller's messages are not modified


def test_the_agents_sdk_filter_sends_the_digest_it_was_charged_for():
    pytest.importorskip("agents")
    from dsgc_fast.integrations.openai_agents import InputFilter

    items = [
        {"role": "user", "content": "Show my orders."},
        {"type": "function_call", "call_id": "c1", "name": "list_orders", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": orders(1000, 30)},
        {"role": "assistant", "content": "You have 30 orders."},
        {"type": "function_call", "call_id": "c2", "name": "list_archived", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": orders(2000, 25)},
        {"role": "user", "content": "Cancel ORD-1003 and ORD-2010."},
    ]
    whole = InputFilter(10**9, tokenizer=TOKENIZER).select(items)
    assert whole == items
    digests = []
    for budget in range(200, 2_000, 100):
        sent = InputFilter(budget, tokenizer=TOKENIZER, digests=True, values=False).select(items)
        digests += [i["output"] for i in sent if i.get("type") == "function_call_output" and is_digest(i["output"])]
        outputs = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
        assert outputs == {i["call_id"] for i in sent if i.get("type") == "function_call"}  # units stay whole
    assert digests, "no budget sent a digest: the fixture no longer exercises digests"
    assert all("ORD-" in text for text in digests)
    assert items[2]["output"] == orders(1000, 30)  # the caller's items are not modified
