"""LangChain and LangGraph adapters (extra ``langchain``).

``ThreadMemory(budget, ...)`` keeps a ``MemoryStore`` per thread id in step with the agent's
messages (``_mirror``: by message id, following ``RemoveMessage`` and replaced messages) and,
before each model call, compacts it to the budget and sends what it keeps:

* ``memory.pre_model_hook`` for LangGraph's ``create_react_agent(..., pre_model_hook=...)``
  returns ``{"llm_input_messages": [...]}``: the state keeps the whole history, the model
  sees the kept messages, never an empty list (LangGraph would then send the whole history);
* ``memory.middleware()`` for LangChain's ``create_agent(..., middleware=[...])`` (which has
  no ``pre_model_hook``) rewrites each model request the same way (``wrap_model_call``),
  system message included in the budget.

``select_messages(messages, max_tokens=...)`` is shaped like LangChain's ``trim_messages``:
stateless, over a list of ``BaseMessage`` (``dsgc_fast.select`` decides, its cache encoding
only messages it has not seen), for use anywhere a trimmer goes.

Messages are converted with LangChain's ``convert_to_openai_messages``; the messages sent
are the state's own message objects, in the state's order, and a binding table (when the
pinned referents' binders do not fit) goes in as a system message.  A message may carry a
``"dsgc"`` annotation in ``additional_kwargs`` (``binds``, ``uses``, ``pinned``, ``cost``), e.g.
``HumanMessage("Account 8841-C ...", additional_kwargs={"dsgc": {"binds": {"that account":
"8841-C"}}})``.  Budgets are in model tokens (``tokenizer``, default as
``dsgc_fast.token_counts.token_counter``), with each message's chat framing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage, convert_to_openai_messages
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from dsgc_ref.contract import check_budget

from ..compaction import check_over_budget
from ..explain import CompactionReport
from ..store import MemoryStore
from ._annotations import checked_annotation
from ._mirror import DEFAULT_MAX_THREADS, DEFAULT_OVER_BUDGET, ThreadMirrors
from ._select import select_history

#: the thread id of a graph run without one (no checkpointer, no ``thread_id`` in the config)
DEFAULT_THREAD = "default"
#: annotation fields a LangChain message may carry in ``additional_kwargs["dsgc"]``
ANNOTATION_FIELDS = ("binds", "uses", "pinned", "cost")
_SYSTEM_KEY = "\x00system"


class ThreadMemory:
    """dsgc context selection for LangGraph and LangChain agents, one store per thread id.

    Parameters
    ----------
    budget : int
        Tokens the messages sent to the model may cost (with their chat framing).
    tokenizer : optional
        How tokens are counted (``dsgc_fast.token_counts.token_counter`` takes the same
        values; default: o200k_base when the ``tokens`` extra is installed, else the
        approximate counter).
    store_factory : callable, optional
        ``(thread_id, counter) -> MemoryStore`` for a thread seen the first time, counting
        with ``counter`` (default: an in-memory store, ``MemoryStore(tokenizer=counter)``).
        Use files to keep each thread's archive.
    on_over_budget : {"truncate", "roots_only", "raise"}
        When the system messages and the newest user turn alone exceed the budget: cut their
        largest tool results to fit (default; a cut ``ToolMessage`` is sent as a copy with
        the cut content), send just them, or raise ``ReferentEvictionError``.
    max_threads : int
        Threads whose stores this process keeps (the least recently used are closed).
    **options
        Passed to ``compact_messages`` (``params``, ``policy``, ``lambda_pi``, ...).
    """

    def __init__(
        self,
        budget: int,
        *,
        tokenizer: Any = None,
        store_factory: Callable[..., MemoryStore] | None = None,
        on_over_budget: str = DEFAULT_OVER_BUDGET,
        max_threads: int = DEFAULT_MAX_THREADS,
        **options: Any,
    ) -> None:
        self.budget = check_budget(budget)
        self.on_over_budget = check_over_budget(on_over_budget)
        self.options = options
        self._threads = ThreadMirrors(store_factory, tokenizer=tokenizer, max_threads=max_threads)

    # -- LangGraph ----------------------------------------------------------------------
    def pre_model_hook(self, state: Mapping[str, Any] | Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        """``create_react_agent``'s ``pre_model_hook``: ``{"llm_input_messages": kept}``."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        return {"llm_input_messages": self.select(messages, thread_id=thread_of(config))}

    __call__ = pre_model_hook

    # -- LangChain create_agent -----------------------------------------------------------
    def middleware(self) -> AgentMiddleware:
        """A ``create_agent`` middleware doing what ``pre_model_hook`` does, per model request."""
        return _DsgcMiddleware(self)

    # -- selection ----------------------------------------------------------------------
    def select(self, messages: Sequence[BaseMessage], *, thread_id: str = DEFAULT_THREAD) -> list[BaseMessage]:
        """The messages of ``thread_id`` to send now (the input's own objects, in its order).

        A binding table, if escalation made one, comes as a ``SystemMessage`` after the
        leading system messages; a tool result cut to fit as a copy with the cut content.
        Empty only if ``messages`` is.
        """
        if not isinstance(thread_id, str):
            raise TypeError(f"thread_id must be a str, got {type(thread_id).__name__}")
        messages = list(messages)
        keys = message_keys(messages)
        mirror = self._threads.get(thread_id)
        with mirror.lock:
            mirror.sync(list(zip(keys, (to_openai(m) for m in messages))))
            context = mirror.context(self.budget, on_over_budget=self.on_over_budget, **self.options)
        chosen = set(context.keys)
        out = [_sent(m, context.cut.get(key)) for key, m in zip(keys, messages) if key in chosen]
        return _with_tables(out, context.tables)

    def report(self, thread_id: str = DEFAULT_THREAD) -> CompactionReport | None:
        """The last compaction's report for ``thread_id`` in this process (None before one)."""
        mirror = self._threads.peek(thread_id)
        return None if mirror is None else mirror.report

    def store(self, thread_id: str = DEFAULT_THREAD) -> MemoryStore:
        """The store mirroring ``thread_id`` in this process."""
        return self._threads.store(thread_id)

    def close(self) -> None:
        """Close every thread's store."""
        self._threads.close()


class _DsgcMiddleware(AgentMiddleware):
    """``wrap_model_call``: the request's system message and messages, selected by ``ThreadMemory``."""

    def __init__(self, memory: ThreadMemory) -> None:
        super().__init__()
        self.memory = memory

    @property
    def name(self) -> str:
        return "DsgcContext"

    def _request(self, request: ModelRequest) -> ModelRequest:
        system = [] if request.system_message is None else [request.system_message]
        kept = self.memory.select([*system, *request.messages], thread_id=thread_of(get_config()))
        if not system:
            return request.override(messages=cast(Any, kept))  # select keeps the request's message types
        lead = [m for m in kept if isinstance(m, SystemMessage)]  # the request's, then any binding table
        parts = [m.content if isinstance(m.content, str) else m.text for m in lead]
        merged = SystemMessage(content="\n\n".join(parts)) if len(lead) > 1 else request.system_message
        rest = [m for m in kept if not isinstance(m, SystemMessage)]
        return request.override(system_message=merged, messages=cast(Any, rest))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(await asyncio.to_thread(self._request, request))


def select_messages(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    tokenizer: Any = None,
    query: Any = None,
    on_over_budget: str = DEFAULT_OVER_BUDGET,
    **options: Any,
) -> list[BaseMessage]:
    """The messages to send within ``max_tokens``, shaped like ``trim_messages``.

    Converted with ``convert_to_openai_messages`` (``additional_kwargs["dsgc"]`` annotations
    included), decided by ``dsgc_fast.select`` (``tokenizer``, ``query`` and ``**options``
    such as ``params``, ``encoder``, ``cache`` go to it).  Returns the input's own message
    objects in their order; a binding table comes as a ``SystemMessage`` after the leading
    system messages, and a tool result cut to fit (``on_over_budget="truncate"``, the
    default: never an error, never an empty list for a non-empty input) as a copy of the
    ``ToolMessage`` with the cut content.
    """
    messages = list(messages)
    if not messages:
        return []
    chosen = select_history(
        [to_openai(m) for m in message_checked(messages)], max_tokens, tokenizer=tokenizer, query=query,
        on_over_budget=on_over_budget, **options,
    )  # fmt: skip
    cut = {k: t.message for k, t in chosen.truncated.items()}
    out = [_sent(messages[k], cut.get(k)) for k in chosen.indices]
    return _with_tables(out, [] if chosen.binding_table is None else [chosen.binding_table])


def _sent(message: BaseMessage, cut: Mapping[str, Any] | None) -> BaseMessage:
    """``message``, or a copy with the content of its ``cut`` (OpenAI-style) message."""
    return message if cut is None else message.model_copy(update={"content": cut["content"]})


def _with_tables(messages: list[BaseMessage], tables: Sequence[str]) -> list[BaseMessage]:
    """``messages`` with a ``SystemMessage`` per binding table after the leading system messages."""
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    return [*messages[:lead], *(SystemMessage(content=text) for text in tables), *messages[lead:]]


def message_checked(messages: Sequence[Any]) -> Sequence[BaseMessage]:
    """``messages`` if every one is a LangChain ``BaseMessage``; ``TypeError`` otherwise."""
    for message in messages:
        if not isinstance(message, BaseMessage):
            raise TypeError(f"messages must be LangChain BaseMessage objects, got {type(message).__name__}")
    return messages


def thread_of(config: Mapping[str, Any] | None) -> str:
    """The ``thread_id`` of a run's config (``DEFAULT_THREAD`` without one)."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return DEFAULT_THREAD if thread is None else str(thread)


def to_openai(message: BaseMessage) -> dict[str, Any]:
    """The OpenAI-style message (``convert_to_openai_messages``) with its ``dsgc`` annotation."""
    out = convert_to_openai_messages(message)
    annotation = (message.additional_kwargs or {}).get("dsgc")
    if annotation:
        out["dsgc"] = dict(
            checked_annotation(annotation, ANNOTATION_FIELDS, "a LangChain message's additional_kwargs['dsgc']")
        )
    return out


def message_keys(messages: Sequence[BaseMessage]) -> list[str]:
    """Each message's id; a message without one is keyed by its content and its occurrence."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    for message in message_checked(messages):
        if isinstance(message, SystemMessage) and message.id is None and not keys:
            keys.append(_SYSTEM_KEY)
            continue
        if message.id is not None:
            keys.append(f"id:{message.id}")
            continue
        digest = hashlib.sha256(json.dumps(convert_to_openai_messages(message), sort_keys=True).encode()).hexdigest()
        seen[digest] = seen.get(digest, 0) + 1
        keys.append(f"sha256:{digest}:{seen[digest]}")
    return keys
