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
the system messages are the live roots) and returns what to send: the keys of the kept
messages in the list's order, the binding-table texts if escalation made one, and the cut
message of each kept tool result that ``on_over_budget="truncate"`` cut.  The store keeps its
state between calls, as a ``MemoryStore`` in an agent loop does: an evicted message stays
archived until a new message uses a referent it binds, and a cut result stays cut.

Over budget.  When the live roots and their binding table alone exceed the budget,
``on_over_budget`` decides (``dsgc_fast.compaction``): ``"truncate"`` (the adapters'
default) cuts the largest tool results among the roots, ``"roots_only"`` sends the roots
as they are, ``"raise"`` lets ``ReferentEvictionError`` through.  A list without a user
message is compacted against its newest message's text, that message a live root.  So a
non-empty list never gives an empty context unless ``"raise"`` raises.

Per process.  The mirrors live in the worker's memory (or in files, with
``store_factory``); the framework's persistence stays the record of the conversation.  A
worker that meets a thread for the first time builds its mirror from the whole list, so two
workers may keep different (each valid, each within budget) contexts for one thread.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dsgc_ref.contract import is_integer_scalar

from ..archive import copied_json
from ..compaction import BINDING_TABLE_KIND
from ..explain import CompactionReport
from ..messages import SessionError, add_messages, compact_messages, current_turn, remove_messages
from ..store import MemoryStore
from ..token_counts import TokenCounter, token_counter

#: what the adapters do by default when the live roots alone exceed the budget
DEFAULT_OVER_BUDGET = "truncate"
#: how many threads' mirrors a process keeps by default (least recently used ones are closed)
DEFAULT_MAX_THREADS = 256


@dataclass(frozen=True)
class Context:
    """What a mirror sends: the message keys (oldest first), the binding-table texts, and the
    cut message (OpenAI-style, as sent) of each kept message that was cut to fit, by key."""

    keys: list[str]
    tables: list[str]
    cut: dict[str, dict[str, Any]]


class Mirror:
    """One thread's store, following a list of ``(key, OpenAI-style message)`` pairs."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.lock = threading.Lock()
        self._block_of: dict[str, str] = {}  # message key -> block id (mirrored, not deleted)
        self._message_of: dict[str, dict[str, Any]] = {}  # message key -> the message mirrored
        self._key_of: dict[str, str] = {}  # block id -> message key
        #: the last compaction's report (None before one)
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
        """Append messages (the store costs each in model tokens, with its chat framing)."""
        if not keyed:
            return
        for (key, message), block_id in zip(keyed, add_messages(self.store, [m for _, m in keyed])):
            self._block_of[key], self._message_of[key], self._key_of[block_id] = block_id, message, key

    def _rebuild(self, keyed: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self._forget(self.store.clear())
        self._add(keyed)

    def _forget(self, block_ids: Sequence[str]) -> None:
        for block_id in block_ids:
            key = self._key_of.pop(block_id, None)
            if key is not None:
                del self._block_of[key], self._message_of[key]

    def context(self, budget: int, *, on_over_budget: str = DEFAULT_OVER_BUDGET, **options: Any) -> Context:
        """Compact to ``budget`` and say what to send (``report`` set; see the module docstring)."""
        self.report = None
        blocks = self.store._shared_blocks()  # read only; what leaves is copied
        messages = [b for b in blocks if b.id in self._key_of]
        if not messages:
            return Context([], [], {})
        if not current_turn(blocks):
            options.setdefault("query", messages[-1].text)
            options["live"] = [*options.get("live", ()), messages[-1].id]
        self.report = compact_messages(self.store, budget, on_over_budget=on_over_budget, **options)
        blocks = self.store._shared_blocks()
        kept = [b for b in blocks if b.id in self._key_of]
        return Context(
            keys=[self._key_of[b.id] for b in kept],
            tables=[b.text for b in blocks if b.meta.get("kind") == BINDING_TABLE_KIND],
            cut={self._key_of[b.id]: copied_json(b.meta["message"]) for b in kept if "truncated" in b.meta},
        )


class ThreadMirrors:
    """One ``Mirror`` per thread id, the least recently used closed beyond ``max_threads``.

    ``tokenizer`` (as ``dsgc_fast.token_counts.token_counter`` takes it) costs every message
    with its chat framing; ``store_factory(thread_id, counter) -> MemoryStore`` opens a
    thread's store, which must count with ``counter``'s tokenizer (default: an in-memory store
    with the default encoder and ``tokenizer=counter``).  A thread's store is closed when it
    leaves the cache.
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
        self._factory = store_factory or (lambda _thread, counter: MemoryStore(tokenizer=counter))
        self._max = int(max_threads)
        self._mirrors: collections.OrderedDict[str, Mirror] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread_id: str) -> Mirror:
        with self._lock:
            mirror = self._mirrors.get(thread_id)
            if mirror is None:
                mirror = self._mirrors[thread_id] = Mirror(self._open(thread_id))
            self._mirrors.move_to_end(thread_id)
            while len(self._mirrors) > self._max:
                _, old = self._mirrors.popitem(last=False)
                old.store.close()
            return mirror

    def _open(self, thread_id: str) -> MemoryStore:
        store = self._factory(thread_id, self.counter)
        if not isinstance(store, MemoryStore):
            raise TypeError(f"store_factory must return a MemoryStore, got {type(store).__name__}")
        if store.tokenizer.name != self.counter.name:
            store.close()
            raise ValueError(
                f"store_factory's store counts {store.tokenizer.name!r} tokens, the budget {self.counter.name!r} "
                "tokens: open it with MemoryStore(tokenizer=counter)"
            )
        return store

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
