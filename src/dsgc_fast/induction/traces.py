"""Tool-trace edges from OpenAI-style chat message lists (the lookup-gates-action pattern).

Each message is one block (index = position in the list).  Messages are dicts with a
``role`` (``system``, ``user``, ``assistant``, ``tool``; legacy ``function``), a ``content``
(a string, None, or a list of ``{"type": "text", "text": ...}`` parts), assistant
``tool_calls`` (``[{"id", "function": {"name", "arguments"}}]``; legacy ``function_call``)
and, on tool results, ``tool_call_id`` (legacy: ``name``).

Edges (``(dependent, prerequisite)``, all causal):

1. **Result -> call.**  A tool result depends on the assistant message that issued its call
   (matched by ``tool_call_id``; a legacy ``function`` result by name, latest call first).
2. **Step -> result.**  An assistant message depends on an earlier tool result when its text
   or its call arguments repeat a value the result holds (``mentions``: an identifier of
   its prose, a value of its JSON by the ``json_values`` rules such as an order id returned
   by a lookup and passed to an action, or a word of its prose naming an earlier JSON
   value).  JSON keys, parameter and function names never count.
3. **Step -> user message.**  Likewise an assistant message depends on an earlier user
   message holding a value it repeats (``cd({"folder": "temp"})`` after "move it to the
   temp folder", ``get_stock_info({"symbol": "AAPL"})`` after "what does AAPL trade at?").

For rules 2 and 3 only the most recent earlier result (user message) holding each value is
linked, so a value echoed by many blocks does not fan out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError

from .mentions import BlockMentions, MentionReader, Parts, content_text, parts, tool_calls

Pair = tuple[int, int]


def message_at(messages: Sequence[Any], i: int) -> Mapping[str, Any]:
    """``messages[i]``, checked to be a chat message: a mapping with a string ``role`` (else ``TypeError``)."""
    message = messages[i]
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise DsgcTypeError(f"messages[{i}] must be a mapping with a string 'role'")
    return message


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text as a memory block: its content, then each call as ``name(arguments)``."""
    text = content_text(message.get("content"), "message")
    calls = [f"{c.name}({c.arguments})" for c in tool_calls(message, "message")]
    return "\n".join(x for x in [text, *calls] if x)


def message_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """``message_text`` of every message (the block texts to encode and to induce from)."""
    return [message_text(message_at(messages, i)) for i in range(len(messages))]


class TraceTracker:
    """The module's rules one block at a time (blocks in order; plain blocks link nothing)."""

    def __init__(self) -> None:
        self._caller_of_id: dict[str, int] = {}
        self._caller_of_name: dict[str, int] = {}
        self._tool_of_id: dict[str, str] = {}
        self._latest: dict[str, dict[str, int]] = {"result": {}, "user": {}}  # value -> newest holder

    def tool_of(self, block: Parts) -> str | None:
        """The function name of the call a tool result answers (None if unknown or not a result)."""
        if block.role == "tool":
            return self._tool_of_id.get(block.tool_call_id or "")
        return block.function if block.role == "function" else None

    def observe(self, index: int, block: Parts, found: BlockMentions) -> list[tuple[Pair, str | None]]:
        """The edges block ``index`` brings (rules 1-3), each with the value key it rests on
        (None for result -> call); ``found`` is what ``MentionReader`` read in the block."""
        if block.is_result:
            if block.role == "tool":
                caller = self._caller_of_id.get(block.tool_call_id or "")
            else:
                caller = self._caller_of_name.get(block.function or "")
            self._latest["result"].update(dict.fromkeys(found.holds, index))
            return [] if caller is None else [((index, caller), None)]
        if block.role == "user":
            self._latest["user"].update(dict.fromkeys(found.holds, index))
            return []
        if block.role != "assistant":
            return []
        keys = sorted(found.keys())
        pairs: list[tuple[Pair, str | None]] = [
            ((index, held[k]), k) for held in self._latest.values() for k in keys if k in held
        ]
        for call in block.calls:
            if call.id is not None:
                self._caller_of_id[call.id] = index
                self._tool_of_id[call.id] = call.name
            self._caller_of_name[call.name] = index
        return pairs


def trace_edges(messages: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Tool-trace edges (module rules), (E, 2) int64 ``(dependent, prerequisite)``, sorted."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise DsgcTypeError(f"messages must be a sequence of message mappings, got {type(messages).__name__}")
    reader, tracker = MentionReader(), TraceTracker()
    out: set[Pair] = set()
    for i in range(len(messages)):
        block = parts("", message_at(messages, i), f"messages[{i}]")
        out.update(pair for pair, _ in tracker.observe(i, block, reader.read(block, tracker.tool_of(block))))
    return np.array(sorted(out), dtype=np.int64).reshape(-1, 2)
