"""The LangChain adapters are a pure function of the framework's history (issue 26 item 1).

Random histories (system prompts, user turns, parallel tool calls, mid-conversation system
messages, ``binds`` / ``uses`` annotations, large tool results) go to ``ThreadMemory``'s
LangGraph hook and ``create_agent`` middleware in different chunkings (growth a unit at a time,
replays of an earlier point, edits, removals, redactions), cache states (a thread's own cache,
a ``SelectCache`` shared by every thread, caches cleared) and restarts (a new ``ThreadMemory``):
each call sends exactly what ``select_messages`` sends over the same list with a fresh cache,
and nothing removed from the list is held by the ``ThreadMemory`` after the next call.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._reachable import SECRET, reachable_strings
from tests._requires import require

require("langgraph", "langchain")

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from dsgc_fast import SelectCache
from dsgc_fast.integrations.langchain import ThreadMemory, select_messages
from tests._scripted_models import ScriptedChatModel

ACCOUNTS = ["AC-1001", "AC-2040", "AC-3318", "AC-4417", "AC-5502", "AC-6690", "AC-7730"]
TOOLS = ["check_kyc", "lookup_charge", "check_payout"]
TOPICS = ["KYC status", "disputed charge", "late payout", "refund", "chargeback fee"]


@st.composite
def units(draw, k: int) -> list[BaseMessage]:
    """One unit of a history (ids from ``k``): a user turn, an answer, a tool-call unit or a system note."""
    kind = draw(st.sampled_from(["user", "user", "tools", "answer", "system"]))
    account, topic = draw(st.sampled_from(ACCOUNTS)), draw(st.sampled_from(TOPICS))
    if kind == "user":
        annotation = draw(st.sampled_from([None, {"binds": {"that account": account}}, {"uses": ["that account"]}]))
        text = (
            f"Please check the {topic} of account {account}."
            if annotation is None or "binds" in annotation
            else (f"What about the {topic} of that account?")
        )
        extra = {} if annotation is None else {"dsgc": annotation}
        return [HumanMessage(text, id=f"u{k}", additional_kwargs=extra)]
    if kind == "answer":
        return [AIMessage(f"The {topic} of {account} is under review.", id=f"a{k}")]
    if kind == "system":
        return [SystemMessage(f"Note: {account} is under a {topic} audit.", id=f"s{k}")]
    calls = [
        {"name": draw(st.sampled_from(TOOLS)), "args": {"account": draw(st.sampled_from(ACCOUNTS))}, "id": f"c{k}_{j}"}
        for j in range(draw(st.integers(1, 3)))
    ]
    size = draw(st.sampled_from([1, 1, 3, 40]))
    results = [
        ToolMessage(json.dumps([{"account": c["args"]["account"], "status": "cleared", "n": n} for n in range(size)]),
                    tool_call_id=c["id"], id=f"t{k}_{j}")
        for j, c in enumerate(calls)
    ]  # fmt: skip
    return [AIMessage("", tool_calls=calls, id=f"a{k}"), *results]


@st.composite
def histories(draw) -> tuple[list[list[BaseMessage]], int]:
    """Units (the first a system prompt, the second a user turn) and a budget."""
    out = [
        [SystemMessage("You triage billing tickets.", id="s")],
        draw(units(0).filter(lambda u: u[0].type == "human")),
    ]
    out += [draw(units(k)) for k in range(1, draw(st.integers(1, 9)))]
    return out, draw(st.sampled_from([0, 20, 60, 150, 400, 5000]))


def flat(chunks: list[list[BaseMessage]]) -> list[BaseMessage]:
    return [m for chunk in chunks for m in chunk]


def shape(messages: list[BaseMessage]) -> list[tuple[str, str | None, str]]:
    """What a model reads of a context: each message's type, id and content."""
    return [(m.type, m.id, json.dumps(m.content)) for m in messages]


def reference(messages: list[BaseMessage], budget: int) -> list[BaseMessage]:
    return select_messages(messages, max_tokens=budget, cache=SelectCache())


def hook(memory: ThreadMemory, messages: list[BaseMessage], thread: str = "t") -> list[BaseMessage]:
    return memory.pre_model_hook({"messages": messages}, {"configurable": {"thread_id": thread}})["llm_input_messages"]


def through_middleware(memory: ThreadMemory, messages: list[BaseMessage], thread: str = "t") -> list[BaseMessage]:
    """What the model is sent when ``messages`` (a system prompt first) go through the middleware."""
    seen: list[list[BaseMessage]] = []

    def handler(request: ModelRequest) -> list:
        seen.append([*([request.system_message] if request.system_message else []), *request.messages])
        return []

    request = ModelRequest(model=ScriptedChatModel(), messages=messages[1:], system_message=messages[0])
    middleware = memory.middleware()
    RunnableLambda(lambda r: middleware.wrap_model_call(r, handler)).invoke(
        request, {"configurable": {"thread_id": thread}}
    )
    return seen[0]


def middleware_view(messages: list[BaseMessage], sent: list[BaseMessage]) -> list[BaseMessage]:
    """``select_messages``' answer as the middleware sends it: binding tables appended to the system prompt."""
    tables = [m for m in sent if isinstance(m, SystemMessage) and not any(m is x for x in messages)]
    if not tables:
        return sent
    merged = sent[0].model_copy(update={"content": "\n\n".join([sent[0].content, *(t.content for t in tables)])})
    return [merged, *(m for m in sent[1:] if not any(m is t for t in tables))]


@settings(max_examples=40)
@given(histories(), st.data())
def test_the_hook_sends_what_select_messages_sends_whatever_the_chunking_caches_and_restarts(case, data):
    chunks, budget = case
    history = flat(chunks)
    memory, shared = ThreadMemory(budget), ThreadMemory(budget, cache=SelectCache(), cached_threads=1)
    growth = sorted(set(data.draw(st.lists(st.integers(2, len(chunks)), max_size=4)))) + [len(chunks)]
    for n in growth:  # the list grows (several units at a time)
        prefix = flat(chunks[:n])
        expected = shape(reference(prefix, budget))
        assert shape(hook(memory, prefix)) == expected
        assert shape(hook(shared, prefix, thread=f"other{n}")) == expected  # one cache, threads evicted
    back = data.draw(st.integers(2, len(chunks)))  # time travel, then the list grows again
    for n in (back, len(chunks)):
        assert shape(hook(memory, flat(chunks[:n]))) == shape(reference(flat(chunks[:n]), budget))
    assert shape(ThreadMemory(budget).select(history, thread_id="t")) == shape(reference(history, budget))  # restart
    memory.clear()
    assert shape(hook(memory, history)) == shape(select_messages(history, max_tokens=budget))  # the process cache


@settings(max_examples=25)
@given(histories(), st.data())
def test_the_middleware_sends_what_select_messages_sends(case, data):
    chunks, budget = case
    memory = ThreadMemory(budget)
    for n in sorted({data.draw(st.integers(2, len(chunks))), len(chunks)}):
        prefix = flat(chunks[:n])
        expected = middleware_view(prefix, reference(prefix, budget))
        assert shape(through_middleware(memory, prefix)) == shape(expected)
    assert shape(through_middleware(ThreadMemory(budget), flat(chunks))) == shape(
        middleware_view(flat(chunks), reference(flat(chunks), budget))
    )


@settings(max_examples=25)
@given(histories(), st.data())
def test_edits_removals_and_redactions_are_reflected_and_nothing_removed_is_kept(case, data):
    chunks, budget = case
    k = data.draw(st.integers(1, len(chunks) - 1))
    secret = HumanMessage(f"My card is {SECRET}, charge it for account AC-4417.", id="card")
    before = [*chunks[: k + 1], [secret], *chunks[k + 1 :]]
    memory = ThreadMemory(budget)
    assert shape(hook(memory, flat(before))) == shape(reference(flat(before), budget))
    redacted = secret.model_copy(update={"content": "My card is [redacted], charge it for account AC-4417."})
    edit = data.draw(st.sampled_from(["remove", "redact", "remove_unit"]))
    if edit == "remove":
        after = [*chunks[: k + 1], *chunks[k + 1 :]]
    elif edit == "redact":
        after = [*chunks[: k + 1], [redacted], *chunks[k + 1 :]]
    else:  # the secret and the unit before it (a whole tool-call unit if it is one)
        after = [*chunks[:k], *chunks[k + 1 :]] if k > 1 else [*chunks[: k + 1], *chunks[k + 1 :]]
    assert shape(hook(memory, flat(after))) == shape(reference(flat(after), budget))
    assert not [s for s in reachable_strings(memory) if SECRET in s]


def test_reachable_strings_finds_what_the_memory_holds():
    """The check above can fail: before the removal the secret is held (the thread's cache and report)."""
    memory = ThreadMemory(500)
    hook(memory, [SystemMessage("You triage."), HumanMessage(f"My card is {SECRET}.")])
    assert [s for s in reachable_strings(memory) if SECRET in s]


@pytest.mark.parametrize("budget", [30, 60, 300])
def test_a_frozen_history_with_a_binding_table_through_both_adapters(budget):
    """A binding table (the binder over budget) is sent by the hook after the system prompt and by the
    middleware inside it, as ``select_messages`` decides."""
    history = [
        SystemMessage("You triage billing tickets.", id="s"),
        HumanMessage(
            "Account AC-4417 was flagged. " + "It has a long dispute history. " * 30,
            id="u0",
            additional_kwargs={"dsgc": {"binds": {"that account": "AC-4417"}}},
        ),
        AIMessage("Noted.", id="a0"),
        HumanMessage("Did that account clear KYC?", id="u1", additional_kwargs={"dsgc": {"uses": ["that account"]}}),
    ]
    expected = reference(history, budget)
    assert shape(hook(ThreadMemory(budget), history)) == shape(expected)
    assert shape(through_middleware(ThreadMemory(budget), history)) == shape(middleware_view(history, expected))
    system = through_middleware(ThreadMemory(budget), history)[0]
    assert ("that account: AC-4417" in system.content) == (budget == 60)  # the table, when one is made


def test_a_growing_list_reuses_the_thread_s_cache_and_any_other_list_starts_afresh():
    history = [SystemMessage("You triage billing tickets.", id="s")]
    for k, account in enumerate(ACCOUNTS):
        history += [HumanMessage(f"Check account {account}.", id=f"u{k}"), AIMessage(f"{account} is fine.", id=f"a{k}")]
    memory = ThreadMemory(200)
    hook(memory, history[:9])
    cache = memory._threads["t"].cache
    before = cache.encoded
    hook(memory, history[:11])  # two messages more: only they are encoded
    assert memory._threads["t"].cache is cache and cache.encoded == before + 2
    hook(memory, history[:5])  # a replay of an earlier point: a fresh cache holding that list only
    assert memory._threads["t"].cache is not cache and len(memory._threads["t"].cache.rows) <= 5
