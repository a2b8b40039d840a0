"""A ``MemoryStore`` kept in step with a message list that a framework owns, and what to send from it.

Agent frameworks keep the conversation themselves (LangGraph's state, a checkpointer) and
call a hook with the whole list before each model call.  ``ThreadMirrors`` keeps one
``Mirror`` per thread id; a ``Mirror`` holds a store whose message blocks follow the list by
message key:

* a key no longer in the list (LangGraph's ``RemoveMessage``, ``REMOVE_ALL_MESSAGES``) or
  whose message changed (a message replaced under its id) has its block deleted, with the
  rest of its tool-call unit (``remove_messages``);
* new keys after the last one already mirrored are appended (``add_messages``, one batch);
* anything else (a message inserted before mirrored ones, a reordering, a tool result that
  lost its call) rebuilds the store from the list: ``clear`` (the record keeps the old
  blocks) and add everything again.

``Mirror.context`` then compacts the store (``compact_messages``: the newest user turn and
the system messages are the live roots) and returns the keys of the messages to send, in
the list's order, with the binding-table texts if escalation made one.  The store keeps
its state between calls, as a ``MemoryStore`` in an agent loop does: an evicted message
stays archived until a new message uses a referent it binds.

Over budget.  When the live roots and their binding table alone exceed the budget,
``on_over_budget="roots_only"`` (the default) sends the live roots and nothing else, without
compacting; ``"raise"`` lets ``ReferentEvictionError`` through.  A list without a user
message is compacted against its newest message's text.  So a non-empty list never gives an
empty context.

Per process.  The mirrors live in the worker's memory (or in files, with
``store_factory``); the framework's persistence stays the record of the conversation.  A
worker that meets a thread for the first time builds its mirror from the whole list, so two
workers may keep different (each valid, each within budget) contexts for one thread.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import Any

from dsgc_ref.contract import ReferentEvictionError, is_integer_scalar

from ..messages import (
    SessionError,
    add_messages,
    compact_messages,
    current_turn,
    live_roots,
    remove_messages,
)
from ..explain import CompactionReport
from ..store import BINDING_TABLE_KIND, MemoryStore
from ..token_counts import TokenCounter, message_tokens, token_counter

OVER_BUDGET_POLICIES = ("roots_only", "raise")
#: how many threads' mirrors a process keeps by default (least recently used ones are closed)
DEFAULT_MAX_THREADS = 256


class Mirror:
    """One thread's store, following a list of ``(key, OpenAI-style message)`` pairs."""

    def __init__(self, store: MemoryStore, count: TokenCounter) -> None:
        self.store = store
        self.lock = threading.Lock()
        self._count = count
        self._block_of: dict[str, str] = {}  # message key -> block id (mirrored, not deleted)
        self._message_of: dict[str, dict[str, Any]] = {}  # message key -> the message mirrored
        self._key_of: dict[str, str] = {}  # block id -> message key
        #: the last compaction's report (None before one, or when only the roots were sent)
        self.report: CompactionReport | None = None

    def sync(self, keyed: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Bring the store in step with ``keyed`` (see the module docstring)."""
        keys = [key for key, _ in keyed]
        if len(set(keys)) != len(keys):
            raise ValueError("the messages hold a repeated message id")
        current = dict(keyed)
        stale = [k for k in self._block_of if k not in current or current[k] != self._message_of[k]]
        if stale:
            self._forget(remove_messages(self.store, [self._block_of[k] for k in stale]))
        position = {key: k for k, key in enumerate(keys)}
        mirrored = [position[k] for k in self._block_of]  # in the store's order
        new = [key for key in keys if key not in self._block_of]
        if mirrored != sorted(mirrored) or (mirrored and new and position[new[0]] < mirrored[-1]):
            self._rebuild(keyed)
            return
        try:
            self._add([(key, current[key]) for key in new])
        except SessionError:
            self._rebuild(keyed)

    def _add(self, keyed: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Append messages, each costed in model tokens with its chat framing."""
        if not keyed:
            return
        records = []
        for _, message in keyed:
            annotation = dict(message.get("dsgc") or {})
            annotation.setdefault("cost", message_tokens({k: v for k, v in message.items() if k != "dsgc"}, self._count))
            records.append({**message, "dsgc": annotation})
        for (key, message), block_id in zip(keyed, add_messages(self.store, records)):
            self._block_of[key], self._message_of[key], self._key_of[block_id] = block_id, message, key

    def _rebuild(self, keyed: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self._forget(self.store.clear())
        self._add(keyed)

    def _forget(self, block_ids: Sequence[str]) -> None:
        for block_id in block_ids:
            key = self._key_of.pop(block_id, None)
            if key is not None:
                del self._block_of[key], self._message_of[key]

    def context(self, budget: int, *, on_over_budget: str = "roots_only", **options: Any) -> tuple[list[str], list[str]]:
        """Compact to ``budget``: the keys to send (oldest first) and the binding-table texts (``report`` set)."""
        self.report = None
        if not len(self.store):
            return [], []
        if not current_turn(self.store) and "query" not in options:
            options["query"] = self.store.blocks(embeddings=False)[-1].text
        try:
            self.report = compact_messages(self.store, budget, **options)
        except ReferentEvictionError:
            if on_over_budget == "raise":
                raise
            roots = set(live_roots(self.store, options.get("live", ())))
            return [self._key_of[b] for b in self._order(roots)], []
        blocks = self.store.blocks(embeddings=False)
        tables = [b.text for b in blocks if b.meta.get("kind") == BINDING_TABLE_KIND]
        return [self._key_of[b.id] for b in blocks if b.id in self._key_of], tables

    def _order(self, block_ids: set[str]) -> list[str]:
        return [b.id for b in self.store.blocks(embeddings=False) if b.id in block_ids and b.id in self._key_of]


def table_cost(counter: TokenCounter) -> Callable[[str], int]:
    """A store's ``token_counter`` for mirrored messages: a text costs what it costs sent as a
    system message (only binding tables are costed by it; every message comes with its cost)."""
    return lambda text: message_tokens({"role": "system", "content": text}, counter)


class ThreadMirrors:
    """One ``Mirror`` per thread id, the least recently used closed beyond ``max_threads``.

    ``tokenizer`` (as ``dsgc_fast.token_counts.token_counter`` takes it) costs every message
    with its chat framing; ``store_factory(thread_id, counter) -> MemoryStore`` opens a
    thread's store (default: an in-memory store with the default encoder, costing binding
    tables with ``table_cost(counter)``).  A thread's store is closed when it leaves the cache.
    """

    def __init__(
        self,
        store_factory: Callable[[str, TokenCounter], MemoryStore] | None = None,
        *,
        tokenizer: Any = None,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        if store_factory is not None and not callable(store_factory):
            raise TypeError("store_factory must be a callable (thread_id, counter) -> MemoryStore")
        if not is_integer_scalar(max_threads) or int(max_threads) < 1:
            raise ValueError(f"max_threads must be a positive integer, got {max_threads!r}")
        self.counter = token_counter(tokenizer)  # a bad tokenizer fails here, not at the first model call
        self._factory = store_factory or (lambda _thread, counter: MemoryStore(token_counter=table_cost(counter)))
        self._max = int(max_threads)
        self._mirrors: collections.OrderedDict[str, Mirror] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread_id: str) -> Mirror:
        with self._lock:
            mirror = self._mirrors.get(thread_id)
            if mirror is None:
                store = self._factory(thread_id, self.counter)
                if not isinstance(store, MemoryStore):
                    raise TypeError(f"store_factory must return a MemoryStore, got {type(store).__name__}")
                mirror = self._mirrors[thread_id] = Mirror(store, self.counter)
            self._mirrors.move_to_end(thread_id)
            while len(self._mirrors) > self._max:
                _, old = self._mirrors.popitem(last=False)
                old.store.close()
            return mirror

    def peek(self, thread_id: str) -> Mirror | None:
        """The thread's mirror if this process has one (nothing is opened)."""
        with self._lock:
            return self._mirrors.get(thread_id)

    def store(self, thread_id: str) -> MemoryStore:
        """The store mirroring ``thread_id`` (a new, empty one if the thread is new)."""
        return self.get(thread_id).store

    def close(self) -> None:
        """Close every thread's store."""
        with self._lock:
            while self._mirrors:
                self._mirrors.popitem()[1].store.close()


def check_policy(on_over_budget: str) -> str:
    """``on_over_budget`` if it is one of ``OVER_BUDGET_POLICIES``, else ``ValueError``."""
    if on_over_budget not in OVER_BUDGET_POLICIES:
        raise ValueError(f"on_over_budget must be one of {list(OVER_BUDGET_POLICIES)}, got {on_over_budget!r}")
    return on_over_budget
