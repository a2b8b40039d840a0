"""An agent loop over a ``MemoryStore``, one turn at a time, for timing (tools/agent_turn.py, asv).

A turn is what an agent does before each model call that answers the user: append the
messages that arrived since the previous call (the model's previous answer, the user's
message, the tool calls made for it and their results) with one ``add_messages``, compact
to the budget (``compact_messages``), and read what to send (``to_messages``).  The
history is ``dsgc_bench.chat_history.chat_history`` (about a third of it tool calls and JSON
results), cut into turns before each assistant answer (an assistant message without tool
calls).

``CountingEncoder`` wraps an encoder and counts its calls and texts; ``TableEncoder`` answers
from rows computed before the clock starts, so a turn is timed without encoding cost.  A
session can start with many archived blocks (``archived``): the history before the timed
turns is added in one batch and compacted once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from dsgc_fast import MemoryStore
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import add_messages, compact_messages, to_messages

from .chat_history import chat_history

#: active blocks a session keeps by default (the budget is this many blocks' mean cost)
ACTIVE = 150


def turns(messages: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``messages`` cut before each assistant answer (no tool calls) that follows a user message or tool result.

    Every batch but possibly the last ends where a model call would be made: after a user
    message or after the results of every tool call made so far.
    """
    out: list[list[dict[str, Any]]] = [[]]
    for k, message in enumerate(messages):
        answer = message.get("role") == "assistant" and not message.get("tool_calls")
        if answer and k and messages[k - 1].get("role") in ("user", "tool") and out[-1]:
            out.append([])
        out[-1].append(message)
    return out


class CountingEncoder:
    """An encoder that counts the calls made to it and the texts they held."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.name = getattr(encoder, "name", None)
        self.dim = getattr(encoder, "dim", None)
        self.calls = 0
        self.texts = 0
        self.seconds = 0.0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        out = self.encoder.encode(texts)
        self.seconds += time.perf_counter() - started
        self.calls += 1
        self.texts += len(texts)
        return out


class TableEncoder:
    """Rows of ``encoder`` computed up front for ``texts``; ``encode`` looks them up (others are encoded)."""

    def __init__(self, encoder: Any, texts: Sequence[str]) -> None:
        distinct = list(dict.fromkeys(texts))
        rows = np.asarray(encoder.encode(distinct), dtype=np.float64)
        self.encoder = encoder
        self.name = getattr(encoder, "name", None)
        self.dim = rows.shape[1]
        self._rows = dict(zip(distinct, rows))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._rows]
        if missing:
            self._rows.update(zip(missing, np.asarray(self.encoder.encode(missing), dtype=np.float64)))
        return np.array([self._rows[t] for t in texts], dtype=np.float64).reshape(len(texts), self.dim)


class AgentSession:
    """A store driven through a chat history turn by turn (module docstring).

    ``archived``: about this many blocks are archived before the first timed turn;
    ``active``: the budget is the mean cost of that many blocks; ``encoder`` embeds texts
    (default: a ``TableEncoder`` over the lexical encoder, so turns cost no encoding).
    """

    def __init__(
        self, *, archived: int = 0, timed: int = 200, active: int = ACTIVE, encoder: Any = None, warm: int = 20
    ) -> None:
        history = chat_history(archived + active + 4 * (timed + warm) + 10)
        batches = turns(history)
        preload: list[dict[str, Any]] = []
        k = 0
        while len(preload) < archived + active and k < len(batches):
            preload.extend(batches[k])
            k += 1
        self.batches = batches[k:]
        self.encoder = CountingEncoder(
            encoder if encoder is not None else TableEncoder(LexicalEncoder(), _texts(history))
        )
        self.store = MemoryStore(self.encoder)
        costs = self._add(preload)
        self.budget = int(np.mean(costs) * active) if costs else 1_000
        if preload:
            compact_messages(self.store, self.budget)
        self.next = 0
        for _ in range(warm):
            self.turn()

    def _add(self, messages: list[dict[str, Any]]) -> list[int]:
        ids = add_messages(self.store, messages) if messages else []
        return [self.store.get(i).cost for i in ids]

    def turn(self) -> list[dict[str, Any]]:
        """Run the next turn; returns the messages sent to the model."""
        batch = self.batches[self.next]
        self.next += 1
        add_messages(self.store, batch)
        compact_messages(self.store, self.budget)
        return to_messages(self.store)

    def timed_turns(self, count: int) -> np.ndarray:
        """Seconds of each of the next ``count`` turns."""
        out = np.empty(count)
        for k in range(count):
            started = time.perf_counter()
            self.turn()
            out[k] = time.perf_counter() - started
        return out


def _texts(history: Sequence[dict[str, Any]]) -> list[str]:
    from dsgc_fast.memory.messages import message_text

    return [message_text(m) for m in history]


def chain_store(n: int, d: int = 16, seed: int = 0) -> MemoryStore:
    """A store of ``n`` blocks whose referents form one chain: block k binds r<k> and uses r<k-1> (cost 1 each)."""
    embs = np.random.default_rng(seed).normal(size=(n, d))
    store = MemoryStore()
    with store.atomic():
        for k in range(n):
            store.add(f"step {k}", binds={f"r{k}": f"v{k}"}, uses=[f"r{k - 1}"] if k else [], embedding=embs[k], cost=1)
    return store


def chain_arrays(store: MemoryStore, live: Sequence[str]) -> dict[str, Any]:
    """The arrays ``MemoryStore.compact`` hands ``retain`` for ``store`` with roots ``live`` (keyword arguments)."""
    from dsgc_fast import ReferentIndex

    blocks = store.blocks()
    position = {b.id: k for k, b in enumerate(blocks)}
    referents = ReferentIndex.from_lists([list(b.uses) for b in blocks], [dict(b.binds) for b in blocks])
    return {
        "block_embs": np.array([b.embedding for b in blocks]),
        "costs": np.array([b.cost for b in blocks], dtype=np.int64),
        "live": np.array(sorted(position[i] for i in live), dtype=np.int64),
        "referents": referents,
    }
