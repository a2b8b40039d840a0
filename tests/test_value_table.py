"""The value table (``dsgc_fast.memory.value_table``): lines, candidates, rendering, the budget, and ``select``."""

from __future__ import annotations

import copy
import json
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast import MemoryStore, SelectCache, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.block import Block
from dsgc_fast.memory.compaction import table_cost
from dsgc_fast.memory.digest import value_words
from dsgc_fast.memory.digest_blocks import block_digest
from dsgc_fast.memory.line_index import IndexedLines
from dsgc_fast.memory.messages import add_messages, check_messages, compact_messages, message_text, to_messages
from dsgc_fast.memory.token_counts import block_tokens, token_counter
from dsgc_fast.memory.value_table import (
    HEADER,
    RESERVE_CHARS,
    RESERVE_SHARE,
    ROUND_LINES,
    VALUE_TABLE_KIND,
    LineCounts,
    PrefixTokens,
    candidates,
    fill,
    render,
    reserve,
    short_first,
    table_block,
    value_lines,
)

COUNTER = token_counter(None)


def tool_block(content: str, block_id: str = "m3") -> Block:
    message = {"role": "tool", "tool_call_id": "c1", "content": content}
    return Block(id=block_id, text=content, cost=100, seq=3, meta={"role": "tool", "message": message})


def call(k: int, name: str, arguments: dict | list) -> dict:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{k}", "type": "function", "function": function}],
    }


def history(listing: int = 60) -> list[dict]:
    """A session whose first tool result holds an order id among a long listing; the newest turn needs the id."""
    rows = [{"sku": f"SKU-{k:04d}", "note": "in stock at the north warehouse"} for k in range(listing)]
    return [
        {"role": "system", "content": "You manage orders."},
        {"role": "user", "content": "Find my last order."},
        call(1, "find_order", {"customer": "Ada Lovelace"}),
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"order_id": "ORD-77341", "items": rows})},
        {"role": "assistant", "content": "Found it."},
        {"role": "user", "content": "Cancel it please."},
    ]


def test_value_lines_are_the_digest_lines_verbatim():
    block = tool_block('{"order_id": "ORD-1", "total": 12.50, "meta": {"carrier": "DHL"}}')
    assert value_lines(block) == ("order_id -> ORD-1", "total -> 12.50", "meta.carrier -> DHL")


def test_value_lines_of_calls_are_their_arguments_and_other_blocks_have_none():
    message = call(1, "cancel", {"order_id": "ORD-1", "force": True})
    block = Block(id="m2", text=message_text(message), cost=10, seq=2, meta={"role": "assistant", "message": message})
    assert value_lines(block) == ("order_id -> ORD-1", "force -> true")
    listed = call(2, "add", [3, 4])  # arguments that are not an object stand under the function's name
    block = Block(id="m3", text=message_text(listed), cost=10, seq=3, meta={"role": "assistant", "message": listed})
    assert value_lines(block) == ("add -> [3, 4]",)
    assert value_lines(Block(id="t", text="a note 42", cost=3, seq=0)) == ()


def test_candidates_newest_first_deduplicated_and_short():
    lines = IndexedLines.of([("a -> 1", "b -> 2"), (), ("a -> 1", "c -> " + "x" * 50)])
    assert list(candidates(lines, [0, 2])) == [(2, "a -> 1"), (2, "c -> " + "x" * 50), (0, "b -> 2")]
    assert list(candidates(lines, [0, 2], RESERVE_CHARS)) == [(2, "a -> 1"), (0, "b -> 2")]
    assert list(short_first([(2, "c -> " + "x" * 70), (0, "b -> 2")])) == [(0, "b -> 2"), (2, "c -> " + "x" * 70)]


def candidates_twin(lines, sources, max_chars=None):
    """C(S) walked over the lines' texts, as the module docstring states it (the kernel's twin)."""
    seen, out, order, start = set(), [], sorted(sources, reverse=True), 0
    while order:
        for source in order:
            for line in lines[source][start : start + ROUND_LINES]:
                if (max_chars is None or len(line) <= max_chars) and line not in seen:
                    seen.add(line)
                    out.append((source, line))
        order, start = [s for s in order if len(lines[s]) > start + ROUND_LINES], start + ROUND_LINES
    return out


block_lines = st.lists(st.lists(st.text("ab>- 01", max_size=5), max_size=7), max_size=12)


@given(block_lines, st.data(), st.one_of(st.none(), st.integers(0, 5)))
def test_candidates_walk_the_rounds_the_module_states(lines, data, max_chars):
    """The kernel's C(S) over interned ids equals the walk over texts, for any blocks, sources and limit."""
    sources = sorted(data.draw(st.sets(st.integers(0, len(lines) - 1), max_size=15))) if lines else []
    assert list(candidates(IndexedLines.of(lines), sources, max_chars)) == candidates_twin(lines, sources, max_chars)


def test_a_gathered_view_reads_the_lines_of_its_slots():
    """``LineIndex.at``: the view of some slots reads each slot's lines by position, and later appends leave it alone."""
    from dsgc_fast.memory.line_index import LineIndex

    index, texts = LineIndex(), [["x -> 1", "y -> 2"], [], ["x -> 1", "z -> 3"], ["w -> 4"]]
    for block in texts:
        index.append(block)
    view = index.at(np.array([0, 2, 3]))
    index.append(["v -> 5"])
    assert list(candidates(view, [0, 1, 2])) == [(2, "w -> 4"), (1, "x -> 1"), (1, "z -> 3"), (0, "y -> 2")]
    assert len(view) == 3 and len(index.prefix(5)) == 5


def test_render_heads_each_run_of_a_source_with_its_id():
    text = render([(2, "a -> 1"), (2, "b -> 2"), (0, "c -> 3"), (2, "d -> 4")], ["m0", "m1", "m2"])
    assert text == "\n".join([HEADER, "m2:", "a -> 1", "b -> 2", "m0:", "c -> 3", "m2:", "d -> 4"])


def test_candidates_come_in_rounds_newest_block_first():
    lines = IndexedLines.of([["a0", "a1", "a2"], [], ["c0", "c1", "c2", "c3", "c4"], ["a0", "d1"]])
    got = list(candidates(lines, [0, 1, 2, 3]))
    assert ROUND_LINES == 2
    assert got == [(3, "a0"), (3, "d1"), (2, "c0"), (2, "c1"), (0, "a1"), (2, "c2"), (2, "c3"), (0, "a2"), (2, "c4")]
    assert list(candidates(lines, [0, 2], max_chars=1)) == []


def test_fill_takes_the_longest_prefix_that_fits():
    ids = [f"m{k}" for k in range(30)]
    entries = [(k, f"key{k} -> V{k}-{k * 7}") for k in range(30)]
    cost = table_cost(COUNTER)
    for room in (0, 10, 25, 60, 200, 10_000):
        table = fill(entries, ids, room, cost, LineCounts(COUNTER))
        if table is None:
            assert room <= 0 or cost(render(entries[:1], ids)) > room
            continue
        k = len(table.entries)
        assert table.entries == tuple(entries[:k]) and table.text == render(entries[:k], ids)
        assert table.cost == cost(table.text) <= room
        assert k == len(entries) or cost(render(entries[: k + 1], ids)) > room


def test_the_reserve_leaves_a_share_of_the_room_only_when_a_root_depends_on_an_earlier_block():
    """min(s r, r - A, E): s = 1 when no root depends on an earlier block, ``RESERVE_SHARE`` when one does."""
    ids = [f"m{k}" for k in range(40)]
    lines = IndexedLines.of([[f"id{k} -> V{k}"] for k in range(39)] + [[]])
    costs = np.full(40, 50, dtype=np.int64)
    roots = np.array([39])
    cost = table_cost(COUNTER)
    line = cost(render([(0, "id0 -> V0")], ids))
    for budget in (60, 90, 150, 400):
        room = budget - 50
        free = reserve(lines, ids, LineCounts(COUNTER), costs, roots, budget, cost, depends=False)
        held = reserve(lines, ids, LineCounts(COUNTER), costs, roots, budget, cost, depends=True)
        assert held <= RESERVE_SHARE * room and free <= room
        assert held <= free and room - free < line  # all the room, less a line
        left = reserve(lines, ids, LineCounts(COUNTER), costs, roots, budget, cost, depends=False, asked=room // 2)
        assert left <= room - room // 2 and room - room // 2 - left < line  # the room A needs stays free
    # E = 0: a history that fits is sent whole, whatever the room
    assert reserve(lines, ids, LineCounts(COUNTER), costs, roots, int(costs.sum()), cost, depends=False) == 0


def test_the_reserve_leaves_the_room_a_block_the_turn_asks_for_needs():
    """``decided``: A = 0 first; a block at least ``ASKS_FOR`` times as relevant as the mean block
    is asked for, and retain decides again with the room of the blocks it ranks at or above it left free."""
    from types import SimpleNamespace

    from dsgc_fast.memory.value_table import ASKS_FOR, asked_for, decided

    ids = [f"m{k}" for k in range(40)]
    lines = IndexedLines.of([[f"id{k} -> V{k}"] for k in range(39)] + [[]])
    costs = np.arange(10, 50, dtype=np.int64)
    roots = np.array([39])
    cost, budget = table_cost(COUNTER), 400
    rank = np.array([39, 30, 7, *[k for k in range(39) if k not in (7, 30)]])  # by score: the root, 30, 7, ...

    def result(relevance):
        return SimpleNamespace(relevance=relevance, rank=rank, binding_table=None)

    flat = np.full(40, 0.5 / 39)
    flat[39] = 0.5  # the query itself holds half the mass: every earlier block below the mean
    peaked = flat.copy()
    peaked[7] = ASKS_FOR / 40
    below = flat.copy()
    below[7] = 0.99 * ASKS_FOR / 40
    assert asked_for(result(flat), costs, roots) == 0 == asked_for(result(below), costs, roots)
    assert asked_for(result(peaked), costs, roots) == costs[30] + costs[7]  # ranked at or above m7
    assert asked_for(result(peaked), costs, np.array([30, 39])) == costs[7]  # R is not counted

    def runner(relevance):
        calls = []

        def run(b):
            calls.append(b)
            return result(relevance)

        return run, calls

    def inner(depends, asked=0):
        return budget - reserve(
            lines, ids, LineCounts(COUNTER), costs, roots, budget, cost, depends=depends, asked=asked
        )

    asked = int(costs[30] + costs[7])
    assert inner(False) < inner(False, asked)
    assert inner(True, asked) == inner(True)  # A fits the quarter a dependent root leaves: no second decision
    for relevance, depends, expected in (
        (flat, False, [inner(False)]),
        (peaked, False, [inner(False), inner(False, asked)]),
        (flat, True, [inner(True)]),
        (peaked, True, [inner(True)]),
    ):
        run, calls = runner(relevance)
        decided(run, lines, ids, LineCounts(COUNTER), costs, roots, budget, cost, depends=depends)
        assert calls == expected


#: characters at and around the line breaks a counter may split at: letters, digits, marks, spaces, breaks, punctuation
_EDGES = list("aZ09 :.,-_>$[]{}'\"/\t\r\n") + ["\u00df", "\u0663", "\u0301", "\u00a0", "\u3000", "\u2028", "\u0085"]
table_lines = st.lists(st.one_of(st.text(st.sampled_from(_EDGES), max_size=8), st.text(max_size=6)), max_size=10)


@given(table_lines, st.sampled_from(["o200k_base", "cl100k_base", "approx", "whitespace"]))
def test_lines_joined_count_as_their_text(lines, name):
    counter = token_counter(name)
    assert LineCounts(counter).joined(lines) == counter("\n".join(lines))


@given(st.lists(st.tuples(st.integers(0, 3), st.text(st.sampled_from(_EDGES), min_size=1, max_size=8)), max_size=12))
def test_a_prefix_counts_as_its_table(entries):
    ids = ["m0", "call_1", "x'", "9"]
    for name in ("o200k_base", "cl100k_base", "approx"):
        counter = token_counter(name)
        tokens = PrefixTokens(entries, ids, LineCounts(counter))
        assert [tokens(m) for m in range(len(entries) + 1)] == [
            counter(render(entries[:m], ids)) for m in range(len(entries) + 1)
        ]
        assert [tokens.text(m) for m in range(len(entries) + 1)] == [
            render(entries[:m], ids) for m in range(len(entries) + 1)
        ]
        adjacent = sorted(entries, key=lambda e: -e[0])  # each source's entries together, as candidates gives them
        tokens = PrefixTokens(adjacent, ids, LineCounts(counter))
        assert [tokens(m) for m in range(len(adjacent) + 1)] == [
            counter(render(adjacent[:m], ids)) for m in range(len(adjacent) + 1)
        ]


def test_a_table_is_never_digested_nor_tabled_again():
    table = fill([(0, "order_id -> ORD-1")], ["m0"], 100, table_cost(COUNTER), LineCounts(COUNTER))
    made = table_block(table, ["m0"], 9, {"value-table"})
    assert made is not None and made.block.id == "value-table'" and made.block.meta["kind"] == VALUE_TABLE_KIND
    assert made.entries == (("m0", "order_id -> ORD-1"),)
    assert block_digest(made.block, COUNTER) is None and value_lines(made.block) == ()


def test_select_sends_an_evicted_results_values_in_a_system_message():
    messages = history()
    got = select(messages, 60, cache=SelectCache())
    assert 3 not in got.indices  # the listing does not fit
    table = got.report.value_table
    assert table is not None and "order_id -> ORD-77341" in table.block.text
    assert ("m3", "order_id -> ORD-77341") in table.entries
    assert got.messages[1] == {"role": "system", "content": table.block.text}  # after the leading system message
    check_messages(got.messages)
    costs = [block_tokens(message_text(m), m, COUNTER) for m in got.messages]
    assert got.used == sum(costs) <= 60
    assert "value table value-table" in got.report.table()
    assert got.report.to_dict()["value_table"]["entries"][0][0] in ("m2", "m3")


def test_no_table_without_digests_or_under_the_papers_rule():
    messages = history()
    for options in ({"digests": False}, {"policy": "dsgc"}, {"policy": "recency"}):
        got = select(messages, 60, cache=SelectCache(), **options)
        assert got.report.value_table is None
        assert all(m.get("content") != HEADER and not str(m.get("content")).startswith(HEADER) for m in got.messages)


def test_the_store_sends_the_table_select_sends_and_a_deletion_drops_it():
    messages = history()
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None)
    ids = add_messages(store, copy.deepcopy(messages))
    report = compact_messages(store, 60)
    got = select(messages, 60, cache=SelectCache())
    assert report.value_table is not None and report.to_dict() | {"compaction": 0} == got.report.to_dict() | {
        "compaction": 0
    }
    assert to_messages(store) == got.messages and store.used == got.used
    store.delete(ids[3])
    assert all(not str(m.get("content")).startswith(HEADER) for m in to_messages(store))


def test_a_recalled_block_leaves_the_table_and_what_stays_is_costed_as_sent():
    messages = history()
    second = {"order_id": "ORD-10001", "items": []}
    messages[4:4] = [
        call(2, "find_order", {"customer": "Grace Hopper"}),
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps(second)},
    ]
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None)
    ids = add_messages(store, copy.deepcopy(messages))
    table = compact_messages(store, 70).value_table
    assert table is not None and {ids[4], ids[5]} <= {source for source, _ in table.entries}
    store.recall(ids[5])  # the unit comes back whole (its call with it): its values leave the table
    tables = [b for b in store.active_blocks() if b.meta.get("kind") == VALUE_TABLE_KIND]
    assert all(f"{ids[4]}:" not in b.text and f"{ids[5]}:" not in b.text for b in tables)
    assert all(b.cost == table_cost(COUNTER)(b.text) for b in tables)
    assert store.used == sum(b.cost for b in store.active_blocks())
    compact_messages(store, 70)
    store.recall(store.archived_ids())  # everything sent whole: no table
    assert not any(str(m.get("content")).startswith(HEADER) for m in to_messages(store))


def test_a_rolled_back_group_leaves_no_lines_for_the_slot_it_used():
    """A block added and compacted in a group that rolls back is forgotten: the block that takes its slot next
    has its own values (the store's value lines and digests are kept by slot)."""

    def listing(order: str) -> list[dict]:
        rows = [{"sku": f"SKU-{k:04d}", "note": "in stock at the north warehouse"} for k in range(60)]
        result = {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"order_id": order, "items": rows})}
        return [call(1, "find_order", {"customer": "Ada Lovelace"}), result]

    start, end = history()[:2], [{"role": "assistant", "content": "Found it."}, {"role": "user", "content": "Cancel."}]
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None)
    add_messages(store, copy.deepcopy(start))
    with pytest.raises(RuntimeError), store.atomic():
        add_messages(store, listing("ORD-11111") + copy.deepcopy(end))
        assert "ORD-11111" in compact_messages(store, 60).value_table.block.text
        raise RuntimeError("roll back")
    messages = start + listing("ORD-22222") + end
    add_messages(store, copy.deepcopy(messages[2:]))
    report = compact_messages(store, 60)
    got = select(messages, 60, cache=SelectCache())
    assert "ORD-22222" in report.value_table.block.text and "ORD-11111" not in report.value_table.block.text
    assert to_messages(store) == got.messages


def test_a_rolled_back_compaction_takes_its_value_table_with_it():
    """After a group that compacted rolls back, the store sends what it sent before the group: no table
    holding values of blocks the rollback removed."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None)
    add_messages(store, copy.deepcopy(history()))
    before = compact_messages(store, 60).value_table
    sent = to_messages(store)
    with pytest.raises(RuntimeError), store.atomic():
        add_messages(store, [call(2, "find_order", {"customer": "Ada"}), {"role": "tool", "tool_call_id": "c2",
                     "content": json.dumps({"order_id": "ORD-55555", "rows": list(range(80))})},
                     {"role": "user", "content": "And the other one?"}])  # fmt: skip
        assert "ORD-55555" in compact_messages(store, 60).value_table.block.text
        raise RuntimeError("roll back")
    assert before is not None and to_messages(store) == sent
    assert "ORD-55555" not in json.dumps(to_messages(store))


def test_a_reopened_store_sends_the_table_it_sent_and_a_deletion_erases_it(tmp_path):
    path = tmp_path / "store.db"
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None, archive=path)
    add_messages(store, copy.deepcopy(history()))
    assert "ORD-77341" in compact_messages(store, 60).value_table.block.text
    sent, used = to_messages(store), store.used
    store.close()
    again = MemoryStore(encoder=LexicalEncoder(), tokenizer=None, archive=path)
    assert to_messages(again) == sent and again.used == used
    again.save(tmp_path / "copy.db")
    loaded = MemoryStore.load(tmp_path / "copy.db", encoder=LexicalEncoder(), tokenizer=None)
    assert to_messages(loaded) == sent
    source = next(a.block.id for a in again.archived() if "ORD-77341" in a.block.text)
    again.delete(source)
    assert "ORD-77341" not in json.dumps(to_messages(again))
    again.close()
    assert b"ORD-77341" not in path.read_bytes()


@pytest.mark.parametrize(
    "recorded",
    ["not json", "[]", '{"id": "value-table"}', '{"id": 1, "text": "t", "cost": 1, "seq": 0, "entries": []}',
     '{"id": "v", "text": "t", "cost": -1, "seq": 0, "entries": []}',
     '{"id": "v", "text": "t", "cost": 1, "seq": 0, "entries": [["m1"]]}'],
)  # fmt: skip
def test_a_damaged_recorded_table_is_a_clear_error_naming_the_file(tmp_path, recorded):
    path = tmp_path / "store.db"
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=None, archive=path)
    add_messages(store, copy.deepcopy(history()))
    compact_messages(store, 60)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE settings SET value = ? WHERE key = 'value_table'", (recorded,))
    conn.close()
    with pytest.raises(ValueError, match=r"corrupt: the stored value table"):
        MemoryStore(encoder=LexicalEncoder(), tokenizer=None, archive=path)


values = st.from_regex(r"[A-Z]{2,4}-[0-9]{2,6}", fullmatch=True)


@st.composite
def tool_sessions(draw):
    """Sessions of user turns and tool units whose results are JSON records and listings."""
    messages: list[dict] = [{"role": "system", "content": "You help."}]
    for k in range(draw(st.integers(0, 6))):
        messages.append({"role": "user", "content": f"Step {k}: look up {draw(values)}."})
        record = {"id": draw(values), "rows": [{"code": draw(values)} for _ in range(draw(st.integers(0, 12)))]}
        messages.append(call(k, draw(st.sampled_from(["look_up", "list_rows"])), {"ref": draw(values)}))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": json.dumps(record)})
    messages.append({"role": "user", "content": f"Now use {draw(values)}."})
    return messages


@given(tool_sessions(), st.integers(0, 600), st.sampled_from([None, "whitespace"]))
def test_sent_cost_within_budget_and_the_newest_turn_always_sent(messages, budget, tokenizer):
    got = select(messages, budget, tokenizer=tokenizer, on_over_budget="roots_only", cache=SelectCache())
    counter = token_counter(tokenizer)
    sent = sum(block_tokens(message_text(m), m, counter) for m in got.messages)
    assert sent == got.used
    assert got.over_budget or sent <= budget
    assert got.messages[-1] == messages[-1]
    check_messages(got.messages)
    table = got.report.value_table
    if table is not None:  # verbatim lines of messages not sent whole
        assert len({line for _, line in table.entries}) == len(table.entries)
        for source, line in table.entries:
            k = got.ids.index(source)
            assert k not in got.indices
            assert all(word in message_text(messages[k]) for word in value_words(line.split(" -> ", 1)[-1]))


def test_the_adapters_send_the_value_table():
    lc = pytest.importorskip("langchain_core.messages")
    from dsgc_fast.integrations.langchain import select_messages

    messages = history()
    chosen = select(messages, 60, cache=SelectCache())
    assert chosen.tables == [chosen.value_table] and chosen.value_table is not None
    sent = select_messages(lc.convert_to_messages(messages), max_tokens=60, cache=SelectCache())
    assert [m.content for m in sent] == [m["content"] or "" for m in chosen.messages]
    assert isinstance(sent[1], lc.SystemMessage) and sent[1].content == chosen.value_table
