"""Tool-trace edges from OpenAI-style chat message lists (the lookup-gates-action pattern).

Each message is one block (index = position in the list).  Messages are dicts with a
``role`` (``system``, ``user``, ``assistant``, ``tool``; legacy ``function``), a ``content``
(a string, None, or a list of ``{"type": "text", "text": ...}`` parts), assistant
``tool_calls`` (``[{"id", "function": {"name", "arguments"}}]``; legacy ``function_call``)
and, on tool results, ``tool_call_id`` (legacy: ``name``).

Edges (``(dependent, prerequisite)``, both rules causal):

1. **Result -> call.**  A tool result depends on the assistant message that issued its call
   (matched by ``tool_call_id``; a legacy ``function`` result by name, latest call first).
2. **Step -> result.**  An assistant message depends on an earlier tool result when its text
   or its call arguments repeat a value the result contains: an identifier (``tokens``
   rules, e.g. an account id returned by a lookup and passed to an action), or in the call
   arguments a number of at least four digits (an amount read from a balance).  Only the
   most recent earlier result holding the value is linked, so a value echoed by many
   results does not fan out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .tokens import identifier_keys

#: numbers that count as values: at least four digits, not part of an identifier or date
_NUMBER_RE = re.compile(r"(?<![\w.\-/])\d{4,}(?:\.\d+)?(?![\w\-/]|\.\d)")


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    raise TypeError(f"{where}['content'] must be a string, None or a list of parts, got {type(content).__name__}")


def _calls(message: Mapping[str, Any], where: str) -> list[tuple[str | None, str, str]]:
    """``(call id, function name, arguments string)`` for each call the message makes."""
    calls = []
    for k, call in enumerate(message.get("tool_calls") or ()):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise ValueError(f"{where}['tool_calls'][{k}] needs a 'function' mapping")
        calls.append((call.get("id"), str(fn.get("name", "")), str(fn.get("arguments") or "")))
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append((None, str(legacy.get("name", "")), str(legacy.get("arguments") or "")))
    return calls


def _message(messages: Sequence[Any], i: int) -> Mapping[str, Any]:
    message = messages[i]
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise TypeError(f"messages[{i}] must be a mapping with a string 'role'")
    return message


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text as a memory block: its content, then each call as ``name(arguments)``."""
    text = _content_text(message.get("content"), "message")
    calls = [f"{name}({arguments})" for _, name, arguments in _calls(message, "message")]
    return "\n".join(x for x in [text, *calls] if x)


def message_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """``message_text`` of every message (the block texts to encode and to induce from)."""
    return [message_text(_message(messages, i)) for i in range(len(messages))]


def trace_edges(messages: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Tool-trace edges (module rules), (E, 2) int64 ``(dependent, prerequisite)``, sorted."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a sequence of message mappings, got {type(messages).__name__}")
    pairs: set[tuple[int, int]] = set()
    caller_of_id: dict[str, int] = {}
    caller_of_name: dict[str, int] = {}
    latest_result: dict[str, int] = {}  # value -> most recent tool result holding it
    for i in range(len(messages)):
        message = _message(messages, i)
        where = f"messages[{i}]"
        role = message["role"]
        text = _content_text(message.get("content"), where)
        if role in ("tool", "function"):
            if role == "tool":
                caller = caller_of_id.get(message.get("tool_call_id"))
            else:
                caller = caller_of_name.get(str(message.get("name", "")))
            if caller is not None:
                pairs.add((i, caller))
            for value in identifier_keys(text) | {f"#{x}" for x in _NUMBER_RE.findall(text)}:
                latest_result[value] = i
            continue
        if role != "assistant":
            continue
        calls = _calls(message, where)
        arguments = " ".join(a for _, _, a in calls)
        values = identifier_keys(f"{text}\n{arguments}") | {f"#{x}" for x in _NUMBER_RE.findall(arguments)}
        pairs.update((i, latest_result[v]) for v in values if v in latest_result)
        for call_id, name, _ in calls:
            if call_id is not None:
                caller_of_id[call_id] = i
            caller_of_name[name] = i
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
