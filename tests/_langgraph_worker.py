"""A LangGraph agent worker for the multi-worker test: ``python -m tests._langgraph_worker URI BUDGET``.

It builds ``create_react_agent`` with the scripted model, dsgc's ``ThreadMemory`` as the
``pre_model_hook`` and LangGraph's ``PostgresSaver`` on ``URI`` as the checkpointer, prints
``ready``, then reads one JSON command per line from stdin, ``{"thread": ..., "messages":
[OpenAI-style messages, "dsgc" annotations allowed]}``, runs one turn, and answers with one
JSON line: the state's length after the turn, what each model call of the turn was sent
(contents and roles) and this process's id.  ``{"thread": ..., "peek": true}`` runs no turn and
answers with what the hook would send now for the thread's checkpointed messages
(``"selected"``).  An empty line ends it.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

from langchain_core.messages import convert_to_openai_messages
from langgraph.checkpoint.postgres import PostgresSaver

from dsgc_fast.integrations.langchain import ThreadMemory
from tests._scripted_models import ScriptedChatModel, langchain_messages, lookup

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def main() -> None:
    uri, budget = sys.argv[1], int(sys.argv[2])
    model, memory = ScriptedChatModel(), ThreadMemory(budget)
    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
        agent = create_react_agent(model, [lookup], pre_model_hook=memory.pre_model_hook, checkpointer=saver)
        print("ready", flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            command = json.loads(line)
            config = {"configurable": {"thread_id": command["thread"]}}
            if command.get("peek"):
                messages = agent.get_state(config).values["messages"]
                selected = memory.pre_model_hook({"messages": messages}, config)["llm_input_messages"]
                out = {"pid": os.getpid(), "selected": [convert_to_openai_messages(m) for m in selected]}
                print(json.dumps(out), flush=True)
                continue
            calls = len(model.seen)
            state = agent.invoke({"messages": langchain_messages(command["messages"])}, config)
            sent = [[convert_to_openai_messages(m) for m in seen] for seen in model.seen[calls:]]
            print(json.dumps({"pid": os.getpid(), "state": len(state["messages"]), "sent": sent}), flush=True)


if __name__ == "__main__":
    main()
