"""A 64-user-turn billing-support loop, nothing annotated, through both LangChain adapters (issue 26).

The customer on the line names their account once, in turn 2; the agent keeps working on it
with three tools (``check_payout``, ``lookup_charges``, ``check_kyc``), some turns with
parallel calls, while colleagues ask about six other accounts; the last turn is "Did that
account clear KYC?".  The chat model is scripted (``PlannedChatModel``): each user turn has
its planned tool calls, except the last, for which the model checks the account named by the
earliest user message in its context that names one: the customer's account when turn 2 was
sent, a colleague's otherwise.  Through ``create_agent`` with ``ThreadMemory.middleware()``
and through LangGraph's ``create_react_agent`` (the only prebuilt agent with a
``pre_model_hook``; deprecated in LangGraph 1.x, hence the silenced warning) with
``ThreadMemory.pre_model_hook``, at 10%, 25% and 50% of the session's cost: every model call
is sent a valid context (no orphan tool message) within the budget, and the last one keeps
turn 2, so the model checks the right account.  (The per-thread mirror of earlier versions
lost turn 2 at 10% through both adapters; a control run under ``strategy="last"`` loses it too.)
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from functools import cache

import pytest

from tests._requires import require

require("langgraph", "langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, convert_to_openai_messages
from langgraph.checkpoint.memory import InMemorySaver

from dsgc_fast.integrations.langchain import ThreadMemory
from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from tests._scripted_models import PlannedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

CUSTOMER = "AC-7730"
OTHERS = ["AC-1001", "AC-2040", "AC-3318", "AC-4417", "AC-5502", "AC-6690"]
SYSTEM = "You are the billing support agent of Northwind Payments. Use the tools; never guess a status."
BINDER = f"The customer on the line owns account {CUSTOMER} and says their payout is held."
QUESTION = "Did that account clear KYC?"
COUNT = token_counter(None)
ACCOUNT = re.compile(r"\bAC-\d{4}\b")


def check_payout(account: str) -> str:
    """The payout status of an account."""
    held = account == CUSTOMER
    return json.dumps({"account": account, "payout": "held" if held else "paid", "amount_eur": 1840 if held else 310})


def lookup_charges(account: str) -> str:
    """The latest charges of an account."""
    seed = int(account[3:])
    return json.dumps(
        [{"charge": f"ch_{seed + k}", "amount_eur": (seed * (k + 3)) % 900, "status": "settled"} for k in range(8)]
    )


def check_kyc(account: str) -> str:
    """The KYC status of an account."""
    return json.dumps({"account": account, "kyc": "pending review" if account == CUSTOMER else "cleared"})


TOOLS = [check_payout, lookup_charges, check_kyc]


def script() -> list[tuple[str, list[tuple[str, str]]]]:
    """The 63 user turns before the question, each with its planned calls ``(tool, account)``."""
    turns: list[tuple[str, list[tuple[str, str]]]] = [
        ("Good morning, I am on the billing queue today.", []),
        (BINDER, [("check_payout", CUSTOMER)]),
    ]
    follow_ups = [
        ("What are their latest charges?", [("lookup_charges", CUSTOMER)]),
        ("Did their payout move since?", [("check_payout", CUSTOMER)]),
        ("How long do held payouts usually take to release?", []),
    ]
    j = 0  # the colleagues' turns so far
    for k in range(3, 64):
        if k >= 56 or k % 3 == 0:  # the customer's follow-ups, and only theirs at the end
            text, calls = follow_ups[k % 3]
            turns.append((f"{text} (note {k})", calls))
            continue
        a, b = OTHERS[j % 6], OTHERS[(j + 1) % 6]
        turns.append(
            [
                (f"A colleague asks: what are the charges on account {a}? (ticket {k})", [("lookup_charges", a)]),
                (
                    f"Compare the payouts of accounts {a} and {b} for ticket {k}.",
                    [("check_payout", a), ("check_payout", b)],
                ),
                (f"Has account {a} cleared KYC yet? (ticket {k})", [("check_kyc", a)]),
                (f"Check KYC and charges for account {a}, ticket {k}.", [("check_kyc", a), ("lookup_charges", a)]),
            ][j % 4]
        )
        j += 1
    return turns


@cache
def planned_calls() -> dict[str, list[tuple[str, str]]]:
    return dict(script())


def plan(messages: list[BaseMessage]) -> AIMessage:
    """The scripted model: planned calls for a user turn, a summary after tool results."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.content[:60]}")
    text = str(last.content)
    if text == QUESTION:
        named = [ACCOUNT.findall(str(m.content)) for m in messages if isinstance(m, HumanMessage)]
        calls = [("check_kyc", next((found[0] for found in named if found), "unknown"))]
    else:
        calls = planned_calls()[text]
    if not calls:
        return AIMessage(f"Noted: {text[:40]}")
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return AIMessage(
        "",
        tool_calls=[{"name": n, "args": {"account": a}, "id": f"call_{digest}_{j}"} for j, (n, a) in enumerate(calls)],
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
        else:
            agent = create_react_agent(
                model, TOOLS, prompt=None, pre_model_hook=memory.pre_model_hook, checkpointer=InMemorySaver()
            )
    config = {"configurable": {"thread_id": "billing"}, "recursion_limit": 20}
    first = [] if adapter == "middleware" else [("system", SYSTEM)]
    for k, (text, _) in enumerate([*script(), (QUESTION, [])]):
        state = agent.invoke({"messages": [*(first if k == 0 else []), ("user", text)]}, config)
    return model, state["messages"]


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


@pytest.mark.parametrize("adapter", ["middleware", "hook"])
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
