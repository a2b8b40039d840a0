"""The long-range generator: deterministic, one holder of the fact, a question without it, a
tool-heavy variant of the same conversation."""

from __future__ import annotations

from dsgc_bench.bfcl.metrics import kept_values
from dsgc_bench.bfcl.policies import Embeddings, recency_first_fit, similarity
from dsgc_bench.longrange import KINDS, PROBES, conversation, points, to_point
from dsgc_fast import MemoryStore
from dsgc_fast.encoders import make_encoder
from dsgc_fast.memory.messages import add_messages, check_messages, compact_messages


def test_deterministic_and_well_formed():
    a, b = conversation(7), conversation(7)
    assert a == b
    assert conversation(8) != a
    for seed in range(30):
        conv = conversation(seed)
        assert conv.kind == KINDS[seed % 3]
        assert conv.messages[-1]["role"] == "user"
        assert conv.value.casefold() not in conv.messages[-1]["content"].casefold()
        assert conv.value in conv.messages[conv.fact_index]["content"]
        assert conv.fact_index <= 6 and len(conv.messages) >= 2 * 24 + 1
        roles = [m["role"] for m in conv.messages]
        assert roles[0::2] == ["user"] * len(roles[0::2]) and set(roles[1::2]) == {"assistant"}


def test_points_have_one_holder_and_recency_loses_the_fact():
    emb = Embeddings(make_encoder("lexical"))
    pts = points(range(4))
    assert all(len(p.needed) == 1 and len(p.holders[p.needed[0]]) == 1 for p in pts)
    recency = [kept_values(p, recency_first_fit(p, emb, p.budget(0.05)))[0] for p in pts]
    similar = [kept_values(p, similarity(p, emb, p.budget(0.25)))[0] for p in pts]
    assert not any(recency)
    assert any(similar)


def test_tool_heavy_variant_is_the_same_conversation_with_tool_units():
    for seed in range(6):
        plain, tools = conversation(seed, "city"), conversation(seed, "city", tools=True)
        assert tools.value == plain.value and tools.tools and not plain.tools
        check_messages(tools.messages)
        no_tools = [m for m in tools.messages if m["role"] != "tool" and not m.get("tool_calls")]
        assert tuple(no_tools) == plain.messages
        assert sum(m["role"] == "tool" for m in tools.messages) >= 10
        assert tools.messages[tools.fact_index] == plain.messages[plain.fact_index]
        point = to_point(tools)  # raises unless the fact turn is its only holder
        assert point.kinds.count("call") == point.kinds.count("result")


def test_probes_replace_the_question():
    conv = conversation(2, "name")
    for question in PROBES:
        point = to_point(conv, question)
        assert point.texts[-1] == question and point.texts[:-1] == to_point(conv).texts[:-1]


def test_recent_tool_units_leave_room_for_the_fact_asked_for():
    """Tool-heavy chat, 5% budget, lexical: the store default keeps the fact turn the question
    asks for.  With a working weight so large that the working set outranks every block (what
    the support scaled by the query's own relevance did), tool units fill the budget instead.
    Messages only (``values=False``): the value table's reserve takes most of a 5% budget here
    (the tool results' values), which docs/benchmark.md measures over the conversations."""
    conv = conversation(0, "name", tools=True)
    budget = to_point(conv).budget(0.05)

    def fact_kept(**options):
        with MemoryStore(encoder=make_encoder("lexical")) as store:
            ids = add_messages(store, list(conv.messages))
            return ids[conv.fact_index] in compact_messages(store, budget, values=False, **options).kept

    assert fact_kept()
    assert not fact_kept(working_weight=1e6)
