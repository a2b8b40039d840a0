"""The OpenAI Agents SDK adapter against the real SDK, offline, with a scripted ``Model``.

Item grouping agrees with the SDK's own converter; ``InputFilter`` as
``RunConfig.call_model_input_filter`` sends a valid, non-empty context within the budget with
the binder of "that account" (or a binding table as a system item); ``add_items`` /
``to_items`` round-trip a session through a ``MemoryStore``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests._requires import require

require("agents", "openai-agents")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, RunConfig, Runner, function_tool
from agents.models.chatcmpl_converter import Converter

from dsgc_fast import MemoryStore
from dsgc_fast.integrations.openai_agents import InputFilter, add_items, item_groups, to_items
from dsgc_fast.messages import check_messages, compact_messages
from dsgc_fast.token_counts import message_tokens, token_counter
from tests._scripted_agents_model import ScriptedModel, chat_to_items
from tests._scripted_models import lookup as lookup_text

SESSION = [
    json.loads(line) for line in (Path(__file__).parent / "data" / "support_long.jsonl").read_text().splitlines()
]
ANNOTATIONS = {m["content"]: m["dsgc"] for m in SESSION if "dsgc" in m}
COUNT = token_counter(None)


def annotate(item):
    content = item.get("content")
    return ANNOTATIONS.get(content) if isinstance(content, str) else None


def cost(items) -> int:
    return sum(message_tokens(m, COUNT) for m in Converter.items_to_messages(items))


def binder_or_table(items) -> bool:
    texts = [m.get("content") for m in items if isinstance(m.get("content"), str)]
    return any(t.startswith("Urgent: account 8841-C") or ("that account" in t and "8841-C" in t) for t in texts)


def live_roots(items):
    """The system items and the newest user turn (the user item and everything after it)."""
    last_user = max(k for k, item in enumerate(items) if item.get("role") == "user")
    return [item for item in items[:last_user] if item.get("role") == "system"] + items[last_user:]


REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}
CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
CALL2 = {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "one"}
OUT2 = {"type": "function_call_output", "call_id": "c2", "output": "two"}
SAID = {
    "type": "message",
    "role": "assistant",
    "id": "msg_1",
    "status": "completed",
    "content": [{"type": "output_text", "text": "checking", "annotations": []}],
}
USER = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("items", "groups"),
    [
        (chat_to_items(SESSION), None),
        (
            [USER, REASONING, SAID, CALL, CALL2, OUT, OUT2],
            [(0,), (1, 2, 3, 4), (5,), (6,)],
        ),  # text, then parallel calls
        ([USER, CALL, SAID, OUT], [(0,), (1, 2), (3,)]),  # a streamed turn: the call before the text
        (
            [USER, {"role": "assistant", "content": "plain"}, CALL, OUT],
            [(0,), (1,), (2,), (3,)],
        ),  # a plain message closes
        ([USER, SAID, REASONING], [(0,), (1,), (2,)]),  # trailing reasoning: a group without a message
    ],
)
def test_item_groups_follow_the_sdk_converter(items, groups):
    found = item_groups(items)
    assert [g.message for g in found if g.message is not None] == Converter.items_to_messages(items)
    if groups is not None:
        assert [g.indices for g in found] == groups


@function_tool
def lookup(query: str) -> str:
    """Look up a record by its query."""
    return lookup_text(query)


@pytest.mark.parametrize("budget", [80, 400])
def test_the_filter_in_a_run_sends_a_valid_context_within_budget(budget):
    model = ScriptedModel()
    agent = Agent(name="support", instructions="Resolve tickets.", model=model, tools=[lookup])
    config = RunConfig(call_model_input_filter=InputFilter(budget, annotate=annotate), tracing_disabled=True)
    items = chat_to_items(SESSION)
    result = Runner.run_sync(agent, items, run_config=config)
    assert result.final_output.startswith("Answered with")
    sent = model.seen[-1]
    assert 0 < len(sent) < len(items) and cost(sent) <= budget
    check_messages(Converter.items_to_messages(sent))
    assert binder_or_table(sent) and sent[-1]["content"] == "Did that account clear KYC?"
    if budget == 80:  # the binder does not fit: its binding is sent as a system item instead
        assert sent[1]["role"] == "system" and "8841-C" in sent[1]["content"]
    more = result.to_input_list() + [{"role": "user", "content": "look up the CloudHost charge of that account"}]
    ANNOTATIONS["look up the CloudHost charge of that account"] = {"uses": ["that account"]}
    result = Runner.run_sync(agent, more, run_config=config)
    # at 80 tokens the turn does not fit whole: its tool result is sent cut (on_over_budget="truncate")
    assert result.final_output.startswith("Result: record for the CloudHost charge" if budget == 400 else "Result: ")
    for sent in model.seen[-2:]:
        # within budget, unless the live roots alone (system prompt, current turn) exceed it: then just them
        assert sent and cost(sent) <= max(budget, cost(live_roots(sent)))
        assert binder_or_table(sent) or cost(live_roots(sent)) > budget
        check_messages(Converter.items_to_messages(sent))
    assert model.seen[-1][-1]["type"] == "function_call_output"  # the call's result, with its call


def test_the_filter_returns_the_input_items_themselves_and_never_an_empty_list():
    from dsgc_fast import ReferentEvictionError

    items = chat_to_items(SESSION)
    kept = InputFilter(300).select(items)
    assert all(any(k is item for item in items) for k in kept)
    assert [k for k in InputFilter(1).select(items)] == [items[0], items[-1]]  # over budget: the live roots
    with pytest.raises(ReferentEvictionError):
        InputFilter(1, on_over_budget="raise").select(items)
    big = [USER, CALL, {**OUT, "output": "a long tool result " * 200}]
    sent = InputFilter(80, on_over_budget="truncate").select(big)
    assert sent[:2] == big[:2] and sent[2] is not big[2] and len(sent[2]["output"]) < len(big[2]["output"])
    assert big[2]["output"] == "a long tool result " * 200  # the caller's item is untouched
    trailing = [USER, SAID, REASONING]
    assert InputFilter(1000).select(trailing) == trailing
    alone = [{"role": "developer", "content": "Resolve tickets."}, SAID]  # no user item: the newest item is the turn
    assert InputFilter(0).select(alone) == alone


def test_the_async_filter():
    from agents.run_config import CallModelData, ModelInputData

    data = CallModelData(
        model_data=ModelInputData(input=chat_to_items(SESSION), instructions="x"), agent=None, context=None
    )
    got = asyncio.run(InputFilter(200).filter_async(data))
    assert got.instructions == "x" and cost(got.input) <= 200


def test_bad_arguments():
    with pytest.raises(TypeError, match="budget"):
        InputFilter("200")
    with pytest.raises(TypeError, match="annotate"):
        InputFilter(200, annotate="nope")
    with pytest.raises(ValueError, match="on_over_budget"):
        InputFilter(200, on_over_budget="drop")
    with pytest.raises(ValueError, match=r"unknown dsgc annotation field\(s\) \['id'\] in what annotate\(items\[0\]\)"):
        InputFilter(200, annotate=lambda item: {"id": "x"}).select([USER])
    with pytest.raises(TypeError, match=r"what annotate\(items\[0\]\) returned must be a mapping, got list"):
        InputFilter(200, annotate=lambda item: ["binds"]).select([USER])
    with pytest.raises(TypeError, match="Responses input items"):
        item_groups("hello")


def test_items_round_trip_through_a_store():
    items = chat_to_items(SESSION)
    store = MemoryStore()
    ids = add_items(store, items, annotate=annotate)
    assert len(ids) == len(item_groups(items)) and to_items(store) == items
    compact_messages(store, 300)
    kept = to_items(store)
    assert kept[0] == items[0] and kept[-1] == items[-1] and len(kept) < len(items)
    check_messages(Converter.items_to_messages(kept))
    with pytest.raises(ValueError, match="reasoning"):
        add_items(store, [USER, REASONING])
    store.pop()
    assert to_items(store)[-1] != items[-1]
