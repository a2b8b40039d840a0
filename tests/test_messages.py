"""Chat messages <-> store: lossless round trips, tool-call units never split, valid output."""

from __future__ import annotations

import copy
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import (
    SessionError,
    add_messages,
    check_messages,
    compact_messages,
    load_session,
    read_jsonl,
    remove_messages,
    to_messages,
    write_jsonl,
)
from dsgc_fast.memory.store import MemoryStore

WORDS = ["account", "refund", "kyc", "charge", "payout", "weather", "ticket", "invoice", "status", "search"]


def call(call_id, name="lookup", arguments='{"q": "x"}'):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def new_store():
    return MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")


sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@st.composite
def conversations(draw, first_call=0, pin=False, reuse=False):
    """A system prompt, then turns: user, 0-2 tool rounds (1-3 parallel calls each), answer.

    With ``pin``, one message may carry a ``pinned`` annotation (a root anywhere, even
    inside a tool-call unit); with ``reuse``, every turn numbers its calls from
    ``first_call`` again (``call_0`` every turn, as some providers do).
    """
    messages = [{"role": "system", "content": draw(sentences)}]
    number = first_call
    for _ in range(draw(st.integers(1, 5))):
        number = first_call if reuse else number
        messages.append({"role": "user", "content": draw(sentences)})
        for _ in range(draw(st.integers(0, 2))):
            calls = [
                call(f"call_{number + j}", draw(st.sampled_from(WORDS)), json.dumps({"q": draw(sentences)}))
                for j in range(draw(st.integers(1, 3)))
            ]
            number += len(calls)
            messages.append({"role": "assistant", "content": draw(st.none() | sentences), "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": draw(sentences)} for c in calls]
        messages.append({"role": "assistant", "content": draw(sentences)})
    chosen = draw(st.integers(0, len(messages) - 1)) if pin else 0
    if chosen:
        messages[chosen]["dsgc"] = {"pinned": True}
    return messages


def units_of(messages, ids):
    """Tool-call units as block-id sets: an assistant message with calls plus all its results
    (``messages`` may hold plain blocks too)."""
    owner, units = {}, {}
    for message, block_id in zip(messages, ids):
        for c in message.get("tool_calls") or ():
            owner[c["id"]] = block_id
            units.setdefault(block_id, {block_id})
        if message.get("role") == "tool":
            units[owner[message["tool_call_id"]]].add(block_id)
    return list(units.values())


def assert_units_whole(store, units):
    active = set(store.ids())
    for unit in units:
        assert unit <= active or not (unit & active), f"tool unit {sorted(unit)} split: active {sorted(unit & active)}"


@given(
    st.booleans().flatmap(lambda reuse: conversations(pin=True, reuse=reuse)),
    st.lists(st.tuples(st.integers(0, 150), st.sampled_from(dsgc_fast.POLICIES)), min_size=1, max_size=3),
    st.integers(0, 10),
)
def test_tool_units_never_split_and_output_is_valid(messages, steps, recall_seed):
    store = new_store()
    ids = add_messages(store, messages)
    units = units_of(messages, ids)
    newest_user = [i for m, i in zip(messages, ids) if m["role"] == "user"][-1]
    for budget, policy in steps:
        try:
            report = compact_messages(store, budget, policy=policy)
        except dsgc_fast.ReferentEvictionError:
            continue
        for unit in units:  # the decision itself keeps units whole (before any rendering)
            assert unit <= set(report.kept) or not unit & set(report.kept)
        assert_units_whole(store, units)
        assert ids[0] in store and newest_user in store  # system prompt and newest user turn are live roots
        out = to_messages(store)
        check_messages(out)
        archived = store.archived_ids()
        store.recall(archived[recall_seed % max(len(archived), 1) :][:2])
        assert_units_whole(store, units)
        check_messages(to_messages(store))


@given(conversations(), conversations(first_call=1000))
def test_round_trip_without_eviction_is_exact(first, second):
    store = new_store()
    messages = first + second[1:]
    add_messages(store, first)
    add_messages(store, second[1:])  # incremental: a later batch answers nothing earlier
    assert to_messages(store) == messages
    buffer = io.StringIO()
    write_jsonl(to_messages(store), buffer)
    buffer.seek(0)
    assert [m for _, m in read_jsonl(buffer)] == messages


def test_round_trip_keeps_every_field_and_strips_annotations():
    messages = [
        {"role": "system", "content": "rules", "dsgc": {"id": "sys"}},
        {
            "role": "user",
            "name": "ana",
            "content": [{"type": "text", "text": "look up 8841-C"}, {"type": "image_url", "image_url": {"url": "x"}}],
        },
        {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call("c1"), call("c2", "kyc", "{}")]},
        {"role": "tool", "tool_call_id": "c2", "content": "cleared", "dsgc": {"binds": {"kyc status": "cleared"}}},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "found"}]},
    ]
    store = new_store()
    ids = add_messages(store, copy.deepcopy(messages))
    assert ids[0] == "sys" and store.get("sys").pinned
    assert store.get(ids[2]).text == 'lookup({"q": "x"})\nkyc({})'
    assert store.get(ids[1]).text == "look up 8841-C"
    assert store.get(ids[3]).binds["kyc status"] == "cleared"
    want = [{k: v for k, v in m.items() if k != "dsgc"} for m in messages]
    assert to_messages(store) == want
    assert [list(m) for m in to_messages(store)] == [list(m) for m in want]  # key order too


def test_tool_unit_is_evicted_and_recalled_together():
    messages = [
        {"role": "system", "content": "you are an agent"},
        {"role": "user", "content": "what is the weather in paris"},
        {"role": "assistant", "content": None, "tool_calls": [call("w1", "weather", '{"city": "paris"}')]},
        {"role": "tool", "tool_call_id": "w1", "content": "sunny and warm in paris today with light wind"},
        {"role": "assistant", "content": "it is sunny in paris"},
        {"role": "user", "content": "refund my kyc invoice"},
    ]
    store = new_store()
    ids = add_messages(store, messages)
    report = compact_messages(store, 12)
    assert ids[2] in report.evicted and ids[3] in report.evicted
    assert report.decisions[ids[3]].unit == (ids[2],)
    check_messages(to_messages(store))
    back = store.recall([ids[3]])  # the result alone is asked for; its call comes with it
    assert [b.id for b in back] == [ids[2], ids[3]]
    assert to_messages(store) == [messages[0], messages[2], messages[3], messages[5]]


def test_tool_result_for_an_archived_call_recalls_the_call():
    store = new_store()
    add_messages(
        store,
        [
            {"role": "system", "content": "agent"},
            {"role": "user", "content": "search the ledger"},
            {"role": "assistant", "content": None, "tool_calls": [call("s1", "search"), call("s2", "search")]},
            {"role": "tool", "tool_call_id": "s1", "content": "ledger row one"},
        ],
    )
    store.compact("nothing relevant", 2, live=[])
    assert "m2" not in store
    add_messages(store, [{"role": "tool", "tool_call_id": "s2", "content": "ledger row two"}])
    assert {"m2", "m3", "m4"} <= set(store.ids())
    check_messages(to_messages(store))


def reused_ids_session(turns=3):
    """A session whose every turn calls ``call_0`` (and ``call_1``) again."""
    messages = [{"role": "system", "content": "agent"}]
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"status of order {t}"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_0"), call("call_1", "kyc")]},
            {"role": "tool", "tool_call_id": "call_1", "content": f"kyc for order {t} cleared"},
            {"role": "tool", "tool_call_id": "call_0", "content": f"order {t} shipped"},
            {"role": "assistant", "content": f"order {t} shipped"},
        ]
    return messages


@pytest.mark.parametrize("batch", [1, 2, 3, 100])
def test_a_call_id_reused_in_a_later_turn_pairs_each_result_with_its_own_call(tmp_path, batch):
    """Regression (issue 28, defect 15): ``call_0`` in a second turn raised ``duplicate tool
    call id`` and made the thread unusable; chat APIs need ids unique only within an
    assistant message and its results.  Added in any batches (and resumed from the file
    between a call and its results), each result depends on its own call, units stay whole,
    and deleting the newest unit leaves the older ones paired."""
    messages = reused_ids_session()
    path = tmp_path / f"reused-{batch}.db"
    ids = []
    for k in range(0, len(messages), batch):
        with MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path) as store:
            ids += add_messages(store, copy.deepcopy(messages[k : k + batch]))
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
    assert to_messages(store) == messages
    callers = [i for m, i in zip(messages, ids) if m.get("tool_calls")]
    for m, i in zip(messages, ids):
        if m["role"] == "tool":
            caller = [c for c in callers if store.get(c).seq < store.get(i).seq][-1]
            assert store.get(i).depends_on == (caller,)
    units = units_of(messages, ids)
    for budget in (10, 25, 40, 60):
        compact_messages(store, budget, on_over_budget="roots_only")
        assert_units_whole(store, units)
        check_messages(to_messages(store))
        store.recall(store.archived_ids())
    remove_messages(store, callers[-1])
    left = messages[:-4] + messages[-1:]
    assert to_messages(store) == left
    add_messages(store, copy.deepcopy(messages[-5:]))  # the same turn again, ids and all
    assert to_messages(store) == left + messages[-5:]
    store.close()


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "call_0", "content": "r"}], "no matching"),
        (reused_ids_session(1) + [{"role": "tool", "tool_call_id": "call_0", "content": "r"}], "must follow"),
        (reused_ids_session(1)[:4] + [{"role": "tool", "tool_call_id": "call_1", "content": "r"}], "a second tool"),
    ],
)
def test_a_result_for_a_call_of_an_earlier_turn_is_still_refused(messages, match):
    with pytest.raises(SessionError, match=match):
        add_messages(new_store(), messages)
    with pytest.raises(SessionError, match=match):
        dsgc_fast.select(messages, 100, tokenizer="whitespace")


def test_binding_table_is_rendered_after_the_system_prompt():
    store = new_store()
    add_messages(
        store,
        [
            {"role": "system", "content": "triage"},
            {
                "role": "user",
                "content": "account 8841-C, the one flagged last week, disputes a billing charge",
                "dsgc": {"binds": {"that account": "8841-C"}},
            },
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "did that account clear KYC?", "dsgc": {"uses": ["that account"]}},
        ],
    )
    report = compact_messages(store, 1 + 5 + 5)
    assert report.binding_table is not None
    out = to_messages(store)
    assert out == [
        {"role": "system", "content": "triage"},
        {"role": "system", "content": "that account: 8841-C (block m1)"},
        {"role": "user", "content": "did that account clear KYC?"},
    ]


def test_compact_messages_needs_a_query_without_user_messages():
    store = new_store()
    add_messages(store, [{"role": "system", "content": "rules"}])
    with pytest.raises(ValueError, match="query is required"):
        compact_messages(store, 10)
    assert compact_messages(store, 10, query="rules").kept == ["m0"]


@pytest.mark.parametrize(
    ("lines", "where", "match"),
    [
        (['{"role": "user", "content": "hi"}', "{not json"], "line 2", "invalid JSON"),
        (['{"role": "tool", "tool_call_id": "c9", "content": "x"}'], "line 1", "no matching assistant tool call"),
        (
            [
                '{"role": "user", "content": "a", "dsgc": {"id": "x"}}',
                '{"role": "user", "content": "b", "dsgc": {"id": "x"}}',
            ],
            "line 2",
            "duplicate block id 'x' \\(already on line 1\\)",
        ),
        (
            ['{"role": "user", "content": "a", "dsgc": {"depends_on": ["ghost"]}}'],
            "line 1",
            "unknown dependency id 'ghost'",
        ),
        (['{"text": "plain", "id": "p", "depends_on": ["nope"]}'], "line 1", "unknown dependency id 'nope'"),
        (['["a list"]'], "line 1", "expected a JSON object"),
        (['{"role": "user", "content": 5}'], "line 1", "content must be"),
        (['{"role": "user", "content": "a", "dsgc": {"colour": 1}}'], "line 1", "unknown 'dsgc' annotation field"),
        (['{"id": "b"}'], "line 1", "needs a string 'text'"),
        (
            [
                '{"role": "user", "content": "a"}',
                '{"role": "assistant", "content": null, "tool_calls": '
                '[{"id": "c1", "function": {"name": "f"}}, {"id": "c1", "function": {"name": "g"}}]}',
            ],
            "line 2",
            "duplicate tool call id 'c1' in one assistant message",
        ),
        (
            [
                '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}',
                '{"role": "tool", "tool_call_id": "c1", "content": "a"}',
                '{"role": "tool", "tool_call_id": "c1", "content": "b"}',
            ],
            "line 3",
            "second tool result",
        ),
        (['{"role": "user", "content": "x", "tool_calls": []}'], "line 1", "only assistant messages"),
        (
            ['{"role": "assistant", "content": null, "tool_calls": ["c1"]}'],
            "line 1",
            "each tool call needs a string 'id'",
        ),
        (['{"role": "user", "content": "x", "dsgc": {"pinned": "yes"}}'], "line 1", "pinned must be"),
        (['{"role": "user", "content": "x", "dsgc": {"cost": -2}}'], "line 1", "cost must be a non-negative"),
    ],
)
def test_session_errors_name_the_line_and_add_nothing(lines, where, match):
    store = new_store()
    source = io.StringIO("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match=match) as err:
        load_session(store, source)
    assert err.value.where == where and str(err.value).startswith(where)
    assert store.total == 0


def test_blank_lines_keep_line_numbers_and_message_indexes_name_errors():
    with pytest.raises(SessionError, match="^line 4: invalid JSON"):
        read_jsonl(io.StringIO('{"role": "user", "content": "a"}\n\n   \n{oops\n'))
    with pytest.raises(SessionError, match="^message 1: tool result for call 'zz'"):
        add_messages(
            new_store(), [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "zz", "content": "b"}]
        )


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "tool", "tool_call_id": "a", "content": "x"}], "no open assistant tool call"),
        ([{"role": "assistant", "tool_calls": [call("a")]}, {"role": "user", "content": "x"}], "have no result"),
        (
            [
                {"role": "assistant", "tool_calls": [call("a")]},
                {"role": "tool", "tool_call_id": "a"},
                {"role": "tool", "tool_call_id": "a"},
            ],
            "no open assistant tool call",
        ),
    ],
)
def test_check_messages_rejects_invalid_lists(messages, match):
    with pytest.raises(ValueError, match=match):
        check_messages(messages)


def test_check_messages_accepts_pending_final_calls():
    check_messages(
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a"},
        ]
    )


def test_the_turn_in_progress_is_live():
    store = new_store()
    add_messages(
        store,
        [
            {"role": "system", "content": "agent"},
            {"role": "user", "content": "refund the kyc invoice for the account"},
            {"role": "assistant", "content": "refund kyc invoice account answered"},
            {"role": "user", "content": "check the weather"},
            {"role": "assistant", "content": None, "tool_calls": [call("w", "forecast", "{}")]},
            {"role": "tool", "tool_call_id": "w", "content": "rain later"},
        ],
    )
    report = compact_messages(store, 1 + 3 + 1 + 2)
    assert report.kept == ["m0", "m3", "m4", "m5"] and report.query == "check the weather"
    assert all(report.decisions[i].root for i in report.kept)


def test_a_pinned_tool_result_keeps_its_unit_whole_under_escalation():
    store = new_store()
    add_messages(
        store,
        [
            {"role": "system", "content": "agent"},
            {
                "role": "user",
                "content": "account 8841-C, the one flagged last week, disputes a billing charge",
                "dsgc": {"binds": {"that account": "8841-C"}},
            },
            {"role": "assistant", "content": None, "tool_calls": [call("k1", "kyc", "{}"), call("k2", "ledger", "{}")]},
            {"role": "tool", "tool_call_id": "k1", "content": "kyc cleared", "dsgc": {"pinned": True}},
            {"role": "tool", "tool_call_id": "k2", "content": "ledger row for the account"},
            {"role": "user", "content": "so did that account clear?", "dsgc": {"uses": ["that account"]}},
        ],
    )
    report = compact_messages(store, 1 + 2 + 2 + 5 + 5 + 5)  # roots: system, the tool unit, last user; table
    assert report.binding_table is not None and report.evicted == ["m1"]
    assert {"m2", "m3", "m4"} <= set(report.kept)
    check_messages(to_messages(store))


@pytest.mark.parametrize(
    ("batches", "where", "match"),
    [
        (
            [
                [
                    {"role": "user", "content": "a", "dsgc": {"binds": {"tool_call:c1": "f"}}},
                    {"role": "tool", "tool_call_id": "c1", "content": "r"},
                ]
            ],
            "message 0",
            "binds may not name 'tool_call:c1'",
        ),
        ([[{"text": "note", "binds": {"tool_result:c1": "x"}}]], "message 0", "binds may not name 'tool_result:c1'"),
        (
            [
                [
                    {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                    {"role": "user", "content": "interrupt"},
                    {"role": "tool", "tool_call_id": "c1", "content": "r"},
                ]
            ],
            "message 1",
            r"tool call\(s\) \['c1'\] still wait",
        ),
        (
            [
                [
                    {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                    {"role": "assistant", "content": None, "tool_calls": [call("c2")]},
                ]
            ],
            "message 1",
            "still wait",
        ),
        (
            [
                [
                    {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
                    {"role": "tool", "tool_call_id": "c1", "content": "r"},
                    {"text": "a note"},
                ]
            ],
            "message 2",
            r"\['c2'\] still wait",
        ),
        (
            [
                [{"role": "assistant", "content": None, "tool_calls": [call("c1")]}],
                [{"role": "user", "content": "later"}],
            ],
            "message 0",
            "still wait",
        ),  # the open call comes from the store
        (
            [
                [
                    {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                    {"role": "tool", "tool_call_id": "c1", "content": "r"},
                    {"role": "assistant", "content": None, "tool_calls": [call("c2")]},
                    {"role": "tool", "tool_call_id": "c2", "content": "r"},
                    {"role": "user", "content": "next"},
                ],
                [{"role": "tool", "tool_call_id": "c9", "content": "r"}],
            ],
            "message 0",
            "no matching assistant tool call",
        ),
        (
            [[{"text": "forged", "meta": {"role": "tool", "message": {"role": "tool", "tool_call_id": "zz"}}}]],
            "message 0",
            "may not use the keys",
        ),
    ],
)
def test_sessions_that_would_not_round_trip_are_refused_at_input(batches, where, match):
    """Regression: these were accepted, then compaction split a tool unit or ``to_messages``
    raised (a hijacked ``tool_call:`` referent, a message between a call and its result, a
    plain block posing as a message).  Now the batch is refused, naming the message."""
    store = new_store()
    for batch in batches[:-1]:
        add_messages(store, batch)
    before = store.total
    with pytest.raises(SessionError, match=match) as err:
        add_messages(store, batches[-1])
    assert err.value.where == where and store.total == before


def test_an_open_call_is_answered_in_a_later_batch_even_when_archived():
    store = new_store()
    add_messages(store, [{"role": "user", "content": "look it up"},
                         {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
                         {"role": "tool", "tool_call_id": "c1", "content": "first"}])  # fmt: skip
    store.compact("nothing", 0, live=[])  # everything archived, the open call too
    add_messages(
        store, [{"role": "tool", "tool_call_id": "c2", "content": "second"}, {"role": "user", "content": "ok"}]
    )
    check_messages(to_messages(store))


def _nested_list(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value, 1]
    return value


def test_a_message_kept_uncopied_in_its_meta_still_obeys_the_nesting_limit():
    """A block's meta holds the message one level down: a message nested ``MAX_NESTING``
    levels is refused as meta, one level less is kept, as a deep copy of the caller's."""
    from dsgc_fast.memory._nesting import MAX_NESTING

    store = MemoryStore(tokenizer="approx")
    message = {"role": "user", "content": "hi", "x": _nested_list(MAX_NESTING - 1)}
    (block_id,) = add_messages(store, [message])
    message["x"][0].append("changed")
    assert store.get(block_id).meta["message"]["x"] == _nested_list(MAX_NESTING - 1)
    with pytest.raises(SessionError, match=f"message 0: meta is nested more than {MAX_NESTING} levels deep"):
        add_messages(store, [{"role": "user", "content": "hi", "x": _nested_list(MAX_NESTING)}])
    with pytest.raises(SessionError, match=f"message 0: the message is nested more than {MAX_NESTING} levels"):
        add_messages(store, [{"role": "user", "content": "hi", "x": _nested_list(MAX_NESTING + 1)}])
