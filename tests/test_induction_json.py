"""JSON-aware induction of chat messages: keys are schema vocabulary, values name things."""

from __future__ import annotations

import json
import types

import pytest

from dsgc_fast import MemoryStore, SelectCache, select
from dsgc_fast.induction import DESCRIPTION_WINDOW, induce_messages, induce_referents, key_noun, trace_edges
from dsgc_fast.memory.messages import add_messages, compact_messages, remove_messages


def call(call_id: str, function: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": function, "arguments": json.dumps(arguments)}}


def step(call_id: str, function: str, **arguments) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [call(call_id, function, **arguments)]}


def result(call_id: str, **payload) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def chat(n: int) -> list[dict]:
    """``n`` user/assistant exchanges that name nothing."""
    return [
        m
        for k in range(n)
        for m in (user(f"Question {k} about the weather?"), {"role": "assistant", "content": "Sunny."})
    ]


def test_keys_parameter_and_function_names_are_never_identifiers():
    """Two lookups share only schema vocabulary (keys, a parameter, a function name): no
    step -> result edge, no referent named after it.  Read as prose, ``order_id`` and
    ``current_working_directory`` would be snake-case identifiers."""
    messages = [
        step("a", "get_order_details", current_working_directory="home", order_id=12),
        result("a", order_id=12, current_working_directory="home", status="shipped"),
        step("b", "get_order_details", current_working_directory="work", order_id=7),
        result("b", order_id=7, current_working_directory="work", status="open"),
        {"role": "assistant", "content": "Both came from get_order_details."},
    ]
    assert trace_edges(messages).tolist() == [[1, 0], [3, 2]]
    found = induce_messages(messages, pin_referents=True)
    names = {name.lower() for binds in found.binds if binds for name in binds}
    names |= {name.lower() for uses in found.uses for name in uses}
    assert names.isdisjoint({"order_id", "current_working_directory", "get_order_details", "status"})


@pytest.mark.parametrize(
    ("payload", "arguments"),
    [
        ({"account": 987654}, {"account_id": 987654}),  # a number of four or more digits
        ({"account": "3426812"}, {"account": 3426812}),  # a digit string meets the number
        ({"symbol": "AAPL"}, {"ticker": "AAPL"}),  # an all-capitals code
        ({"airport": "SFO"}, {"origin": "SFO"}),
        ({"current_working_directory": "document"}, {"folder": "document"}),  # a folder name under path keys
        ({"files": ["notes", "draft"]}, {"file_name": "draft"}),
        ({"ticket_id": 2}, {"ticket_id": 2}),  # a short id, qualified by its key's stem
    ],
)
def test_values_link_a_step_to_the_result_holding_them(payload, arguments):
    messages = [step("a", "lookup"), result("a", **payload), step("b", "act", **arguments)]
    assert trace_edges(messages).tolist() == [[1, 0], [2, 1]]


@pytest.mark.parametrize(
    ("payload", "arguments"),
    [
        ({"count": 12}, {"limit": 12}),  # a small number alone
        ({"ticket_id": 2}, {"order_id": 2}),  # a short id of another kind
        ({"status": "open"}, {"status": "open"}),  # a plain word not under a path key
        ({"date": "2024-03-01"}, {"since": "2024-03-01"}),
        ({"active": True}, {"active": True}),
        ({"mode": "rear_left"}, {"mode": "rear_left"}),  # a word code: an enumerated value
    ],
)
def test_leaves_that_name_nothing_link_nothing(payload, arguments):
    messages = [step("a", "lookup"), result("a", **payload), step("b", "act", **arguments)]
    assert trace_edges(messages).tolist() == [[1, 0]]


def test_key_stems_are_head_nouns():
    assert [key_noun(k) for k in ("order_id", "receiver_id", "current_working_directory", "file_name", "stockList", "id")] == [
        "order", "receiver", "directory", "file", "stock", None,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "query", ["Cancel that order.", "Cancel the order I placed.", "Please cancel my most recent order."]
)
def test_a_key_stem_binds_its_value(query):
    """``{"order_id": 12446}`` is what "that order" / "the order" means, three turns later."""
    messages = [
        user("Find my latest purchase."),
        step("a", "get_purchase"),
        result("a", order_id=12446, status="shipped"),
        *chat(3),
        user(query),
    ]
    pinned = induce_messages(messages, pin_referents=True)
    assert pinned.binds[2] == {"12446": "order 12446"} and pinned.uses[-1] == ["12446"]
    query_edges = [e for e in induce_messages(messages).edges.tolist() if e[0] == len(messages) - 1]
    assert query_edges == [[len(messages) - 1, 2]]  # the store's form: an edge to the result


def test_a_stem_inside_a_longer_phrase_is_no_description():
    messages = [step("a", "get_merchant"), result("a", merchant_id=55120), *chat(2),
                user("Did the merchant onboarding batch clear?")]  # fmt: skip
    assert induce_messages(messages, pin_referents=True).uses[-1] == []


def test_a_key_stem_resolves_beyond_the_window():
    """Prose head nouns look back ``window`` blocks; a key's stem reaches the newest block naming one."""
    gap = chat(DESCRIPTION_WINDOW)
    messages = [step("a", "get_purchase"), result("a", order_id=12446), *gap, user("Cancel that order.")]
    assert induce_messages(messages, pin_referents=True).uses[-1] == ["12446"]
    assert induce_messages(messages, pin_referents=True, window=2).uses[-1] == ["12446"]
    prose = ["Urgent: account 8841-C disputes a charge.", *(m["content"] for m in gap), "Did that account clear KYC?"]
    assert induce_referents(prose)[1][-1] == []


def test_a_step_links_to_the_user_message_whose_values_it_repeats():
    messages = [
        user("Move the report into the temp folder."),
        step("a", "mv", source="report.pdf", destination="temp"),
        result("a", ok=True),
        user("What does AAPL trade at?"),
        step("b", "get_stock_info", symbol="AAPL"),
    ]
    assert trace_edges(messages).tolist() == [[1, 0], [2, 1], [4, 3]]


def test_only_the_newest_user_message_holding_a_value_is_linked():
    messages = [user("Check order 55120."), {"role": "assistant", "content": "Done."},
                user("Again: order 55120, please."), step("a", "check", order_id=55120)]  # fmt: skip
    assert trace_edges(messages).tolist() == [[3, 2]]


def test_messages_are_induced_by_default_and_kept_apart_from_declared_edges():
    messages = [user("What does AAPL trade at?"), step("a", "get_stock_info", symbol="AAPL"), result("a", price=201)]
    with MemoryStore() as store:
        ids = add_messages(store, messages)
        assert store.induced_edges() == [(ids[1], ids[0])]  # step -> user message; result -> call is declared
        assert [list(store.get(i).depends_on) for i in ids] == [[], [], [ids[1]]]
    with MemoryStore() as store:
        add_messages(store, messages, induce=False)
        assert store.induced_edges() == []
    declared = [messages[0], {**messages[1], "dsgc": {"depends_on": []}}, messages[2]]
    with MemoryStore() as store:
        add_messages(store, declared)  # a record that declares its structure is not induced
        assert store.induced_edges() == []


@pytest.mark.parametrize("mapping", [dict, types.MappingProxyType])
def test_the_induced_marker_is_refused_in_every_meta(tmp_path, mapping):
    """meta["induced"] is the store's own marker: a block added without induce=True may not
    carry it, or it would be read as induced when the archive is opened again."""
    path = tmp_path / "marker.sqlite"
    with MemoryStore(archive=path) as store:
        store.add("Ticket PRJ-9 opens the migration.", id="intro", induce=True)
        marked = store.get("intro").meta
        with pytest.raises(ValueError, match="'induced' is reserved.*induce=True"):
            store.add("Step 1 of PRJ-9 done.", id="s1", meta=mapping(dict(marked)))
        store.add("Step 1 of PRJ-9 done.", id="s1", meta=mapping({}))
        assert store.induced_edges() == []
    with MemoryStore(archive=path) as reopened:
        assert reopened.induced_edges() == []


def test_retracted_induced_edges_leave_the_store(tmp_path):
    """A key mentioned by more than ``max_fanout + 1`` blocks is a hub: its induced edges are
    withdrawn from the store's graph (and stay withdrawn when the archive is opened again)."""
    path = tmp_path / "hub.sqlite"
    with MemoryStore(archive=path) as store:
        store.add("Ticket PRJ-9 opens the migration.", id="intro", induce=True)
        for k in range(8):
            store.add(f"Step {k} of PRJ-9 done.", id=f"s{k}", induce=True)
        assert store.induced_edges() == [(f"s{k}", "intro") for k in range(8)]
        support = store.compact("PRJ-9 status?", budget=1000).decisions["intro"].propagated
        store.add("PRJ-9 again.", id="s8", induce=True)  # a ninth dependent: PRJ-9 is a hub
        assert store.induced_edges() == []
        assert support > 0 == store.compact("PRJ-9 status?", budget=1000).decisions["intro"].propagated
    with MemoryStore(archive=path) as reopened:
        assert reopened.induced_edges() == []


def test_select_induces_as_the_store_path():
    """``select`` decides as ``add_messages`` + ``compact_messages``, induced edges included."""
    messages = [
        user("Merchant M-2207 says the payout is late."),
        step("a", "check_payout_status", merchant="M-2207"),
        result("a", payout="scheduled"),
        user("Thanks. Any news on KYC for sole traders?"),
    ]
    with MemoryStore(tokenizer="whitespace") as store:
        add_messages(store, messages)
        want = compact_messages(store, 20, policy="dsgc").to_dict()
    got = select(messages, 20, policy="dsgc", tokenizer="whitespace", cache=SelectCache()).report.to_dict()
    want.pop("compaction"), got.pop("compaction")
    assert got == want
    assert {d["id"]: d for d in got["decisions"]}["m0"]["support_from"][0][0] == "m1"  # step -> user message


def test_deleted_blocks_leave_induction():
    """A step links to the newest result holding its value; once that result is deleted it
    links to the older one, as if the store had never held the deleted one."""
    messages = [step("a", "find"), result("a", order_id=55120), step("b", "find"), result("b", order_id=55120),
                step("c", "cancel_order", order_id=55120)]  # fmt: skip
    with MemoryStore() as store:
        ids = add_messages(store, messages)
        assert (ids[4], ids[3]) in store.induced_edges()
        remove_messages(store, ids[2])  # the second lookup, call and result
        assert store.induced_edges() == [(ids[4], ids[1])]


def test_a_cut_tool_result_is_induced_from_its_original_when_reopened(tmp_path):
    notes = " ".join(f"line {k} of the order history" for k in range(60))
    messages = [user("Find my order and cancel it."), step("a", "get_order"), result("a", notes=notes, order_id=55120),
                step("b", "cancel_order", order_id=55120)]  # fmt: skip
    path = tmp_path / "cut.sqlite"
    with MemoryStore(archive=path, tokenizer="whitespace") as store:
        ids = add_messages(store, messages)
        induced = store.induced_edges()
        assert (ids[3], ids[2]) in induced
        report = compact_messages(store, 40, on_over_budget="truncate")
        assert ids[2] in report.truncated
    with MemoryStore(archive=path, tokenizer="whitespace") as reopened:
        assert reopened.induced_edges() == induced
