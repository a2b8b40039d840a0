"""How deeply JSON values may nest: one limit for messages, block metadata and archived rows.

Copying, encoding and decoding a nested value recurse once (or twice) per level, so a value
nested near the interpreter's recursion limit passes one step and crashes a later one (a
``RecursionError`` from ``copy.deepcopy`` or ``json.dumps``).  Values nested more than
``MAX_NESTING`` levels are refused where they come in; the check itself uses no recursion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    raise ValueError(f"{name} is nested more than {MAX_NESTING} levels deep")
