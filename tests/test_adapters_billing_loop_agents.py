"""The 64-user-turn billing-support loop of issue 26 through the OpenAI Agents SDK, nothing annotated.

The script of ``tests/_billing_script.py`` (the customer's account named once, in turn 2; three
tools, parallel calls, six colleagues' accounts; last "Did that account clear KYC?") runs
through the SDK's ``Runner`` with a scripted ``Model`` (``PlannedModel``, replying by the
script's ``calls_for``) and ``InputFilter`` as the run's ``call_model_input_filter``, the
history carried from turn to turn by ``result.to_input_list()``.  At 10%, 25% and 50% of the
session's cost (the items of the question's model call, counted as the filter counts them:
each chat message of the items with its framing, the agent's instructions not counted),
every model call is sent a valid context (no ``function_call_output`` without its call)
within the budget, and the question's call keeps turn 2, so the model checks the right account
(a control under ``policy="recency"`` loses it).
"""

from __future__ import annotations

import json
import os
from functools import cache

import pytest

from tests._requires import require

require("agents", "openai-agents")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, RunConfig, Runner, function_tool
from agents.models.chatcmpl_converter import Converter

from dsgc_fast.integrations.openai_agents import InputFilter, item_groups
from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from tests._billing_script import BINDER, CUSTOMER, QUESTION, SYSTEM, TOOLS, call_id, calls_for, script
from tests._scripted_agents_model import PlannedModel, function_call, message, text_of

COUNT = token_counter(None)


def plan(items: list) -> list:
    """The scripted model: ``calls_for`` a user turn, a summary after a tool result."""
    last = items[-1]
    if last.get("type") == "function_call_output":
        return [message(f"Done: {last['output'][:60]}")]
    text = text_of(last)
    calls = calls_for(text, [text_of(item) for item in items if item.get("role") == "user"])
    if not calls:
        return [message(f"Noted: {text[:40]}")]
    return [function_call(call_id(text, j), name, {"account": account}) for j, (name, account) in enumerate(calls)]


def run(budget: int | None, **options) -> tuple[PlannedModel, list]:
    """The whole loop (``budget`` None: no filter; ``options`` to ``InputFilter``); the model and the final items."""
    model = PlannedModel(plan)
    agent = Agent(name="billing", instructions=SYSTEM, model=model, tools=[function_tool(f) for f in TOOLS])
    chosen = None if budget is None else InputFilter(budget, **options)
    config = RunConfig(call_model_input_filter=chosen, tracing_disabled=True)
    history: list = []
    for text, _ in [*script(), (QUESTION, [])]:
        history = Runner.run_sync(
            agent, [*history, {"role": "user", "content": text}], run_config=config
        ).to_input_list()
    return model, history


def cost(items: list) -> int:
    """What ``InputFilter`` counts for ``items``: each chat message they form, with its framing."""
    return sum(message_tokens(group.message, COUNT) for group in item_groups(items) if group.message is not None)


def question_call(model: PlannedModel) -> list:
    return next(sent for sent in reversed(model.seen) if sent[-1].get("content") == QUESTION)


@cache
def session_cost() -> int:
    """The cost of the history the question's model call selects from."""
    model, _ = run(None)
    return cost(question_call(model))


def test_the_unfiltered_loop_checks_the_customer_s_account():
    """The control: with the whole history sent, the question's call holds turn 2."""
    model, history = run(None)
    assert len([item for item in history if item.get("role") == "user"]) == 64
    assert any(text_of(item) == BINDER for item in question_call(model))
    assert len(question_call(model)) == len(history) - 3  # all but the check, its result and the answer


@pytest.mark.parametrize("share", [0.10, 0.25, 0.50])
def test_the_binder_of_that_account_is_kept_within_budget(share):
    budget = int(share * session_cost())
    model, history = run(budget)
    assert len([item for item in history if item.get("role") == "user"]) == 64
    for sent in model.seen:
        assert sent and cost(sent) <= budget
        check_messages(Converter.items_to_messages(sent))  # every output answers a call sent with it
    question = question_call(model)
    assert len(question) < len(history) and any(text_of(item) == BINDER for item in question)
    (kyc,) = [item for item in history[-3:] if item.get("type") == "function_call"]
    assert (kyc["name"], json.loads(kyc["arguments"])) == ("check_kyc", {"account": CUSTOMER})


def test_a_recency_control_checks_a_colleague_s_account():
    """The check above can fail: the newest whole units alone (``policy="recency"``) lose turn 2."""
    model, history = run(int(0.10 * session_cost()), policy="recency")
    assert not any(text_of(item) == BINDER for item in question_call(model))
    (kyc,) = [item for item in history[-3:] if item.get("type") == "function_call"]
    assert json.loads(kyc["arguments"])["account"] != CUSTOMER
