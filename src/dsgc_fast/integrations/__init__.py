"""Adapters for agent frameworks, each behind an optional extra of the distribution.

* ``dsgc_fast.integrations.langchain`` (extra ``langchain``): ``select_messages``, a drop-in
  for ``trim_messages`` (and ``aselect_messages``), and ``ThreadMemory``, a ``pre_model_hook``
  for LangGraph's ``create_react_agent`` and a middleware for LangChain's ``create_agent``
  sending exactly what ``select_messages`` selects: a pure function of the framework's history.
* ``dsgc_fast.integrations.openai_agents`` (extra ``openai-agents``): a
  ``call_model_input_filter`` for the Agents SDK over Responses items, ``RetainedSession``, an
  SDK ``Session`` over any other that returns the retained history, and Responses items in and
  out of a ``MemoryStore``.

Nothing else in ``dsgc_fast`` imports this package, so the engine needs none of these
libraries.
"""
