"""``select_messages`` as a drop-in for LangChain's ``trim_messages`` (issue 27 item 2).

``trim_messages``' arguments where they make sense (``max_tokens``, ``token_counter`` as a
callable, a chat model, ``"approximate"`` or a tokenizer name, ``strategy``, ``start_on``,
``include_system``), a ``Runnable`` when called without messages, and ``aselect_messages``;
its other arguments are refused with the reason.
"""

from __future__ import annotations

import asyncio

import pytest

from tests._requires import require

require("langchain_core", "langchain")

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable

from dsgc_fast import SelectCache
from dsgc_fast.integrations.langchain import ThreadMemory, aselect_messages, select_messages
from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.value_table import HEADER as VALUE_TABLE_HEADER
from tests.test_adapters_pure import shape
from tests.test_integrations_langchain import keeps_binder, langchain_session, sent_tokens


def valid(messages: list[BaseMessage]) -> None:
    from langchain_core.messages import convert_to_openai_messages

    check_messages([convert_to_openai_messages(m) for m in messages])


def test_a_trim_messages_call_works_with_its_name_changed():
    history = langchain_session()
    options = {"max_tokens": 300, "strategy": "last", "start_on": "human", "include_system": True}
    trimmed = trim_messages(history, token_counter=count_tokens_approximately, **options)
    sent = select_messages(history, token_counter=count_tokens_approximately, **options)
    assert sum(count_tokens_approximately([m]) for m in sent) <= 300 >= count_tokens_approximately(trimmed)
    assert sent[0] is history[0] and sent[1].type == "human" and sent[-1] is history[-1]
    valid(sent)


@pytest.mark.parametrize("budget", [3, 8, 20])
def test_len_counts_messages(budget):
    history = langchain_session()
    sent = select_messages(history, max_tokens=budget, token_counter=len)
    assert len(sent) <= budget and sent[-1] is history[-1]
    valid(sent)
    if budget >= 8:
        assert keeps_binder(sent)  # the annotated binder, pinned, fits in messages too


def test_a_per_message_counter_a_list_counter_and_a_chat_model_agree():
    history = langchain_session()

    def per_message(message: BaseMessage) -> int:
        return count_tokens_approximately([message])

    class Model:
        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            return count_tokens_approximately(messages)

    expected = shape(select_messages(history, max_tokens=400, token_counter=count_tokens_approximately))
    assert shape(select_messages(history, max_tokens=400, token_counter=per_message)) == expected
    assert shape(select_messages(history, max_tokens=400, token_counter=Model())) == expected
    assert shape(select_messages(history, max_tokens=400, token_counter="approximate")) == expected


def test_a_tokenizer_name_as_token_counter_is_the_tokenizer():
    history = langchain_session()
    assert shape(select_messages(history, max_tokens=400, token_counter="o200k_base")) == shape(
        select_messages(history, max_tokens=400, tokenizer="o200k_base")
    )
    assert sent_tokens(select_messages(history, max_tokens=400)) <= 400  # the default: tokens with chat framing


def test_strategy_last_is_select_s_recency_policy():
    history = langchain_session()
    last = select_messages(history, max_tokens=300, strategy="last")
    assert shape(last) == shape(select_messages(history, max_tokens=300, policy="recency"))
    assert shape(last) != shape(select_messages(history, max_tokens=300))
    valid(last)
    with pytest.raises(ValueError, match="strategy must be one of"):
        select_messages(history, max_tokens=300, strategy="first")
    with pytest.raises(ValueError, match="strategy='last' is policy='recency'"):
        select_messages(history, max_tokens=300, strategy="last", policy="dsgc")


def test_start_on_and_include_system():
    history = langchain_session()
    for budget in (100, 300, 800):
        sent = select_messages(history, max_tokens=budget, start_on="ai")
        rest = [m for m in sent if m.type != "system"]
        assert rest[0].type == "ai" or rest[0] is history[-1]  # the newest user message is always sent
        assert [m.id for m in rest] == [
            m.id for m in select_messages(history, max_tokens=budget) if m.type != "system"
        ][-len(rest) :]
        valid(sent)
        without = select_messages(history, max_tokens=budget, include_system=False)
        # no system message of the history; a value table (a new system message) may be sent
        assert not any(m is h for m in without for h in history if h.type == "system")
        assert all(m.content.startswith(VALUE_TABLE_HEADER) for m in without if m.type == "system")
        assert sent_tokens(without) <= budget and without[-1] is history[-1]
    with pytest.raises(ValueError, match="start_on cannot be 'tool'"):
        select_messages(history, max_tokens=100, start_on=["human", "tool"])
    with pytest.raises(TypeError, match="include_system must be a bool"):
        select_messages(history, max_tokens=100, include_system="yes")


def test_without_messages_a_runnable_sync_async_and_in_a_chain():
    history = langchain_session()
    selector = select_messages(max_tokens=300, token_counter=len)
    assert isinstance(selector, Runnable)
    expected = shape(select_messages(history, max_tokens=300, token_counter=len))
    assert shape(selector.invoke(history)) == expected
    assert shape(asyncio.run(selector.ainvoke(history))) == expected
    assert shape(asyncio.run(aselect_messages(history, max_tokens=300, token_counter=len))) == expected
    prompt = ChatPromptTemplate.from_messages([("system", "You triage tickets."), MessagesPlaceholder("history")])
    chained = (prompt | select_messages(max_tokens=4, token_counter=len)).invoke({"history": history[1:]})
    assert [m.type for m in chained][0] == "system" and chained[-1].content == history[-1].content
    assert len(chained) <= 4


def test_trim_only_and_conflicting_arguments_are_refused_with_the_reason():
    history = [SystemMessage("s"), HumanMessage("hi")]
    with pytest.raises(TypeError, match="does not take trim_messages' 'end_on'"):
        select_messages(history, max_tokens=10, end_on="human")
    with pytest.raises(TypeError, match="does not take trim_messages' 'allow_partial'"):
        select_messages(max_tokens=10, allow_partial=True)  # refused when the Runnable is made
    with pytest.raises(ValueError, match="token_counter or tokenizer, not both"):
        select_messages(history, max_tokens=10, token_counter=len, tokenizer="o200k_base")
    with pytest.raises(TypeError, match="token_counter must be a callable"):
        select_messages(history, max_tokens=10, token_counter=3)
    with pytest.raises(ValueError, match="non-negative integer"):
        select_messages(history, max_tokens=10, token_counter=lambda messages: -1)
    with pytest.raises(TypeError, match="unknown setting"):
        select_messages(history, max_tokens=10, budget=10)


def test_thread_memory_takes_the_same_settings():
    history = langchain_session()
    settings = {"token_counter": len, "strategy": "last", "start_on": "human"}
    memory = ThreadMemory(12, **settings)
    assert shape(memory.select(history)) == shape(
        select_messages(history, max_tokens=12, cache=SelectCache(), **settings)
    )


def test_the_middleware_without_the_system_prompt_in_the_selection():
    """``include_system=False``: the request's system prompt is sent as it is, the budget goes to the rest."""
    from langchain.agents import create_agent

    from tests._scripted_models import ScriptedChatModel

    history = langchain_session()
    model, memory = ScriptedChatModel(), ThreadMemory(300, include_system=False)
    agent = create_agent(model, [], system_prompt=history[0].content, middleware=[memory.middleware()])
    agent.invoke({"messages": history[1:]}, {"configurable": {"thread_id": "n"}})
    sent = model.seen[-1]
    assert sent[0].content == history[0].content and sent_tokens(sent[1:]) <= 300
    assert shape(sent[1:]) == shape(select_messages(history[1:], max_tokens=300))
