"""Issue 28's adapter defects (items 3, 4, 5, 6, 7, 11 and 13), each a case the per-thread mirror got wrong.

Every case checks what ``ThreadMemory`` sends against ``select_messages`` over the same list
(what the pure design promises) and the symptom the issue names.  Run against the mirror
design (``integrations/_mirror.py``, main at d98a247), items 3, 4, 5, 6, 11 and 13 fail as
written; item 7 needs ``cached_threads`` (the mirror's ``max_threads=2`` closed stores in use:
``ValueError: the store is closed``).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from tests._requires import require

require("langgraph", "langchain")

from langchain.agents import create_agent
from langchain.agents.middleware import dynamic_prompt
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from dsgc_fast.integrations.langchain import ThreadMemory, select_messages
from tests._reachable import reachable_strings
from tests._scripted_models import ScriptedChatModel, lookup
from tests.test_adapters_pure import shape
from tests.test_integrations_langchain import langchain_session, sent_tokens

TOPICS = ["refund RF-9", "invoice INV-12", "payout of M-2207", "chargeback CB-4", "fee on card 0042",
          "the KYC of AC-7", "a transfer T-55", "the dispute D-3", "plan upgrade P-2"]  # fmt: skip


def small_talk() -> list:
    """A system prompt and nine short user / assistant exchanges (about 300 tokens)."""
    out = [SystemMessage("You triage billing tickets.", id="s")]
    for k, topic in enumerate(TOPICS):
        out += [HumanMessage(f"Customer asks about {topic}.", id=f"u{k}"), AIMessage(f"Noted {topic}.", id=f"a{k}")]
    return out


def test_item_3_after_time_travel_the_now_newest_user_turn_is_sent():
    history = langchain_session()
    earlier = history[: [k for k, m in enumerate(history) if m.type == "human"][-6] + 1]  # five turns undone
    for budget in (60, 150, 400):
        memory = ThreadMemory(budget)
        memory.select(history, thread_id="tt")
        sent = memory.select(earlier, thread_id="tt")
        assert sent and sent[-1] is earlier[-1]
        assert shape(sent) == shape(select_messages(earlier, max_tokens=budget))


def test_item_4_the_context_refills_after_one_large_tool_result():
    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"query": "ledger"}, "id": "c1"}], id="ac")
    big = ToolMessage(json.dumps([{"row": n, "status": "ok"} for n in range(300)]), tool_call_id="c1", id="tb")
    memory = ThreadMemory(400)
    memory.select(small_talk(), thread_id="r")
    with_big = [*small_talk(), HumanMessage("look up the ledger", id="u9"), call, big]
    assert sent_tokens(memory.select(with_big, thread_id="r")) <= 400  # the result, cut to fit
    after = [*with_big, AIMessage("The ledger is long.", id="a9"), HumanMessage("What about refund RF-9?", id="u10")]
    sent = memory.select(after, thread_id="r")
    assert shape(sent) == shape(select_messages(after, max_tokens=400))
    assert "u0" in [m.id for m in sent] and sent_tokens(sent) > 250  # refilled (the mirror sent 42 tokens)


def test_item_5_a_reopened_or_restarted_thread_gets_the_same_context():
    history = langchain_session()
    humans = [k for k, m in enumerate(history) if m.type == "human"]
    for budget in (150, 400):
        served = ThreadMemory(budget)
        for k in humans:  # a long-running worker, turn by turn
            served.select(history[: k + 1], thread_id="x")
        restarted = ThreadMemory(budget)  # a worker that meets the thread now (restart, other machine)
        assert shape(served.select(history, thread_id="x")) == shape(restarted.select(history, thread_id="x"))


def test_item_6_a_dynamic_system_prompt_keeps_work_and_memory_to_the_list():
    model, memory = ScriptedChatModel(), ThreadMemory(300)

    @dynamic_prompt
    def prompt(request):
        return f"You triage billing tickets. Turn {len(request.messages)}."

    agent = create_agent(model, [lookup], middleware=[prompt, memory.middleware()], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "d"}}
    for k in range(30):
        agent.invoke({"messages": [HumanMessage(f"Customer asks about {TOPICS[k % 9]} again ({k}).")]}, config)
        state = agent.get_state(config).values["messages"]
        request = [SystemMessage(f"You triage billing tickets. Turn {len(state) - 1}."), *state[:-1]]
        assert shape(model.seen[-1]) == shape(select_messages(request, max_tokens=300))
    prompts = {s for s in reachable_strings(memory) if s.startswith("You triage billing tickets. Turn")}
    assert prompts == {f"You triage billing tickets. Turn {len(state) - 1}."}  # only the current list is held
    (thread,) = memory._threads.values()
    assert len(thread.records) == len(state) and len(thread.cache.rows) <= len(state) + 1


def test_item_7_more_concurrent_threads_than_cached_ones_never_fail():
    sessions = {
        f"t{k}": [*small_talk()[: 3 + 2 * k], HumanMessage(f"What about {TOPICS[k]}?", id="q")] for k in range(6)
    }
    memory = ThreadMemory(120, cached_threads=2)

    def call(k: int) -> bool:
        thread = f"t{k % 6}"
        return shape(memory.select(sessions[thread], thread_id=thread)) == shape(
            select_messages(sessions[thread], max_tokens=120)
        )

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(call, range(90)))
    assert len(memory._threads) <= 2


def test_item_11_a_removed_or_redacted_card_number_is_gone_at_the_next_call():
    card = "4111 1111 1111 1111"
    model, memory = ScriptedChatModel(), ThreadMemory(400)
    agent = create_agent(model, [lookup], middleware=[memory.middleware()], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "pci"}}
    agent.invoke({"messages": [HumanMessage(f"Charge card {card} for invoice 7.", id="h1")]}, config)
    assert [s for s in reachable_strings(memory) if card in s]  # held while the thread's list holds it
    agent.update_state(config, {"messages": [RemoveMessage(id="h1")]})
    agent.invoke({"messages": [HumanMessage("look up invoice 7", id="h2")]}, config)
    assert not [s for s in reachable_strings(memory) if card in s]
    assert not any(card in str(m.content) for m in model.seen[-1])
    agent.invoke({"messages": [HumanMessage(f"Also card {card}.", id="h3")]}, config)
    agent.update_state(config, {"messages": [HumanMessage("Also card [redacted].", id="h3")]})  # redacted in place
    agent.invoke({"messages": [HumanMessage("thanks", id="h4")]}, config)
    assert not [s for s in reachable_strings(memory) if card in s]


def test_item_13_a_system_message_mid_conversation_is_sent_in_place_by_the_middleware():
    model, memory = ScriptedChatModel(), ThreadMemory(2000)
    agent = create_agent(
        model, [], system_prompt="You triage billing tickets.", middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
    )  # fmt: skip
    config = {"configurable": {"thread_id": "m"}}
    agent.invoke({"messages": [HumanMessage("Invoice INV-1 was charged twice.")]}, config)
    note = SystemMessage("Supervisor note: refunds above 500 EUR need approval.")
    agent.invoke({"messages": [note, HumanMessage("Refund 700 EUR for INV-1.")]}, config)
    sent = model.seen[-1]
    assert sent[0].content == "You triage billing tickets."
    assert [m.type for m in sent] == ["system", "human", "ai", "system", "human"]
    assert sent[3].content == note.content
