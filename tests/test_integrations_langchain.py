"""The LangChain / LangGraph adapter against the real libraries, offline, with a scripted model.

``ThreadMemory.pre_model_hook`` in LangGraph's ``create_react_agent`` and
``ThreadMemory.middleware()`` in LangChain's ``create_agent``: what the model is sent fits the
budget, is never empty, keeps tool calls with their results and the annotated binder of
"that account"; removals (``RemoveMessage``, ``REMOVE_ALL_MESSAGES``) and messages replaced
under their id are reflected at the next call.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest

from tests._requires import require

require("langgraph", "langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, convert_to_openai_messages
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from dsgc_fast.integrations.langchain import ThreadMemory
from dsgc_fast.memory.digest import is_digest
from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from tests._scripted_models import ScriptedChatModel, langchain_messages, lookup

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

SESSION = Path(__file__).parent / "data" / "support_long.jsonl"
COUNT = token_counter(None)


def langchain_session() -> list:
    """``support_long.jsonl`` as LangChain messages, annotations in ``additional_kwargs``, ids set."""
    return langchain_messages([json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()], ids="s")


def keeps_binder(messages) -> bool:
    """The message binding "that account", or a binding table holding it, is among ``messages``."""
    texts = [m.text for m in messages]
    return any(t.startswith("Urgent: account 8841-C") or ("that account" in t and "8841-C" in t) for t in texts)


def sent_tokens(messages) -> int:
    return sum(message_tokens(convert_to_openai_messages(m), COUNT) for m in messages)


def react_agent(memory: ThreadMemory, model: ScriptedChatModel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, [lookup], pre_model_hook=memory.pre_model_hook, checkpointer=InMemorySaver())


@pytest.mark.parametrize("budget", [300, 1200])
def test_the_react_agent_sends_a_valid_context_within_budget_with_the_binder(budget):
    history = langchain_session()
    model, memory = ScriptedChatModel(), ThreadMemory(budget)
    agent = react_agent(memory, model)
    config = {"configurable": {"thread_id": "ticket-queue"}}
    agent.invoke({"messages": history}, config)
    sent = model.seen[-1]
    assert 0 < len(sent) < len(history)
    assert sent_tokens(sent) <= budget
    check_messages([convert_to_openai_messages(m) for m in sent])
    assert keeps_binder(sent)
    assert sent[-1].content == "Did that account clear KYC?"
    # the session goes on: a tool call and its result, then an answer
    state = agent.invoke(
        {
            "messages": [
                HumanMessage(
                    "look up the CloudHost charge of that account",
                    additional_kwargs={"dsgc": {"uses": ["that account"]}},
                )
            ]
        },
        config,
    )
    assert state["messages"][-1].content.startswith("Result: record for")
    for sent in model.seen[-2:]:
        assert sent and sent_tokens(sent) <= budget
        check_messages([convert_to_openai_messages(m) for m in sent])
    assert keeps_binder(model.seen[-1])
    assert memory.report("ticket-queue").explain("m0")  # decisions are explained


def test_removals_and_replacements_are_reflected_at_the_next_call():
    model, memory = ScriptedChatModel(), ThreadMemory(2000)
    agent = react_agent(memory, model)
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(
        {"messages": [HumanMessage("Account 8841-C is flagged.", id="h1"), HumanMessage("look up invoice 7", id="h2")]},
        config,
    )
    state = agent.get_state(config).values["messages"]
    call = next(m for m in state if isinstance(m, AIMessage) and m.tool_calls)
    result = next(m for m in state if m.type == "tool")
    agent.update_state(
        config, {"messages": [RemoveMessage(id="h1"), RemoveMessage(id=call.id), RemoveMessage(id=result.id)]}
    )
    agent.update_state(config, {"messages": [HumanMessage("Account 9000-B is flagged.", id="h2")]})  # replaces h2
    agent.invoke({"messages": [HumanMessage("thanks", id="h3")]}, config)
    sent = [m.content for m in model.seen[-1]]
    assert sent == [m.content for m in agent.get_state(config).values["messages"][:-1]]
    assert sent[0] == "Account 9000-B is flagged." and "Account 8841-C is flagged." not in sent
    assert "8841-C" not in repr(memory.report("t").texts.values()) and "8841-C" not in repr(memory._threads)
    agent.invoke({"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("fresh start", id="h4")]}, config)
    assert [m.content for m in model.seen[-1]] == ["fresh start"]


def test_a_budget_below_the_current_turn_still_sends_the_turn():
    model = ScriptedChatModel()
    agent = react_agent(ThreadMemory(5), model)
    agent.invoke({"messages": langchain_session()}, {"configurable": {"thread_id": "x"}})
    assert [m.content for m in model.seen[-1]] == [langchain_session()[0].content, "Did that account clear KYC?"]
    with pytest.raises(Exception, match="evicting a pinned block"):
        react_agent(ThreadMemory(5, on_over_budget="raise"), ScriptedChatModel()).invoke(
            {"messages": langchain_session()}, {"configurable": {"thread_id": "x"}}
        )


def test_the_hook_under_ainvoke():
    model, memory = ScriptedChatModel(), ThreadMemory(300)
    agent = react_agent(memory, model)
    state = asyncio.run(agent.ainvoke({"messages": langchain_session()}, {"configurable": {"thread_id": "async"}}))
    assert state["messages"][-1].content.startswith("Answered with") and 0 < len(model.seen[-1]) < len(
        state["messages"]
    )
    assert sent_tokens(model.seen[-1]) <= 300


def test_create_agent_middleware_selects_each_model_request():
    history = langchain_session()
    system, rest = history[0], history[1:]
    model, memory = ScriptedChatModel(), ThreadMemory(400)
    agent = create_agent(
        model, [lookup], system_prompt=system.content, middleware=[memory.middleware()], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "q"}}
    agent.invoke({"messages": rest}, config)
    sent = model.seen[-1]
    assert sent[0].content.startswith(system.content) and 0 < len(sent) < len(history)  # tables appended to it
    assert sent_tokens(sent) <= 400
    assert keeps_binder(sent) and sent[-1].content == "Did that account clear KYC?"
    assert len(agent.get_state(config).values["messages"]) == len(rest) + 1  # the state keeps everything

    async def later():
        return await agent.ainvoke({"messages": [HumanMessage("look up payout M-1")]}, config)

    assert asyncio.run(later())["messages"][-1].content.startswith("Result:")
    assert sent_tokens(model.seen[-1]) <= 400


def test_bad_arguments_are_refused_at_construction():
    with pytest.raises(TypeError, match="budget"):
        ThreadMemory("300")
    with pytest.raises(ValueError, match="on_over_budget"):
        ThreadMemory(300, on_over_budget="truncate_everything")
    with pytest.raises(TypeError, match=r"no longer takes \['max_threads'\]"):
        ThreadMemory(300, max_threads=2)
    with pytest.raises(TypeError, match=r"no longer takes \['store_factory'\]"):
        ThreadMemory(300, store_factory=lambda thread, counter: None)
    with pytest.raises(ValueError, match="cached_threads"):
        ThreadMemory(300, cached_threads=0)
    with pytest.raises(TypeError, match="unknown setting"):
        ThreadMemory(300, lambda_p=1.0)
    with pytest.raises(ValueError, match=r"unknown dsgc annotation field\(s\) \['id'\] in a LangChain message's"):
        ThreadMemory(300).select([HumanMessage("x", additional_kwargs={"dsgc": {"id": "m1"}})])
    with pytest.raises(TypeError, match=r"additional_kwargs\['dsgc'\] must be a mapping, got str"):
        ThreadMemory(300).select([HumanMessage("x", additional_kwargs={"dsgc": "pinned"})])


def test_select_messages_is_shaped_like_trim_messages():
    from dsgc_fast.integrations.langchain import select_messages

    history = langchain_session()
    for budget in (20, 80, 300, 1200):
        sent = select_messages(history, max_tokens=budget)
        assert sent and sent[0] is history[0] and sent[-1] is history[-1]
        assert sent_tokens(sent) <= max(budget, sent_tokens([history[0], history[-1]]))
        check_messages([convert_to_openai_messages(m) for m in sent])
        for m in sent:  # the caller's own object, a binding table, or a copy of a tool result sent as its digest
            own = [h for h in history if h is m]
            if not own and m.type != "system":
                (source,) = [h for h in history if h.id == m.id]
                assert m.type == source.type == "tool" and m.tool_call_id == source.tool_call_id
                assert is_digest(m.content) and m.content != source.content
        assert keeps_binder(sent) or budget == 20
    assert select_messages([], max_tokens=10) == []


def big_turn():
    """A turn whose tool result alone is far over a small budget."""
    from langchain_core.messages import SystemMessage, ToolMessage

    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"query": "charge ch_5521"}, "id": "c1"}], id="a1")
    result = ToolMessage(
        json.dumps([{"charge": f"ch_{k}", "status": "disputed"} for k in range(200)]), tool_call_id="c1", id="t1"
    )
    return [
        SystemMessage("You triage billing tickets.", id="s0"),
        HumanMessage("look up charge ch_5521", id="h1"),
        call,
        result,
    ]


def test_by_default_a_tool_result_too_large_is_sent_cut_and_the_state_keeps_it_whole():
    from dsgc_fast.integrations.langchain import select_messages

    history = big_turn()
    whole = history[-1].content
    for sent in (ThreadMemory(80).select(history, thread_id="cut"), select_messages(history, max_tokens=80)):
        assert [m.id for m in sent] == ["s0", "h1", "a1", "t1"] and sent_tokens(sent) <= 80
        assert sent[-1] is not history[-1] and sent[-1].content.endswith(
            f" of {len(whole):,} characters to fit the token budget]"
        )
        check_messages([convert_to_openai_messages(m) for m in sent])
    assert history[-1].content == whole
    with pytest.raises(Exception, match="evicting a pinned block"):
        ThreadMemory(80, on_over_budget="raise").select(history)
    assert [m.id for m in ThreadMemory(80, on_over_budget="roots_only").select(history)] == ["s0", "h1", "a1", "t1"]


def test_a_history_without_a_user_message_is_never_sent_empty():
    from dsgc_fast.integrations.langchain import select_messages

    history = [AIMessage("Here is the summary of the ticket so far. " * 20, id="a1")]
    for budget in (0, 5, 1000):
        assert [m.id for m in ThreadMemory(budget).select(history, thread_id=f"n{budget}")] == ["a1"]
        assert select_messages(history, max_tokens=budget) == history
