"""How deeply JSON values may nest: one limit for messages, block metadata and archived rows.

Copying, encoding and decoding a nested value recurse once (or twice) per level, so a value
nested near the interpreter's recursion limit passes one step and crashes a later one (a
``RecursionError`` from ``copy.deepcopy`` or ``json.dumps``).  Values nested more than
``MAX_NESTING`` levels are refused where they come in; the check itself uses no recursion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsgc_ref.contract import DsgcValueError

#: deepest nesting of objects and arrays accepted in a message, a block's meta or a stored row
MAX_NESTING = 100


def check_nesting(name: str, value: Any) -> None:
    """Raise ``ValueError`` if ``value`` (a decoded JSON tree) nests more than ``MAX_NESTING`` levels."""
    level = [value]
    for _ in range(MAX_NESTING + 1):
        level = [
            child
            for item in level
            if isinstance(item, (Mapping, list, tuple))
            for child in (item.values() if isinstance(item, Mapping) else item)
        ]
        if not level:
            return
    raise DsgcValueError(f"{name} is nested more than {MAX_NESTING} levels deep")


class NotCanonical(DsgcValueError):
    """Raised by ``canonical_copy`` for a value that a JSON round trip would change or refuse."""


def canonical_copy(value: Any) -> Any:
    """A deep copy of ``value`` if it is canonical JSON data, else ``NotCanonical``.

    Canonical: dicts with str keys, lists, str, int, bool, None and finite floats (exact
    types, no subclasses), nested at most ``MAX_NESTING`` levels.  For such a value the copy
    equals ``json.loads(json.dumps(value))``, which callers fall back on (for its conversions
    and its errors) when this raises.
    """
    return _copied(value, 0)


def _copied(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # inf or nan
            raise NotCanonical
        return value
    if depth >= MAX_NESTING and (kind is dict or kind is list) and value:
        raise NotCanonical
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotCanonical
            out[key] = item if type(item) is str else _copied(item, depth + 1)
        return out
    if kind is list:
        return [item if type(item) is str else _copied(item, depth + 1) for item in value]
    raise NotCanonical
