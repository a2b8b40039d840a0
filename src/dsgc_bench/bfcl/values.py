"""Argument values and where they occur: the matching rules of needed-value recall.

**Leaf values.**  The leaves of a call's arguments: every string and number reached through
dict values and list items (dict keys are names, not values).  Booleans and None are flags,
not values carried over from the history, and are left out; so are strings with no letter
or digit (``"."``, ``".."``, ``"/"``: navigation primitives) and empty strings.

**Normal forms.**  A number becomes ``("number", d)`` with ``d`` its shortest exact decimal
(``Decimal`` normalized, no exponent: ``6500``, ``6500.0`` -> ``"6500"``; ``3.50`` ->
``"3.5"``).  A string becomes ``("text", s)`` with ``s`` case-folded and every run of
whitespace made one space.

**Views.**  Matching reads a *view* of each message, the text a model reads with JSON
decoded: a user or assistant message's content; for an assistant tool call the function
name and, one per line, the keys and leaf values of its parsed arguments; for a tool
result the keys and leaf values of its parsed JSON content (its raw text if it is not
JSON).  Numbers in JSON are written in their normal form, booleans as ``true``/``false``.
A view is case-folded, with whitespace runs inside a line made one space, so a multi-word
value can only match inside one line (one leaf).

**Occurrence.**  ``("text", s)`` occurs in a view when ``s`` is a substring of it that is
not extended by a letter or digit on either side where ``s`` itself begins or ends with
one (``"temp"`` occurs in ``"temp/a.txt"`` but not in ``"template"``).  ``("number", d)``
occurs when one of the view's numbers has the normal form ``d``; a view's numbers are the
maximal digit runs with an optional fraction and sign, not glued to a letter, digit,
underscore or dot (``2024-03-01`` holds 2024, 3 and 1; ``v2`` holds none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

Value = tuple[str, str]  # ("text" | "number", normal form)

_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")
_ALNUM = re.compile(r"[^\W_]")


def number_form(x: Any) -> str:
    """The normal form of a number (module docstring)."""
    try:
        d = Decimal(x if isinstance(x, (int, str)) else repr(float(x)))
    except (InvalidOperation, ValueError):
        raise ValueError(f"not a number: {x!r}") from None
    if d == 0:
        return "0"
    return format(d.normalize(), "f")


def text_form(s: str) -> str:
    """The normal form of a string: case-folded, whitespace runs made one space."""
    return " ".join(s.casefold().split())


def normal_value(x: Any) -> Value | None:
    """``("number", ...)`` / ``("text", ...)`` for a leaf, or None if it is not a value."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return ("number", number_form(x))
    if isinstance(x, str):
        s = text_form(x)
        return ("text", s) if _ALNUM.search(s) else None
    return None


def leaves(value: Any) -> Iterator[Any]:
    """The leaves of a JSON-like value, through dict values and list items."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def leaf_values(arguments: Mapping[str, Any]) -> list[Value]:
    """Distinct normal-form leaf values of a call's arguments, in first-seen order."""
    out = (normal_value(x) for x in leaves(arguments))
    return list(dict.fromkeys(v for v in out if v is not None))


def walk(value: Any) -> Iterator[tuple[bool, Any]]:
    """``(is_key, item)`` for every dict key and every leaf of a parsed JSON value, in order."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield True, key
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)
    else:
        yield False, value


def _json_lines(value: Any) -> Iterator[str]:
    """Keys and leaves of a parsed JSON value, one per line, numbers in normal form."""
    for is_key, item in walk(value):
        if is_key or isinstance(item, str):
            yield str(item)
        elif isinstance(item, bool):
            yield "true" if item else "false"
        elif isinstance(item, (int, float)):
            yield number_form(item)


def json_view(text: str) -> str:
    """The view lines of a JSON text (its raw text if it does not parse)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return "\n".join(_json_lines(parsed))


def message_view(message: Mapping[str, Any]) -> str:
    """The normalized view of one chat message (module docstring)."""
    parts = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(json_view(content) if message.get("role") == "tool" else content)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(str(function.get("name", "")))
        parts.append(json_view(str(function.get("arguments") or "")))
    return normal_view("\n".join(parts))


def normal_view(text: str) -> str:
    """Case-folded text with whitespace runs inside each line made one space."""
    return "\n".join(" ".join(line.split()) for line in text.casefold().splitlines())


@lru_cache(maxsize=1 << 14)
def _text_pattern(s: str) -> re.Pattern[str]:
    start = r"(?<![^\W_])" if _ALNUM.match(s[0]) else ""
    end = r"(?![^\W_])" if _ALNUM.match(s[-1]) else ""
    return re.compile(start + re.escape(s) + end)


def view_numbers(view: str) -> frozenset[str]:
    """Normal forms of the numbers in a view (module docstring)."""
    return frozenset(number_form(m) for m in _NUMBER_RE.findall(view))


class View:
    """A message view with its numbers, for repeated occurrence tests."""

    __slots__ = ("numbers", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.numbers = view_numbers(text)

    def holds(self, value: Value) -> bool:
        """True when ``value`` occurs in this view (module docstring)."""
        kind, form = value
        if kind == "number":
            return form in self.numbers
        return _text_pattern(form).search(self.text) is not None
