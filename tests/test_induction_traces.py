"""Tool-trace edges from OpenAI-style message lists."""

from __future__ import annotations

import json

import pytest

from dsgc_fast.induction import message_texts, trace_edges


def call(call_id: str, function: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": function, "arguments": json.dumps(arguments)}}


REFUND = [
    {"role": "system", "content": "You are a billing agent."},
    {"role": "user", "content": "Refund the last charge for customer Jones."},
    {"role": "assistant", "content": None, "tool_calls": [call("c1", "lookup_customer", name="Jones")]},
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": json.dumps({"account": "8841-C", "charge": "ch_9f2a", "amount": 4200}),
    },
    {"role": "assistant", "content": None, "tool_calls": [call("c2", "refund", charge="ch_9f2a", amount=4200)]},
    {"role": "tool", "tool_call_id": "c2", "content": "ok"},
    {"role": "assistant", "content": "Refunded 42.00 on account 8841-C."},
]


def test_lookup_gates_action():
    # result -> call (3, 2), (5, 4); action -> lookup result (4, 3); final text names 8841-C (6, 3)
    assert trace_edges(REFUND).tolist() == [[3, 2], [4, 3], [5, 4], [6, 3]]


def test_only_the_latest_result_holding_a_value_is_linked():
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "find", q="x")]},
        {"role": "tool", "tool_call_id": "a", "content": "node7 is up"},
        {"role": "assistant", "tool_calls": [call("b", "find", q="y")]},
        {"role": "tool", "tool_call_id": "b", "content": "node7 is down"},
        {"role": "assistant", "content": "Restart node7."},
    ]
    assert trace_edges(messages).tolist() == [[1, 0], [3, 2], [4, 3]]


def test_unreferenced_results_and_small_numbers_link_nothing():
    messages = [
        {"role": "assistant", "tool_calls": [call("a", "count")]},
        {"role": "tool", "tool_call_id": "a", "content": json.dumps({"count": 12, "status": "active"})},
        {"role": "assistant", "tool_calls": [call("b", "page", limit=12, status="active")]},
        {"role": "user", "content": "And node7?"},
    ]
    assert trace_edges(messages).tolist() == [[1, 0]]


def test_legacy_function_calls_and_content_parts():
    messages = [
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}},
        {"role": "function", "name": "lookup", "content": [{"type": "text", "text": "ticket RT-114"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Closing RT-114."}]},
    ]
    assert trace_edges(messages).tolist() == [[1, 0], [2, 1]]
    assert message_texts(messages) == ["lookup({})", "ticket RT-114", "Closing RT-114."]


def test_message_texts_render_calls():
    assert message_texts(REFUND)[4] == 'refund({"charge": "ch_9f2a", "amount": 4200})'


def test_empty_and_errors():
    assert trace_edges([]).shape == (0, 2)
    with pytest.raises(TypeError, match="messages"):
        trace_edges("hello")
    with pytest.raises(TypeError, match=r"messages\[0\]"):
        trace_edges([{"content": "no role"}])
    with pytest.raises(ValueError, match="tool_calls"):
        trace_edges([{"role": "assistant", "tool_calls": [{"id": "x"}]}])
    with pytest.raises(TypeError, match="content"):
        trace_edges([{"role": "user", "content": 5}])
