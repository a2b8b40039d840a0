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
from dsgc_fast.memory.messages import check_messages, compact_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from dsgc_fast.memory.value_table import HEADER as VALUE_TABLE
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


def input_items(sent, items):
    """``sent`` less the tables the filter adds (system items that are none of ``items``: a value
    or binding table); every other sent item must be one of ``items`` itself."""
    rest = [s for s in sent if any(s is item for item in items)]
    added = [s for s in sent if not any(s is item for item in items)]
    assert all(s["role"] == "system" and s["content"].startswith("[") for s in added), added
    return rest


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


def _parts(content) -> list:
    return content if isinstance(content, list) else []


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
    if groups is not None:
        assert [g.indices for g in found] == groups
    # reasoning items are counted as content parts of their group; without them, the SDK's own messages
    spoken = [item for item in items if item.get("type") != "reasoning"]
    assert [g.message for g in item_groups(spoken)] == Converter.items_to_messages(spoken)
    with_reasoning = [g for g in found if g.message is not None and REASONING in _parts(g.message["content"])]
    assert len(with_reasoning) == (REASONING in items[:-1])


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
    assert input_items(kept, items) and any(k["content"].startswith(VALUE_TABLE) for k in kept if k not in items)
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
    with pytest.raises(ValueError, match=r"items\[1\] has neither a 'type' nor a 'role'"):
        InputFilter(200).select([USER, {"content": "who said this?"}])


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


# -- every Responses item type ------------------------------------------------------------
PNG = "data:image/png;base64," + "iVBORw0KGgo" * 40
#: one item of each type of ITEM_KINDS, in an order a run can produce (a call before its output)
ITEM_EXAMPLES = {
    "message": {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "what does this page say"},
            {"type": "input_image", "image_url": PNG, "detail": "auto"},
            {"type": "input_file", "filename": "a.txt", "file_data": "data:text/plain;base64,aGVsbG8="},
        ],
    },
    "reasoning": {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "search first"}]},
    "web_search_call": {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "kyc"}},
    "file_search_call": {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refunds"]},
    "code_interpreter_call": {
        "type": "code_interpreter_call", "id": "ci_1", "code": "print(2)", "container_id": "k", "status": "completed",
        "outputs": [{"type": "logs", "logs": "2"}],
    },
    "image_generation_call": {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBO" * 500},
    "mcp_list_tools": {"type": "mcp_list_tools", "id": "ml_1", "server_label": "crm", "tools": []},
    "mcp_approval_request": {"type": "mcp_approval_request", "id": "mr_1", "server_label": "crm", "name": "find", "arguments": "{}"},
    "mcp_approval_response": {"type": "mcp_approval_response", "approval_request_id": "mr_1", "approve": True},
    "mcp_call": {"type": "mcp_call", "id": "mc_1", "server_label": "crm", "name": "find", "arguments": "{}", "output": "ok"},
    "computer_call": {
        "type": "computer_call", "id": "cu_1", "call_id": "cc_1", "status": "completed", "pending_safety_checks": [],
        "action": {"type": "click", "x": 1, "y": 2, "button": "left"},
    },
    "computer_call_output": {
        "type": "computer_call_output", "call_id": "cc_1", "output": {"type": "computer_screenshot", "image_url": PNG},
    },
    "custom_tool_call": {"type": "custom_tool_call", "call_id": "ct_1", "name": "sql", "input": "SELECT 1"},
    "custom_tool_call_output": {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "1 row"},
    "local_shell_call": {
        "type": "local_shell_call", "id": "ls_1", "call_id": "lc_1", "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    },
    "local_shell_call_output": {"type": "local_shell_call_output", "id": "lc_1", "output": "a.txt"},
    "shell_call": {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["ls"]}},
    "shell_call_output": {
        "type": "shell_call_output", "call_id": "sh_1",
        "output": [{"stdout": "a.txt", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
    },
    "apply_patch_call": {
        "type": "apply_patch_call", "call_id": "ap_1", "status": "completed", "operation": {"type": "delete_file", "path": "x"},
    },
    "apply_patch_call_output": {"type": "apply_patch_call_output", "call_id": "ap_1", "status": "completed", "output": "ok"},
    "tool_search_call": {"type": "tool_search_call", "call_id": "ts_1", "arguments": {"query": "refund"}},
    "tool_search_output": {"type": "tool_search_output", "call_id": "ts_1", "tools": []},
    "program": {"type": "program", "id": "p_1", "call_id": "pc_1", "code": "run()", "fingerprint": "f"},
    "program_output": {"type": "program_output", "id": "po_1", "call_id": "pc_1", "result": "ok", "status": "completed"},
    "function_call": {"type": "function_call", "call_id": "fc_1", "name": "lookup", "arguments": '{"query": "x"}'},
    "function_call_output": {
        "type": "function_call_output", "call_id": "fc_1",
        "output": [{"type": "input_text", "text": "see"}, {"type": "input_image", "file_id": "file-1"}],
    },
    "item_reference": {"type": "item_reference", "id": "msg_0"},
    "additional_tools": {"type": "additional_tools", "role": "developer", "tools": []},
    "configuration_update": {"type": "configuration_update", "id": "cfg_1"},
    "compaction": {"type": "compaction", "encrypted_content": "opaque"},
    "compaction_trigger": {"type": "compaction_trigger"},
}  # fmt: skip
FIRST = {"role": "user", "content": "look at this"}
LAST = {"role": "user", "content": "Did that account clear KYC?"}
EVERY_TYPE = [FIRST, *ITEM_EXAMPLES.values(), LAST]


def _response_item_types() -> set[str]:
    """The ``type`` values of every Responses input item the openai package declares."""
    from typing import Literal, get_args, get_origin, get_type_hints

    from openai.types.responses import ResponseInputItemParam

    def literals(hint) -> set[str]:
        if get_origin(hint) is Literal:
            return set(get_args(hint))
        return {v for arg in get_args(hint) for v in literals(arg)}

    return {v for typed in get_args(ResponseInputItemParam) for v in literals(get_type_hints(typed)["type"])}


def test_the_table_names_every_responses_item_type():
    from dsgc_fast.integrations.openai_agents import ITEM_KINDS

    kinds = {k.kind for k in ITEM_KINDS}
    assert _response_item_types() <= kinds and set(ITEM_EXAMPLES) == kinds
    assert len(kinds) == len(ITEM_KINDS)
    for kind in ITEM_KINDS:  # every pair names the other
        if kind.unit == "call":
            assert any(o.kind == kind.answer and o.unit == "output" for o in ITEM_KINDS)


def _units_complete(sent, items):
    """Each call of ``items`` is sent exactly when its output is; each sent reasoning item precedes what it explains."""
    from dsgc_fast.integrations.openai_agents import ITEM_KINDS

    answer = {k.kind: k.answer for k in ITEM_KINDS if k.unit == "call"}
    ids = {id(item) for item in sent}
    for k, item in enumerate(items):
        if item.get("type") in answer:
            output = next(o for o in items[k:] if o.get("type") == answer[item["type"]])
            assert (id(item) in ids) == (id(output) in ids), item["type"]
        if item.get("type") == "reasoning" and id(item) in ids and k + 1 < len(items):
            assert id(items[k + 1]) in ids


@pytest.mark.parametrize("budget", [0, 60, 400, 3_000, 100_000])
def test_every_item_type_is_kept_in_its_unit_and_costed(budget, caplog):
    import logging

    snapshot = json.dumps(EVERY_TYPE)
    with caplog.at_level(logging.WARNING, logger="dsgc.tokens"):
        sent = InputFilter(budget).select(EVERY_TYPE)
    unknown = [r for r in caplog.records if r.name == "dsgc.tokens"]
    assert not unknown  # every type has a rule: nothing counted as unknown (budget 0 may warn of the roots)
    rest = input_items(sent, EVERY_TYPE)
    assert sent[-1] is LAST and rest[-1] is LAST
    assert [EVERY_TYPE.index(s) for s in rest] == sorted(EVERY_TYPE.index(s) for s in rest)  # input order
    _units_complete(rest, EVERY_TYPE)
    assert (len(rest) == len(EVERY_TYPE)) == (budget >= 100_000)
    assert json.dumps(EVERY_TYPE) == snapshot  # nothing the caller passed is changed


def test_images_and_hosted_items_cost_what_they_carry():
    from dsgc_fast.memory.content_kinds import IMAGE_TOKENS

    groups = item_groups(EVERY_TYPE)
    costs = {g.indices: message_tokens(g.message, COUNT) for g in groups if g.message is not None}
    image_message = costs[(1,)]
    assert image_message > IMAGE_TOKENS  # the user's image is costed, not refused
    screenshot = next(c for i, c in costs.items() if EVERY_TYPE[i[0]].get("type") == "computer_call_output")
    assert screenshot > IMAGE_TOKENS
    hosted_turn = next(i for i in costs if EVERY_TYPE[i[0]].get("type") == "reasoning")
    assert [EVERY_TYPE[k]["type"] for k in hosted_turn[:6]] == [
        "reasoning", "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
        "mcp_list_tools",
    ]  # fmt: skip
    assert costs[hosted_turn] > IMAGE_TOKENS  # the generated image


def test_a_call_or_output_without_its_partner_is_kept_as_a_hosted_item():
    orphan_output = {"type": "custom_tool_call_output", "call_id": "gone", "output": "late"}
    orphan_call = {"type": "shell_call", "call_id": "pending", "action": {"commands": ["sleep 9"]}}
    items = [FIRST, orphan_output, SAID, orphan_call, LAST]
    groups = item_groups(items)
    assert [g.indices for g in groups] == [(0,), (1, 2, 3), (4,)]  # hosted items of one assistant turn
    check_messages([g.message for g in groups])
    assert InputFilter(100_000).select(items) == items


def test_an_item_between_a_call_and_its_output_joins_the_calls_turn():
    items = [FIRST, CALL, CALL2, OUT, ITEM_EXAMPLES["web_search_call"], OUT2, LAST]
    groups = item_groups(items)
    assert [g.indices for g in groups] == [(0,), (1, 2, 4), (3,), (5,), (6,)]
    check_messages([g.message for g in groups])
    assert InputFilter(100_000).select(items) == items  # in input order


def test_the_filter_in_a_run_with_every_item_type():
    model = ScriptedModel()
    agent = Agent(name="support", instructions="Resolve tickets.", model=model, tools=[lookup])
    config = RunConfig(call_model_input_filter=InputFilter(400), tracing_disabled=True)
    result = Runner.run_sync(agent, EVERY_TYPE, run_config=config)
    assert result.final_output.startswith("Answered with")
    sent = model.seen[-1]
    assert sent[-1]["content"] == LAST["content"] and 1 < len(sent) < len(EVERY_TYPE)
    assert all(s["content"].startswith(VALUE_TABLE) for s in sent if s not in EVERY_TYPE)  # the value table
    positions = [EVERY_TYPE.index(s) for s in sent if s in EVERY_TYPE]  # each sent as it came, in input order
    assert positions == sorted(positions)
    _units_complete([EVERY_TYPE[p] for p in positions], EVERY_TYPE)


# -- cut outputs ---------------------------------------------------------------------------
LONG = "ledger row 8841-C cleared " * 900


def test_a_cut_output_is_sent_cut_when_its_output_can_be_text():
    items = [FIRST, ITEM_EXAMPLES["custom_tool_call"], {**ITEM_EXAMPLES["custom_tool_call_output"], "output": LONG}]
    sent = InputFilter(200).select(items)
    assert sent[:2] == items[:2] and sent[2] is not items[2]
    assert sent[2]["output"].endswith("to fit the token budget]") and len(sent[2]["output"]) < len(LONG)
    assert items[2]["output"] == LONG


def test_an_output_that_cannot_be_text_is_sent_whole(caplog):
    import logging

    shell = {**ITEM_EXAMPLES["shell_call_output"], "output": [{"stdout": LONG, "stderr": "", "outcome": None}]}
    items = [FIRST, ITEM_EXAMPLES["shell_call"], shell]
    with caplog.at_level(logging.WARNING, logger="dsgc"):
        sent = InputFilter(200).select(items)
    assert sent == items and sent[2] is shell
    assert any("shell_call_output cannot be cut" in r.getMessage() for r in caplog.records)


def test_to_items_returns_a_cut_output_cut():
    from dsgc_fast.memory.compaction import cut_marker

    items = [FIRST, CALL, {**OUT, "output": LONG}]
    store = MemoryStore(tokenizer="approx")
    add_items(store, items)
    report = compact_messages(store, 200, on_over_budget="truncate")
    (cut,) = report.truncated.values()
    back = to_items(store)
    assert back[:2] == items[:2] and back[2]["output"] == cut.text != LONG
    assert back[2]["output"].endswith(cut_marker(cut.cut, len(LONG)))
    assert message_tokens(Converter.items_to_messages([CALL, back[2]])[1], "approx") == cut.cost
    assert items[2]["output"] == LONG


def test_a_user_image_is_costed_not_refused():
    from dsgc_fast.memory.content_kinds import IMAGE_TOKENS

    image = {
        "role": "user",
        "content": [{"type": "input_text", "text": "this one"}, {"type": "input_image", "image_url": PNG}],
    }
    items = [image, SAID, LAST]
    assert InputFilter(IMAGE_TOKENS).select(items) == [SAID, LAST]  # the image does not fit: left out, not an error
    assert InputFilter(2 * IMAGE_TOKENS).select(items) == items


# -- the Agents SDK Session ----------------------------------------------------------------
def _run_turns(session, questions, model):
    agent = Agent(name="support", instructions="Resolve tickets.", model=model, tools=[lookup])

    async def turns():
        for question in questions:
            await Runner.run(agent, question, session=session, run_config=RunConfig(tracing_disabled=True))

    asyncio.run(turns())


QUESTIONS = [
    "Urgent: account 8841-C was double charged for CloudHost.",
    "look up the CloudHost charge of account 8841-C",
    "What did the ledger say about it?",
    "look up the refund policy for duplicate charges",
    "Did that account clear KYC?",
]


@pytest.mark.parametrize("budget", [120, 100_000])
def test_a_retained_session_stores_everything_and_returns_the_retained_history(budget, tmp_path):
    from agents import SQLiteSession

    from dsgc_fast.integrations.openai_agents import RetainedSession

    stored = SQLiteSession("ticket-7", db_path=tmp_path / "sessions.db")
    session = RetainedSession(stored, budget, tokenizer="approx")
    model = ScriptedModel()
    _run_turns(session, QUESTIONS, model)
    everything = asyncio.run(stored.get_items())
    assert [i["content"] for i in everything if i.get("role") == "user"] == QUESTIONS  # the store keeps it all
    history = asyncio.run(session.get_items())
    rest = iter(everything)
    assert all(any(item == stored_item for stored_item in rest) for item in history)  # a subsequence of the store
    assert history[-1] == everything[-1]
    check_messages(Converter.items_to_messages(history))
    assert cost(history) <= max(budget, cost(live_roots(history)))
    assert (len(history) == len(everything)) == (budget == 100_000)
    # each model call got the retained history of its turn, then the turn's own items
    first_calls = [seen for seen in model.seen if seen[-1].get("role") == "user"]
    assert [seen[-1]["content"] for seen in first_calls] == QUESTIONS
    # the last question came after the retained history of everything before it (all but its own two items)
    assert (len(first_calls[-1]) == len(everything) - 1) == (budget == 100_000)


def test_a_retained_session_is_stateless_and_delegates_to_the_stored_session(tmp_path):
    from agents import SQLiteSession
    from agents.memory import Session

    from dsgc_fast.integrations.openai_agents import RetainedSession

    stored = SQLiteSession("ticket-8", db_path=tmp_path / "sessions.db")
    session = RetainedSession(stored, 150, tokenizer="approx")
    assert isinstance(session, Session) and session.session_id == "ticket-8"
    assert session.session_settings == stored.session_settings
    _run_turns(session, QUESTIONS[:3], ScriptedModel())
    again = RetainedSession(SQLiteSession("ticket-8", db_path=tmp_path / "sessions.db"), 150, tokenizer="approx")
    history = asyncio.run(session.get_items())
    assert asyncio.run(again.get_items()) == history  # another worker over the same store: the same items
    assert asyncio.run(session.get_items(limit=2)) == history[-2:] and asyncio.run(session.get_items(limit=0)) == []
    newest = asyncio.run(stored.get_items())[-1]
    assert asyncio.run(session.pop_item()) == newest and asyncio.run(stored.get_items())[-1] != newest
    asyncio.run(session.add_items([{"role": "user", "content": "one more"}]))
    assert asyncio.run(stored.get_items())[-1] == {"role": "user", "content": "one more"}
    asyncio.run(session.clear_session())
    assert asyncio.run(stored.get_items()) == [] and asyncio.run(session.get_items()) == []


def test_a_retained_session_checks_its_arguments():
    from agents import SQLiteSession

    from dsgc_fast.integrations.openai_agents import RetainedSession

    with pytest.raises(TypeError, match="Agents SDK Session"):
        RetainedSession([], 100)
    with pytest.raises(TypeError, match="budget"):
        RetainedSession(SQLiteSession("x"), "100")
    with pytest.raises(ValueError, match="on_over_budget"):
        RetainedSession(SQLiteSession("x"), 100, on_over_budget="drop")
    with pytest.raises(ValueError, match="limit"):
        asyncio.run(RetainedSession(SQLiteSession("x"), 100).get_items(limit=-1))
