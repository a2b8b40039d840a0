"""Replay a BFCL session's ground truth against BFCL's simulated APIs into a chat transcript.

For each session the involved API classes are instantiated from the installed wheel and
loaded with the session's ``initial_config`` (the long-context state for the
``long_context`` split), as BFCL's own multi-turn executor does; stateless classes are
not loaded.  A method name resolves to the last involved class that defines it (the
executor's rule).  Then, turn by turn:

1. the turn's user message(s);
2. for each ground-truth call, in order: an assistant message with one tool call (id
   ``call_<turn>_<step>``, the function name, the arguments as a JSON object: positional
   arguments named by the method's signature, then the keywords as written) and the tool
   message answering it, whose content is the method's return value as JSON text (keys in
   the API's order; ``null`` for None; mpmath numbers as JSON numbers of their decimal form;
   the ``...`` (Ellipsis) that ends one long-context watch list as the string ``"..."``;
   an exception becomes ``{"error": "<message>"}``);
3. a closing assistant message: ``CLOSING_REPLY``, or ``NO_CALL_REPLY`` for a turn whose
   ground truth has no call.

The transcript is deterministic: no timestamps, ids derived from positions, and the APIs'
own randomness is seeded by BFCL's scenario state.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import numbers
from dataclasses import dataclass
from typing import Any

from .data import Session

CLOSING_REPLY = "Done."
NO_CALL_REPLY = "None of the available tools can do that."


@dataclass(frozen=True)
class Call:
    """One executed ground-truth call: where it sits, what it was given, what it returned."""

    turn: int
    step: int
    id: str
    name: str
    arguments: dict[str, Any]
    value: Any
    error: str | None
    content: str


@dataclass(frozen=True)
class Transcript:
    """A replayed session: OpenAI-style ``messages`` and, per message, its turn and kind.

    ``kinds[i]`` is ``"user"``, ``"call"`` (assistant with one tool call), ``"result"``
    (tool message) or ``"reply"`` (closing assistant message); ``user_index[t]`` is the
    position of turn t's first user message; ``calls[t]`` the executed calls of turn t.
    """

    session: Session
    messages: tuple[dict[str, Any], ...]
    turns: tuple[int, ...]
    kinds: tuple[str, ...]
    user_index: tuple[int, ...]
    calls: tuple[tuple[Call, ...], ...]


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``(name, positional, keywords)`` of a ground-truth call string such as ``"cd(folder='x')"``.

    Arguments must be Python literals; anything else is a ``ValueError``.
    """
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    try:
        positional = [ast.literal_eval(a) for a in node.args]
        keywords = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except ValueError:
        raise ValueError(f"call arguments must be literals: {text!r}") from None
    if None in keywords:
        raise ValueError(f"**kwargs in a call: {text!r}")
    return node.func.id, positional, keywords


def named_arguments(method: Any, positional: list[Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """Positional arguments named by ``method``'s signature, followed by the keywords."""
    names = [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) > len(names):
        raise ValueError(f"{method.__name__} takes {len(names)} positional arguments, got {len(positional)}")
    out = dict(zip(names, positional))
    for key, value in keywords.items():
        if key in out:
            raise ValueError(f"{method.__name__}: argument {key!r} given twice")
        out[key] = value
    return out


def _json_number(value: Any) -> Any:
    """``json.dumps`` hook: Ellipsis as ``"..."``, a non-float real number (mpmath's ``mpf``) as its decimal form."""
    if value is Ellipsis:
        return "..."
    if isinstance(value, numbers.Real) or hasattr(value, "__float__"):
        return float(str(value))
    raise TypeError(f"tool result holds a {type(value).__name__}, which has no JSON form")


def result_json(value: Any, error: str | None = None) -> str:
    """A tool result as JSON text (module rule)."""
    if error is not None:
        return json.dumps({"error": error})
    return json.dumps(value, default=_json_number)


def api_instances(session: Session) -> dict[str, Any]:
    """The session's API objects, by class name, loaded as BFCL's executor loads them."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES

    out = {}
    for name in session.involved_classes:
        instance = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)()
        if name not in STATELESS_CLASSES:
            state = copy.deepcopy(session.initial_config.get(name, {}))
            instance._load_scenario(state, long_context=session.long_context)
        out[name] = instance
    return out


def method_table(instances: dict[str, Any]) -> dict[str, Any]:
    """Public method name -> bound method; a later class wins a shared name."""
    table = {}
    for instance in instances.values():
        for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not name.startswith("_"):
                table[name] = method
    return table


def _execute(methods: dict[str, Any], text: str) -> tuple[str, dict[str, Any], Any, str | None]:
    """Run one call string; the return value is copied at once (APIs return their own state)."""
    name, positional, keywords = parse_call(text)
    if name not in methods:
        raise ValueError(f"call to unknown function {name!r}: {text!r}")
    method = methods[name]
    arguments = named_arguments(method, positional, keywords)
    try:
        value = method(**copy.deepcopy(arguments))
    except Exception as exc:
        return name, arguments, None, str(exc)
    return name, arguments, copy.deepcopy(value), None


def _tool_call(call: Call) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}


def replay(session: Session, *, parallel: bool = False) -> Transcript:
    """The session's transcript (module rules); ``parallel=True`` puts all of a turn's calls
    in one assistant message followed by their results (a variant for sensitivity checks)."""
    methods = method_table(api_instances(session))
    messages: list[dict[str, Any]] = []
    turns: list[int] = []
    kinds: list[str] = []
    user_index: list[int] = []
    all_calls: list[tuple[Call, ...]] = []

    def emit(message: dict[str, Any], turn: int, kind: str) -> None:
        messages.append(message)
        turns.append(turn)
        kinds.append(kind)

    for t, (users, truth) in enumerate(zip(session.turns, session.ground_truth)):
        user_index.append(len(messages))
        for user in users:
            emit({"role": user["role"], "content": user["content"]}, t, "user")
        calls = []
        for step, text in enumerate(truth):
            name, arguments, value, error = _execute(methods, text)
            calls.append(Call(t, step, f"call_{t}_{step}", name, arguments, value, error, result_json(value, error)))
        for group in [calls] if parallel and calls else [[c] for c in calls]:
            tool_calls = [_tool_call(c) for c in group]
            emit({"role": "assistant", "content": None, "tool_calls": tool_calls}, t, "call")
            for call in group:
                emit({"role": "tool", "tool_call_id": call.id, "content": call.content}, t, "result")
        emit({"role": "assistant", "content": CLOSING_REPLY if truth else NO_CALL_REPLY}, t, "reply")
        all_calls.append(tuple(calls))
    return Transcript(session, tuple(messages), tuple(turns), tuple(kinds), tuple(user_index), tuple(all_calls))
