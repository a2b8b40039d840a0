"""A 64-user-turn billing-support loop, nothing annotated, through the LangChain adapters (issue 26).

The script (``tests/_billing_script.py``): the customer on the line names their account once,
in turn 2; the agent keeps working on it with three tools, some turns with parallel calls,
while colleagues ask about six other accounts; the last turn is "Did that account clear
KYC?", for which the scripted model (``PlannedChatModel`` with ``calls_for``) checks the
account named by the earliest user message in its context that names one: the customer's
account when turn 2 was sent, a colleague's otherwise.  Through ``create_agent`` with
``ThreadMemory.middleware()`` and through LangGraph's ``create_react_agent`` (the only
prebuilt agent with a ``pre_model_hook``; deprecated in LangGraph 1.x, hence the silenced
warning) with ``ThreadMemory.pre_model_hook`` or a hook calling ``select_messages`` on the
state's whole list, at 10%, 25% and 50% of the session's cost: every model call is sent a
valid context (no orphan tool message) within the budget, and the last one keeps turn 2, so
the model checks the right account.  (The per-thread mirror of earlier versions lost turn 2
at 10% through both ``ThreadMemory`` adapters; a control run under ``strategy="last"`` loses
it too.)
"""

from __future__ import annotations

import json
import warnings
from functools import cache

import pytest

from tests._requires import require

require("langgraph", "langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, convert_to_openai_messages
from langgraph.checkpoint.memory import InMemorySaver

from dsgc_fast.integrations.langchain import ThreadMemory, select_messages
from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from tests._billing_script import BINDER, CUSTOMER, OTHERS, QUESTION, SYSTEM, TOOLS, call_id, calls_for, script
from tests._scripted_models import PlannedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

COUNT = token_counter(None)


def plan(messages: list[BaseMessage]) -> AIMessage:
    """The scripted model: ``calls_for`` a user turn, a summary after tool results."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.content[:60]}")
    text = str(last.content)
    calls = calls_for(text, [str(m.content) for m in messages if isinstance(m, HumanMessage)])
    if not calls:
        return AIMessage(f"Noted: {text[:40]}")
    return AIMessage(
        "", tool_calls=[{"name": n, "args": {"account": a}, "id": call_id(text, j)} for j, (n, a) in enumerate(calls)]
    )


def run(adapter: str, budget: int, **settings) -> tuple[PlannedChatModel, list[BaseMessage]]:
    """The whole loop; the model and the final state's messages."""
    model, memory = PlannedChatModel(plan=plan), ThreadMemory(budget, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if adapter == "middleware":
            agent = create_agent(
                model, TOOLS, system_prompt=SYSTEM, middleware=[memory.middleware()], checkpointer=InMemorySaver()
            )
        else:  # "hook", or "select_messages" called on the state's whole list (no cache of ours)
            hook = memory.pre_model_hook if adapter == "hook" else stateless_hook(budget, **settings)
            agent = create_react_agent(model, TOOLS, prompt=None, pre_model_hook=hook, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "billing"}, "recursion_limit": 20}
    first = [] if adapter == "middleware" else [("system", SYSTEM)]
    for k, (text, _) in enumerate([*script(), (QUESTION, [])]):
        state = agent.invoke({"messages": [*(first if k == 0 else []), ("user", text)]}, config)
    return model, state["messages"]


def stateless_hook(budget: int, **settings):
    """A ``pre_model_hook`` that sends ``select_messages`` of the growing list at every model call."""
    return lambda state: {"llm_input_messages": select_messages(state["messages"], max_tokens=budget, **settings)}


def cost(messages: list[BaseMessage]) -> int:
    return sum(message_tokens(convert_to_openai_messages(m), COUNT) for m in messages)


@cache
def session_cost() -> int:
    """The cost of the history the last model call selects from (system prompt included)."""
    model, _ = run("hook", 10**9)
    return cost(model.seen[-2])  # the question's call: the second but last (the last follows the KYC result)


def test_the_script_has_the_shape_the_issue_describes():
    turns = [*script(), (QUESTION, [])]
    assert len(turns) == 64 and sum(BINDER in t for t, _ in turns) == 1 and turns[1][0] == BINDER
    assert {a for _, calls in turns for _, a in calls} == {CUSTOMER, *OTHERS}
    assert {n for _, calls in turns for n, _ in calls} == {f.__name__ for f in TOOLS}
    assert sum(len(calls) > 1 for _, calls in turns) >= 10  # parallel tool calls
    assert not any("dsgc" in json.dumps(t) for t, _ in turns)  # nothing annotated


@pytest.mark.parametrize("adapter", ["middleware", "hook", "select_messages"])
@pytest.mark.parametrize("share", [0.10, 0.25, 0.50])
def test_the_binder_of_that_account_is_kept_within_budget(adapter, share):
    budget = int(share * session_cost())
    model, state = run(adapter, budget)
    assert len([m for m in state if isinstance(m, HumanMessage)]) == 64
    for sent in model.seen:
        assert sent and cost(sent) <= budget
        check_messages([convert_to_openai_messages(m) for m in sent])  # every tool result answers a kept call
    question = next(sent for sent in reversed(model.seen) if sent[-1].content == QUESTION)
    assert any(BINDER in str(m.content) for m in question)
    assert state[-3].tool_calls == [
        {"name": "check_kyc", "args": {"account": CUSTOMER}, "id": state[-3].tool_calls[0]["id"], "type": "tool_call"}
    ]
