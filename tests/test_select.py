"""``dsgc_fast.select``: the store path's decisions without a store, its cache, over-budget modes, ``min_budget``.

The reference is ``MemoryStore`` + ``add_messages`` + ``compact_messages`` on the same messages:
``select`` must keep the same blocks for the same reasons, report the same explanations and
return the messages ``to_messages`` gives.
"""

from __future__ import annotations

import collections
import copy
import json
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import MemoryStore, ReferentEvictionError, SelectCache, min_budget, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.compaction import cut_marker
from dsgc_fast.memory.messages import (
    SessionError,
    add_messages,
    check_messages,
    compact_messages,
    read_jsonl,
    to_messages,
)
from dsgc_fast.memory.token_counts import TOKENS_REPLY_PRIMING, conversation_tokens

from .test_messages import call, conversations, sentences

SAMPLE = [m for _, m in read_jsonl(__file__.rsplit("/", 1)[0] + "/data/support_triage.jsonl")]
TOKENIZERS = ["whitespace", "approx", None]


@st.composite
def sessions(draw):
    """A conversation with tool units, maybe a pinned message, and maybe a referent bound by
    one user turn and used by a later message (the "that account" pattern)."""
    messages = draw(conversations(pin=True, reuse=draw(st.booleans())))
    users = [k for k, m in enumerate(messages) if m["role"] == "user"]
    if len(users) >= 2 and draw(st.booleans()):
        binder = draw(st.sampled_from(users[:-1]))
        user = draw(st.sampled_from([k for k in range(binder + 1, len(messages)) if messages[k]["role"] != "tool"]))
        messages[binder].setdefault("dsgc", {})["binds"] = {"that account": draw(sentences)}
        messages[user].setdefault("dsgc", {})["uses"] = ["that account"]
    return messages


def store_path(messages, budget, tokenizer, **options):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=tokenizer)
    add_messages(store, copy.deepcopy(messages))
    return store, compact_messages(store, budget, **options)


def same_report(selection, report):
    want = report.to_dict()
    got = selection.report.to_dict()
    want.pop("compaction"), got.pop("compaction")
    assert got == want
    assert [selection.ids[i] for i in selection.indices] == [
        i for i in report.kept if not i.startswith("binding-table-")
    ]


@given(
    sessions(),
    st.integers(0, 220),
    st.sampled_from(dsgc_fast.POLICIES),
    st.sampled_from(TOKENIZERS),
    st.sampled_from(["raise", "roots_only", "truncate"]),
)
def test_select_decides_as_the_store_path(messages, budget, policy, tokenizer, on_over_budget):
    options = {"policy": policy, "on_over_budget": on_over_budget}
    try:
        store, report = store_path(messages, budget, tokenizer, **options)
    except ReferentEvictionError:
        with pytest.raises(ReferentEvictionError):
            select(messages, budget, tokenizer=tokenizer, cache=SelectCache(), **options)
        return
    got = select(messages, budget, tokenizer=tokenizer, cache=SelectCache(), **options)
    same_report(got, report)
    assert got.messages == to_messages(store)
    assert got.used == report.used and got.over_budget == report.over_budget
    assert {got.ids[i]: t for i, t in got.truncated.items()} == report.truncated
    check_messages(got.messages)


@given(sessions(), st.integers(0, 220))
def test_a_growing_history_on_one_cache_decides_as_a_fresh_call(messages, budget):
    cache = SelectCache()
    for k in complete_prefixes(messages):
        prefix = messages[:k]
        try:
            fresh = select(prefix, budget, cache=SelectCache(), tokenizer="whitespace")
        except (ReferentEvictionError, ValueError):
            continue
        cached = select(prefix, budget, cache=cache, tokenizer="whitespace")
        assert cached.messages == fresh.messages and cached.report.to_dict() == fresh.report.to_dict()


def complete_prefixes(messages):
    """Prefix lengths with no tool call waiting for a result."""
    out, waiting = [], 0
    for k, message in enumerate(messages, start=1):
        waiting += len(message.get("tool_calls") or ()) - (message["role"] == "tool")
        if waiting == 0:
            out.append(k)
    return out


class CountingEncoder(LexicalEncoder):
    def __init__(self):
        super().__init__()
        self.texts = []

    def encode(self, texts):
        self.texts += list(texts)
        return super().encode(texts)


def test_a_call_encodes_and_counts_only_new_messages():
    counted = []

    def words(text):
        counted.append(text)
        return len(text.split())

    encoder = CountingEncoder()
    cache = SelectCache(encoder)
    # values=False: a value table counts its own lines and texts (test_value_table)
    select(SAMPLE[:12], 200, cache=cache, tokenizer=words, values=False)
    assert len(encoder.texts) == len(set(encoder.texts)) == cache.encoded
    before, counted_before = len(encoder.texts), len(counted)
    grown = SAMPLE[:14]
    select(grown, 200, cache=cache, tokenizer=words, values=False)
    new = encoder.texts[before:]
    assert new == [dsgc_fast.memory.messages.message_text(m) for m in grown[12:]]  # the two new messages, nothing else
    assert 0 < len(counted) - counted_before <= 6  # the two new messages' parts, never the old ones
    again = len(encoder.texts)
    select(grown, 150, cache=cache, tokenizer=words)  # same history, another budget: nothing new
    assert len(encoder.texts) == again


def test_an_edited_history_is_parsed_again_and_decides_as_fresh():
    cache = SelectCache()
    select(SAMPLE, 120, cache=cache)
    edited = copy.deepcopy(SAMPLE)
    edited[5]["content"] = "Next: how long does verification of a charity take?"
    assert (
        select(edited, 120, cache=cache).report.to_dict() == select(edited, 120, cache=SelectCache()).report.to_dict()
    )
    shorter = SAMPLE[:10]
    assert select(shorter, 60, cache=cache).messages == select(shorter, 60, cache=SelectCache()).messages


def test_inputs_stay_untouched_and_results_share_nothing():
    messages = copy.deepcopy(SAMPLE)
    before = copy.deepcopy(messages)
    cache = SelectCache()
    first = select(messages, 120, cache=cache)
    assert messages == before
    kept = copy.deepcopy(first.messages)
    messages[1]["content"] = "changed afterwards"
    messages[2]["tool_calls"][0]["function"]["name"] = "changed"
    assert first.messages == kept  # the caller's later edits do not reach a returned selection
    first.messages[0]["content"] = "edited by the caller"
    first.messages[1].setdefault("tool_calls", []).append(call("x"))
    again = select(before, 120, cache=cache)
    assert again.messages == kept  # nor do edits of a returned selection reach the cache


def test_the_default_cache_is_per_encoder_and_threads_share_it():
    encoder = LexicalEncoder()
    assert dsgc_fast.memory.history.default_cache(encoder) is dsgc_fast.memory.history.default_cache(encoder)
    assert dsgc_fast.memory.history.default_cache(encoder) is not dsgc_fast.memory.history.default_cache(
        LexicalEncoder()
    )
    want = select(SAMPLE, 150, encoder=encoder).report.to_dict()
    results = []
    histories = [SAMPLE[:k] for k in (14, 17, 19)]

    def work():
        for history in histories * 3:
            results.append((len(history), select(history, 150, encoder=encoder).report.to_dict()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fresh = {len(h): select(h, 150, cache=SelectCache()).report.to_dict() for h in histories}
    assert all(got == fresh[n] for n, got in results) and fresh[19] == want


def test_used_is_what_the_chat_request_costs():
    got = select(SAMPLE, 150)
    assert got.binding_table is None and conversation_tokens(got.messages) == got.used + TOKENS_REPLY_PRIMING
    tabled = select(SAMPLE, 60)  # t01 + t19 cost 39, t12 29 more; the table of its binding 16
    assert tabled.binding_table is not None and "that account: 8841-C" in tabled.binding_table
    assert conversation_tokens(tabled.messages) == tabled.used + TOKENS_REPLY_PRIMING
    assert tabled.messages[1] == {"role": "system", "content": tabled.binding_table}


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], "message 1: unknown role 'robot'"),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": None, "tool_calls": [call("c1")]}],
            r"message 1: tool call\(s\) \['c1'\] have no result",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c9", "content": "r"}],
            "message 1: tool result for call 'c9' has no matching",
        ),
        ([{"role": "user", "content": "a\ud800"}], "message 0: text is not valid Unicode"),
    ],
)
def test_invalid_histories_are_refused_naming_the_message(messages, match):
    with pytest.raises(SessionError, match=match):
        select(messages, 100, cache=SelectCache())
    with pytest.raises(SessionError, match=match):
        min_budget(messages, cache=SelectCache())


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="messages must be a sequence"):
        select({"role": "user", "content": "a"}, 10)
    with pytest.raises(ValueError, match="on_over_budget"):
        select(SAMPLE, 10, on_over_budget="ignore")
    with pytest.raises(ValueError, match=r"live must hold message positions in \[0, 19\)"):
        select(SAMPLE, 100, live=[19])
    with pytest.raises(ValueError, match="budget"):
        select(SAMPLE, -1)
    with pytest.raises(ValueError, match="not the cache's encoder"):
        select(SAMPLE, 100, encoder=LexicalEncoder(), cache=SelectCache())
    with pytest.raises(ValueError, match="query is required"):
        select([{"role": "system", "content": "rules"}], 100)
    with pytest.raises(ValueError, match="tokenizer: unknown tokenizer"):
        select(SAMPLE, 100, tokenizer="gpt2")
    assert select([], 10, query="anything").messages == []


def test_live_positions_add_roots_with_their_units():
    got = select(SAMPLE, 120, live=[3])  # t04 is a tool result: its call t03 comes along
    assert {3, 2} <= set(got.indices)
    assert got.report.decisions["t04"].root and got.report.decisions["t03"].root


# -- over budget -------------------------------------------------------------------------------
def big_turn(rows=3000):
    call_ = call("cX", "dump_ledger", "{}")
    return SAMPLE + [
        {"role": "assistant", "content": None, "tool_calls": [call_]},
        {"role": "tool", "tool_call_id": "cX", "content": "ledger row ok; " * rows},
    ]


def test_over_budget_raises_by_default_and_min_budget_is_the_edge():
    need = min_budget(SAMPLE)
    assert select(SAMPLE, need).used <= need
    with pytest.raises(ReferentEvictionError, match="budget"):
        select(SAMPLE, need - 1)
    with pytest.raises(ReferentEvictionError):
        store_path(SAMPLE, need - 1, None)
    assert store_path(SAMPLE, need, None)[1].used <= need
    assert min_budget(SAMPLE, live=[3]) > need  # the extra root (and its unit) costs


def test_roots_only_keeps_just_the_roots_and_says_so():
    got = select(SAMPLE, 20, on_over_budget="roots_only")
    assert got.over_budget and got.indices == [0, 18] and got.used > 20
    assert "OVER BUDGET" in got.report.summary() and got.report.to_dict()["over_budget"] is True
    check_messages(got.messages)
    assert [m["content"] for m in got.messages] == [SAMPLE[0]["content"], SAMPLE[18]["content"]]


def test_truncate_cuts_the_largest_tool_result_to_fit_and_marks_it():
    messages = big_turn()
    budget = 400
    assert min_budget(messages) > budget
    got = select(messages, budget, on_over_budget="truncate")
    assert not got.over_budget and got.used <= budget and list(got.truncated) == [20]
    cut = got.truncated[20]
    assert cut.original_cost > cut.cost and cut.length == len(messages[20]["content"])
    sent = got.messages[-1]["content"]
    assert sent.endswith(cut_marker(cut.cut, cut.length)) and messages[20]["content"].startswith(
        sent.split("\n[dsgc")[0]
    )
    assert conversation_tokens(got.messages) == got.used + TOKENS_REPLY_PRIMING
    check_messages(got.messages)
    store, report = store_path(messages, budget, None, on_over_budget="truncate")
    same_report(got, report)
    assert to_messages(store) == got.messages


def test_truncate_levels_several_large_results_and_falls_back_to_the_roots():
    calls = [call("a1", "dump"), call("a2", "dump"), call("a3", "dump")]
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "dump the three ledgers"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a1", "content": "alpha row; " * 900},
        {"role": "tool", "tool_call_id": "a2", "content": "beta row; " * 600},
        {"role": "tool", "tool_call_id": "a3", "content": "gamma"},
    ]
    got = select(messages, 900, on_over_budget="truncate", cache=SelectCache())
    assert sorted(got.truncated) == [3, 4] and got.used <= 900 and not got.over_budget
    assert abs(got.truncated[3].cost - got.truncated[4].cost) <= 8  # cut to about one level
    tiny = select(messages, 40, on_over_budget="truncate", cache=SelectCache())
    assert tiny.over_budget and tiny.indices == [0, 1, 2, 3, 4, 5] and sorted(tiny.truncated) == [3, 4]
    assert all(t.text == cut_marker(t.length, t.length) for t in tiny.truncated.values())  # cut to the marker alone
    check_messages(tiny.messages)


def test_the_store_keeps_a_cut_result_cut_with_its_original_in_meta(tmp_path):
    messages = big_turn()
    path = tmp_path / "agent.db"
    with MemoryStore(archive=path) as store:
        ids = add_messages(store, messages)
        report = compact_messages(store, 400, on_over_budget="truncate")
        block = store.get(ids[20])
        assert (
            report.truncated[ids[20]].cost == block.cost
            and block.meta["truncated"]["content"] == messages[20]["content"]
        )
        assert store.used == report.used <= 400
    with MemoryStore(archive=path) as reopened:  # the cut is in the database
        again = reopened.get(ids[20])
        assert again.text == block.text and again.cost == block.cost and again.meta == block.meta


def test_select_reports_a_cut_block_as_the_store_keeps_it():
    """One ``cut_block``: the texts and explanations of a cut result are the store's, and so is the sent message."""
    messages = big_turn()
    got = select(messages, 400, on_over_budget="truncate", cache=SelectCache())
    store, report = store_path(messages, 400, None, on_over_budget="truncate")
    cut_id = got.ids[20]
    assert list(got.truncated) == [20] and cut_id in report.truncated
    assert dict(got.report.texts) == dict(report.texts) and got.report.texts[cut_id] == store.get(cut_id).text
    assert got.report.explain(cut_id) == report.explain(cut_id)
    assert store.get(cut_id).meta["truncated"] == {
        "content": messages[20]["content"],
        "cost": got.truncated[20].original_cost,
    }
    assert got.messages == to_messages(store)


@given(sessions(), st.sampled_from(TOKENIZERS))
def test_min_budget_is_the_smallest_budget_that_does_not_raise(messages, tokenizer):
    cache = SelectCache()
    need = min_budget(messages, tokenizer=tokenizer, cache=cache)
    select(messages, need, tokenizer=tokenizer, cache=cache)
    if need:
        with pytest.raises(ReferentEvictionError):
            select(messages, need - 1, tokenizer=tokenizer, cache=cache)
    for mode in ("roots_only", "truncate"):
        got = select(messages, max(need - 1, 0), tokenizer=tokenizer, cache=cache, on_over_budget=mode)
        assert got.messages and check_messages(got.messages) is None  # always a valid, non-empty context


def test_a_message_edited_in_place_is_seen_on_the_next_call():
    messages = copy.deepcopy(SAMPLE)
    cache = SelectCache()
    select(messages, 150, cache=cache)
    messages[15]["content"] = "Did the new merchant batch clear KYC? Answer about that account too."
    assert (
        select(messages, 150, cache=cache).report.to_dict()
        == select(messages, 150, cache=SelectCache()).report.to_dict()
    )


def test_messages_in_dict_subclasses_are_selected_as_plain_dicts():
    """The history's snapshot of each record copies what the planner accepts, mappings of any
    dict type included (``marshal`` refuses a subclass; ``copied_json`` copies it level by level)."""

    def ordered(value):
        if isinstance(value, dict):
            return collections.OrderedDict((k, ordered(v)) for k, v in value.items())
        return [ordered(v) for v in value] if isinstance(value, list) else value

    plain = select(copy.deepcopy(SAMPLE), 120)
    got = select([ordered(m) for m in SAMPLE], 120, cache=SelectCache())
    assert got.messages == plain.messages
    assert all(type(m) is dict for m in got.messages)


def test_a_json_copy_of_the_messages_is_recognized_as_the_same_history():
    cache = SelectCache()
    select(SAMPLE[:16], 100, cache=cache)
    rows = cache.encoded
    select(json.loads(json.dumps(SAMPLE)), 100, cache=cache)
    assert cache.encoded - rows == 3  # the three messages after the first sixteen


def test_cached_rows_are_bounded():
    cache = SelectCache(max_texts=5)
    select(SAMPLE, 100, cache=cache)
    assert len(cache.rows) <= 5
    assert (
        select(SAMPLE, 100, cache=cache).report.to_dict() == select(SAMPLE, 100, cache=SelectCache()).report.to_dict()
    )
    with pytest.raises(ValueError, match="max_histories"):
        SelectCache(max_histories=0)


def test_selection_fields():
    got = select(SAMPLE, 120)
    assert got.budget == 120 and got.ids[0] == "t01" and len(got.ids) == 19
    assert got.indices == sorted(got.indices) and np.all(np.diff(got.indices) > 0)
    assert got.report.explain("t12").startswith("t12: kept: pinned through t19")
