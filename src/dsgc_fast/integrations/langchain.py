"""LangChain and LangGraph adapters (extra ``langchain``): what is sent is a pure function of the history.

Every entry point decides with one function, ``dsgc_fast.select`` over the messages converted
by LangChain's ``convert_to_openai_messages``.  What the model is sent depends only on the
messages, the budget, the query and the settings: never on the process, its caches, a restart,
or the order and chunking in which the history was seen.  No adapter keeps a store of its own.

* ``select_messages(messages, max_tokens=...)`` takes ``trim_messages``' place (its
  ``max_tokens``, ``token_counter``, ``strategy``, ``start_on`` and ``include_system``, with the
  meanings its docstring gives); called without messages it returns a LangChain ``Runnable``,
  as ``trim_messages`` does; ``aselect_messages`` is its async twin.
* ``ThreadMemory(budget, **settings)`` sends exactly what ``select_messages(messages,
  max_tokens=budget, **settings)`` returns for the list it is handed:

  - ``memory.pre_model_hook`` for LangGraph's ``create_react_agent(..., pre_model_hook=...)``
    returns ``{"llm_input_messages": [...]}`` (the state keeps the whole history);
  - ``memory.middleware()`` for LangChain's ``create_agent(..., middleware=[...])`` selects over
    the request's system message followed by its messages (``wrap_model_call``, sync and
    async); the request's system message stays the system prompt (a binding table is appended
    to it), and a ``SystemMessage`` among the messages is sent in place.

The messages sent are the input's own objects, in its order: a tool result cut to fit
(``on_over_budget="truncate"``, the default) is sent as a copy with the cut content, and a
binding table (when the pinned referents' binders do not fit) as a ``SystemMessage`` after the
leading system messages.  The newest user turn and the system messages are always sent, tool
calls keep their results, and a non-empty list never gives an empty context.  A message may
carry a ``"dsgc"`` annotation in ``additional_kwargs`` (``binds``, ``uses``, ``pinned``,
``cost``), e.g. ``HumanMessage("Account 8841-C ...", additional_kwargs={"dsgc": {"binds":
{"that account": "8841-C"}}})``.  Budgets are in model tokens, each message with its chat
framing (``tokenizer``, as ``dsgc_fast.memory.token_counts.token_counter`` takes it), or in what a
``trim_messages``-style ``token_counter`` counts.

Caches change speed, never the answer.  ``select_messages`` uses ``dsgc_fast.select``'s
process cache (or ``cache=``).  ``ThreadMemory`` keeps, for each of its ``cached_threads`` most
recently served thread ids, the thread's last converted message list, a ``SelectCache``
holding that list's parsed history (blocks, costs, edges, embeddings, the rows of its texts)
and the last selection's report.  A call whose list extends that list reuses the cache; any
other list (a message removed, replaced, redacted or edited, a replay, a dynamic system
prompt) starts the thread's cache afresh, so nothing a thread's list no longer holds stays in
what ``ThreadMemory`` keeps after the thread's next call.  Token counts are cached by text
digest (``dsgc_fast.memory.token_counts``), never by text.
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.prompt_values import PromptValue

from dsgc_ref.contract import PARAM_NAMES, DsgcTypeError, DsgcValueError, Params, check_budget, is_integer_scalar

from .._text_caches import forget_texts
from ..memory.compaction import check_over_budget
from ..memory.explain import CompactionReport
from ..memory.history import SelectCache, Selection
from ._annotations import checked_annotation
from ._langchain_counting import counting
from ._select import DEFAULT_OVER_BUDGET, select_history

if TYPE_CHECKING:  # imported where used: langchain.agents and langchain_core.runnables take seconds to load
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.runnables import Runnable, RunnableConfig

#: the thread id of a graph run without one (no checkpointer, no ``thread_id`` in the config)
DEFAULT_THREAD = "default"
#: annotation fields a LangChain message may carry in ``additional_kwargs["dsgc"]``
ANNOTATION_FIELDS = ("binds", "uses", "pinned", "cost")
#: thread ids whose caches and last report a ``ThreadMemory`` keeps by default
DEFAULT_CACHED_THREADS = 64
#: the strategies of ``select_messages``
STRATEGIES = ("dsgc", "last")
#: ``select`` options that the settings pass through, besides the ``Params`` knobs
_SELECT_OPTIONS = ("params", "encoder", "cache", "query", "digests", "values")
#: ``trim_messages`` arguments without a counterpart here, and why
_TRIM_ONLY = {
    "allow_partial": "a tool result is cut to fit instead (on_over_budget='truncate')",
    "end_on": "the newest user turn always ends the context",
    "text_splitter": "a tool result is cut to fit instead (on_over_budget='truncate')",
}
#: the ``ThreadMemory`` arguments of the per-thread store, removed
_REMOVED = ("store_factory", "max_threads")


class _Sent(NamedTuple):
    """A decision: the kept messages (the input's objects, cut copies), the binding-table texts
    and the selection (None for an empty input)."""

    kept: list[BaseMessage]
    tables: list[str]
    selection: Selection | None


class _Selector:
    """The settings of ``select_messages`` (its docstring says what each does), checked once."""

    def __init__(
        self,
        max_tokens: int,
        *,
        token_counter: Any = None,
        tokenizer: Any = None,
        strategy: str = "dsgc",
        start_on: Any = None,
        include_system: bool = True,
        on_over_budget: str = DEFAULT_OVER_BUDGET,
        **options: Any,
    ) -> None:
        self.budget = check_budget(max_tokens)
        self.on_over_budget = check_over_budget(on_over_budget)
        if not isinstance(include_system, bool):
            raise DsgcTypeError(f"include_system must be a bool, got {type(include_system).__name__}")
        self.include_system = include_system
        self.start_on = _message_types(start_on)
        self.options = _checked_options(strategy, options)
        self.tokenizer, self.counter = counting(token_counter, tokenizer)

    def inputs(self, messages: Any) -> list[BaseMessage]:
        """The messages selected over: checked, without the leading system ones unless ``include_system``."""
        if isinstance(messages, PromptValue):
            messages = messages.to_messages()
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise DsgcTypeError(f"messages must be a sequence of LangChain messages, got {type(messages).__name__}")
        out = list(message_checked(messages))
        lead = 0
        while not self.include_system and lead < len(out) and isinstance(out[lead], SystemMessage):
            lead += 1
        return out[lead:]

    def records(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """The OpenAI-style messages ``select`` decides over (a ``token_counter``'s cost as a ``cost`` annotation)."""
        records = [to_openai(m) for m in messages]
        if self.counter is not None:
            for message, record in zip(messages, records):
                annotation = record.setdefault("dsgc", {})
                if "cost" not in annotation:
                    annotation["cost"] = self.counter.cost(message)
        return records

    def decide(self, messages: list[BaseMessage], records: list[dict[str, Any]], cache: SelectCache | None) -> _Sent:
        """What to send of ``messages`` (whose ``records`` these are), with ``cache`` (None: the option's)."""
        if not messages:
            return _Sent([], [], None)
        options = self.options if cache is None else {**self.options, "cache": cache}
        chosen = select_history(
            records, self.budget, tokenizer=self.tokenizer, on_over_budget=self.on_over_budget, **options
        )
        cut = {k: t.message for k, t in chosen.truncated.items()}
        cut.update((k, d.message) for k, d in chosen.digested.items())  # sent as its digest, in place
        kept = [_sent(messages[k], cut.get(k)) for k in chosen.indices]
        tables = chosen.tables
        return _Sent(self._started(kept), tables, chosen)

    def __call__(self, messages: Any, *, cache: SelectCache | None = None) -> list[BaseMessage]:
        """``select_messages`` with these settings."""
        inputs = self.inputs(messages)
        sent = self.decide(inputs, self.records(inputs), cache)
        return _with_tables(sent.kept, sent.tables)

    async def acall(self, messages: Any) -> list[BaseMessage]:
        """``__call__`` in a worker thread."""
        import asyncio  # here, not at the top: a sync caller never loads it

        return await asyncio.to_thread(self, messages)

    def _started(self, kept: list[BaseMessage]) -> list[BaseMessage]:
        """``kept`` without the non-system messages before the first one of a ``start_on`` type, the cut never
        passing the newest user message (the newest message, without one)."""
        if self.start_on is None or not kept:
            return kept
        newest = max((k for k, m in enumerate(kept) if isinstance(m, HumanMessage)), default=len(kept) - 1)
        start = next((k for k, m in enumerate(kept) if _is_type(m, self.start_on)), newest)
        start = min(start, newest)
        return [m for k, m in enumerate(kept) if k >= start or isinstance(m, SystemMessage)]


def _message_types(start_on: Any) -> tuple[str | type[BaseMessage], ...] | None:
    """``start_on`` as a tuple of message type names and classes (None: no constraint)."""
    if start_on is None:
        return None
    items = [start_on] if isinstance(start_on, (str, type)) else start_on
    if not isinstance(items, Sequence) or not items:
        raise DsgcTypeError(
            f"start_on must be a message type name, a message class or a sequence of them, got {start_on!r}"
        )
    for item in items:
        if not (isinstance(item, str) or (isinstance(item, type) and issubclass(item, BaseMessage))):
            raise DsgcTypeError(f"start_on must hold message type names ('human', 'ai', ...) or classes, got {item!r}")
        if item == "tool" or (isinstance(item, type) and issubclass(item, ToolMessage)):
            raise DsgcValueError("start_on cannot be 'tool': a context never starts on a tool result without its call")
    return tuple(items)


def _is_type(message: BaseMessage, types: Sequence[str | type[BaseMessage]]) -> bool:
    return any(message.type == t if isinstance(t, str) else isinstance(message, t) for t in types)


def _checked_options(strategy: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The ``select`` options of the settings, ``strategy`` applied; unknown names refused."""
    for name, why in _TRIM_ONLY.items():
        if name in options:
            raise DsgcTypeError(f"select_messages does not take trim_messages' {name!r}: {why}")
    unknown = sorted(set(options) - set(PARAM_NAMES) - set(_SELECT_OPTIONS))
    if unknown:
        raise DsgcTypeError(
            f"unknown setting(s) {unknown}; the settings are the Params knobs and {list(_SELECT_OPTIONS)}"
        )
    if strategy not in STRATEGIES:
        raise DsgcValueError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}")
    if strategy == "last":
        if options.get("policy", "recency") != "recency":
            raise DsgcValueError(f"strategy='last' is policy='recency'; got policy={options['policy']!r} as well")
        options = {**options, "policy": "recency"}
    knobs = {k: v for k, v in options.items() if k in PARAM_NAMES}
    Params.of(options.get("params"), **knobs)  # a bad knob fails here, not at the first model call
    cache = options.get("cache")
    if cache is not None and not isinstance(cache, SelectCache):
        raise DsgcTypeError(f"cache must be a SelectCache, got {type(cache).__name__}")
    return options


@overload
def select_messages(messages: None = None, *, max_tokens: int, **settings: Any) -> Runnable[Any, list[BaseMessage]]: ...


@overload
def select_messages(
    messages: Sequence[BaseMessage] | PromptValue, *, max_tokens: int, **settings: Any
) -> list[BaseMessage]: ...


def select_messages(
    messages: Sequence[BaseMessage] | PromptValue | None = None, *, max_tokens: int, **settings: Any
) -> list[BaseMessage] | Runnable[Any, list[BaseMessage]]:
    """The messages to send within ``max_tokens``: a drop-in for LangChain's ``trim_messages``.

    Decided by ``dsgc_fast.select`` over the messages converted with ``convert_to_openai_messages``
    (``additional_kwargs["dsgc"]`` annotations included).  Returns the input's own message
    objects in their order for the messages sent whole; a tool result sent as its digest (the
    default, ``digests=True``) or cut to fit is a new ``ToolMessage``, a copy of the input's
    with the same ``id`` and ``tool_call_id`` and the digest or cut text as content; a binding
    or value table is a ``SystemMessage`` after the leading system messages.  The
    system messages and the newest user turn (without a user message: the newest message) are
    always sent, whole tool-call units only, never an empty list for a non-empty input (unless
    ``on_over_budget="raise"`` raises).

    Parameters
    ----------
    messages : sequence of BaseMessage or PromptValue, optional
        The history, oldest first.  Without it, a ``RunnableLambda`` doing this call with these
        settings is returned (sync and async), as ``trim_messages`` does.
    max_tokens : int
        The budget, in what ``token_counter`` (or ``tokenizer``) counts.
    token_counter : optional
        As ``trim_messages`` takes it: a callable ``list[BaseMessage] -> int`` (one whose first
        parameter is annotated ``BaseMessage`` counts one message), a chat model
        (``get_num_tokens_from_messages``), ``"approximate"`` (LangChain's
        ``count_tokens_approximately``) or a tokenizer name (``"o200k_base"``, ...: as
        ``tokenizer``).  A message then costs ``token_counter([message])`` (``len``: budgets in
        messages); a binding table and a cut tool result cost what it counts for a
        ``HumanMessage`` of their text.
    tokenizer : optional
        dsgc's token counting (``dsgc_fast.memory.token_counts.token_counter`` takes it; default
        o200k_base with the ``tokens`` extra, else the approximate counter), each message with
        its chat framing.  Not with ``token_counter``.
    strategy : {"dsgc", "last"}
        ``"dsgc"`` (default): the agent policy (relevance, recency, tool units, referent
        pinning).  ``"last"``: ``select``'s ``policy="recency"``, the newest whole tool units
        first, with the same guarantees (``trim_messages``' ``"first"`` would drop the newest
        turn: refused).
    start_on : str, message class or sequence of them, optional
        The kept non-system messages before the first kept message of one of these types
        (``"human"``, ``"ai"``, ``HumanMessage``, ...; never ``"tool"``) are left out, as in
        ``trim_messages``, except that the newest user message is always sent.
    include_system : bool
        True (default, unlike ``trim_messages``): system messages are always sent and counted.
        False: the leading system messages are left out of the selection and of the result
        (for a caller that adds its own system prompt); a binding table still comes first.
    on_over_budget : {"truncate", "roots_only", "raise"}
        When the system messages and the newest user turn alone exceed the budget: cut their
        largest tool results to fit (default), send them as they are, or raise
        ``ReferentEvictionError``.
    **options
        ``select``'s ``query``, ``params``, ``encoder``, ``cache``, ``digests`` (default True:
        a tool result may be sent as its digest, in place; False: whole or cut messages only),
        ``values`` (default True: the values of the messages left out in a value table) and
        the ``Params`` knobs (``lambda_pi``,
        ``policy``, ...).  ``trim_messages``' ``allow_partial``, ``end_on`` and
        ``text_splitter`` are refused with the reason.

    Returns
    -------
    list of BaseMessage, or Runnable
    """
    selector = _Selector(max_tokens, **settings)
    if messages is None:
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(selector, afunc=selector.acall, name="select_messages")
    return selector(messages)


async def aselect_messages(
    messages: Sequence[BaseMessage] | PromptValue, *, max_tokens: int, **settings: Any
) -> list[BaseMessage]:
    """``select_messages`` in a worker thread, for async code (the same settings, the same result)."""
    return await _Selector(max_tokens, **settings).acall(messages)


@dataclass
class _Thread:
    """What ``ThreadMemory`` keeps of a thread: the last list (converted), its cache, the last report."""

    records: list[dict[str, Any]]
    cache: SelectCache
    report: CompactionReport | None = None


class ThreadMemory:
    """dsgc context selection for LangGraph and LangChain agents: ``select_messages`` per model call.

    Parameters
    ----------
    budget : int
        What the messages sent to the model may cost (``select_messages``' ``max_tokens``).
    cached_threads : int
        Thread ids whose cache and last report this process keeps (least recently served out
        first).  Speed only: a thread without a cache is selected from scratch, with the same
        result.
    **settings
        ``select_messages``' settings (``tokenizer`` or ``token_counter``, ``strategy``,
        ``start_on``, ``include_system``, ``on_over_budget``, ``params``, ``encoder``, the
        ``Params`` knobs); ``cache=`` a ``SelectCache`` shared by every thread instead of one
        per thread.  Checked here: a bad one raises now, not at the first model call.
        ``store_factory`` and ``max_threads`` (the per-thread store of earlier versions) are
        refused with a ``TypeError``: nothing is stored any more.
    """

    def __init__(self, budget: int, *, cached_threads: int = DEFAULT_CACHED_THREADS, **settings: Any) -> None:
        removed = [name for name in _REMOVED if name in settings]
        if removed:
            raise DsgcTypeError(
                f"ThreadMemory no longer takes {removed}: it keeps no store per thread, what it sends is "
                "select_messages over the messages it is handed (cached_threads bounds its caches)"
            )
        if not is_integer_scalar(cached_threads) or int(cached_threads) < 1:
            raise DsgcValueError(f"cached_threads must be a positive integer, got {cached_threads!r}")
        self._selector = _Selector(budget, **settings)
        self.budget = self._selector.budget
        self._max = int(cached_threads)
        self._threads: collections.OrderedDict[str, _Thread] = collections.OrderedDict()
        self._lock = threading.Lock()

    # -- LangGraph ----------------------------------------------------------------------
    def pre_model_hook(self, state: Mapping[str, Any] | Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        """``create_react_agent``'s ``pre_model_hook``: ``{"llm_input_messages": kept}``."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        return {"llm_input_messages": self.select(messages, thread_id=thread_of(config))}

    __call__ = pre_model_hook

    # -- LangChain create_agent -----------------------------------------------------------
    def middleware(self) -> AgentMiddleware:
        """A ``create_agent`` middleware doing what ``pre_model_hook`` does, per model request."""
        return _middleware_class()(self)

    # -- selection ----------------------------------------------------------------------
    def select(self, messages: Sequence[BaseMessage], *, thread_id: str = DEFAULT_THREAD) -> list[BaseMessage]:
        """``select_messages(messages, max_tokens=budget, **settings)``, with ``thread_id``'s cache."""
        sent = self._decide(messages, thread_id)
        return _with_tables(sent.kept, sent.tables)

    def report(self, thread_id: str = DEFAULT_THREAD) -> CompactionReport | None:
        """The report of the last selection for ``thread_id`` in this process (None if none is kept).

        Kept for the ``cached_threads`` most recently served threads; it never influences a selection.
        """
        with self._lock:
            thread = self._threads.get(thread_id)
            return None if thread is None else thread.report

    def clear(self) -> None:
        """Forget every thread's cache and report (the next selections give the same results, slower)."""
        with self._lock:
            self._threads.clear()

    def _decide(self, messages: Any, thread_id: str) -> _Sent:
        if not isinstance(thread_id, str):
            raise DsgcTypeError(f"thread_id must be a str, got {type(thread_id).__name__}")
        inputs = self._selector.inputs(messages)
        records = self._selector.records(inputs)
        thread = self._thread(thread_id, records)
        sent = self._selector.decide(inputs, records, thread.cache)
        thread.report = None if sent.selection is None else sent.selection.report
        return sent

    def _thread(self, thread_id: str, records: list[dict[str, Any]]) -> _Thread:
        """The thread's entry for ``records``: its cache if ``records`` extend the last list, else a fresh one."""
        shared = self._selector.options.get("cache")
        with self._lock:
            old = self._threads.pop(thread_id, None)
            if shared is not None:
                cache = shared
            elif old is not None and records[: len(old.records)] == old.records:
                cache = old.cache
            else:
                cache = SelectCache(self._selector.options.get("encoder"), max_histories=1)
                if old is not None:  # a message was removed or changed: no memo keeps its text
                    forget_texts()
            thread = self._threads[thread_id] = _Thread(records, cache)
            while len(self._threads) > self._max:
                self._threads.popitem(last=False)
            return thread


@functools.cache
def _middleware_class() -> Callable[[ThreadMemory], AgentMiddleware]:
    """The middleware class, made at the first ``ThreadMemory.middleware()``.

    ``langchain.agents`` loads LangChain's chat-model stack (seconds): importing it here, not
    with this module, keeps the adapter's import near that of ``langchain_core.messages``.
    """
    import asyncio

    from langchain.agents.middleware import AgentMiddleware
    from langgraph.config import get_config

    class _DsgcMiddleware(AgentMiddleware):
        """``wrap_model_call``: the request's system message and messages, selected by ``ThreadMemory``."""

        def __init__(self, memory: ThreadMemory) -> None:
            super().__init__()
            self.memory = memory
            self._decide = memory._decide  # this module's own method, bound here: ``memory`` is a ThreadMemory

        @property
        def name(self) -> str:
            return "DsgcContext"

        def _request(self, request: ModelRequest) -> ModelRequest:
            system = request.system_message
            sent = self._decide([*([] if system is None else [system]), *request.messages], thread_of(get_config()))
            if system is not None and sent.kept and sent.kept[0] is system:
                return request.override(
                    system_message=_appended(system, sent.tables), messages=cast(Any, sent.kept[1:])
                )
            return request.override(messages=cast(Any, _with_tables(sent.kept, sent.tables)))

        def wrap_model_call(
            self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
        ) -> ModelResponse:
            return handler(self._request(request))

        async def awrap_model_call(
            self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
        ) -> ModelResponse:
            return await handler(await asyncio.to_thread(self._request, request))

    return _DsgcMiddleware


def _appended(system: SystemMessage, tables: Sequence[str]) -> SystemMessage:
    """``system``, or a copy with each table (binding or value table) appended to its content."""
    if not tables:
        return system
    if isinstance(system.content, str):
        content: Any = "\n\n".join([system.content, *tables])
    else:
        content = [*system.content, *({"type": "text", "text": text} for text in tables)]
    return system.model_copy(update={"content": content})


def _sent(message: BaseMessage, cut: Mapping[str, Any] | None) -> BaseMessage:
    """``message``, or a copy with the content of its ``cut`` (OpenAI-style) message."""
    return message if cut is None else message.model_copy(update={"content": cut["content"]})


def _with_tables(messages: list[BaseMessage], tables: Sequence[str]) -> list[BaseMessage]:
    """``messages`` with a ``SystemMessage`` per table (binding or value table) after the leading system messages."""
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    return [*messages[:lead], *(SystemMessage(content=text) for text in tables), *messages[lead:]]


def message_checked(messages: Sequence[Any]) -> Sequence[BaseMessage]:
    """``messages`` if every one is a LangChain ``BaseMessage``; ``TypeError`` otherwise."""
    for message in messages:
        if not isinstance(message, BaseMessage):
            raise DsgcTypeError(f"messages must be LangChain BaseMessage objects, got {type(message).__name__}")
    return messages


def thread_of(config: Mapping[str, Any] | None) -> str:
    """The ``thread_id`` of a run's config (``DEFAULT_THREAD`` without one)."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return DEFAULT_THREAD if thread is None else str(thread)


def to_openai(message: BaseMessage) -> dict[str, Any]:
    """The OpenAI-style message (``convert_to_openai_messages``) with its ``dsgc`` annotation.

    A content block LangChain's converter refuses (``text-plain``, ``video``, ...) does not
    stop the agent: the message is converted without its content, and its content list goes
    in as it is (each block then costs ``token_counts``' rule for its kind, an unknown kind its
    JSON, with a warning).
    """
    try:
        out = convert_to_openai_messages(message)
    except ValueError:
        if isinstance(message.content, str):
            raise
        out = convert_to_openai_messages(message.model_copy(update={"content": ""}))
        out["content"] = [
            block if isinstance(block, dict) else {"type": "text", "text": block} for block in message.content
        ]
    annotation = (message.additional_kwargs or {}).get("dsgc")
    if annotation:
        out["dsgc"] = dict(
            checked_annotation(annotation, ANNOTATION_FIELDS, "a LangChain message's additional_kwargs['dsgc']")
        )
    return out
