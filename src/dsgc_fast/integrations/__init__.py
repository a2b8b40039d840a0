"""Adapters for agent frameworks, each behind an optional extra of the distribution.

* ``dsgc_fast.integrations.langchain`` (extra ``langchain``): a ``pre_model_hook`` for
  LangGraph's ``create_react_agent`` and a middleware for LangChain's ``create_agent``, both
  keeping a ``MemoryStore`` per thread id; ``select_messages``, shaped like ``trim_messages``.
* ``dsgc_fast.integrations.openai_agents`` (extra ``openai-agents``): a
  ``call_model_input_filter`` for the Agents SDK over Responses items, and Responses items
  in and out of a ``MemoryStore``.

Nothing else in ``dsgc_fast`` imports this package, so the engine needs none of these
libraries.
"""
