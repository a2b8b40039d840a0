"""What an object holds: the strings reachable from it, for the tests that a removed secret is gone."""

from __future__ import annotations

import gc
import types

#: a card number a user removes from their history
SECRET = "4111 1111 1111 1111"


def reachable_strings(root: object) -> list[str]:
    """Every string reachable from ``root`` through containers and instances (not modules, classes or code)."""
    seen, out, stack = set(), [], [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType, types.CodeType)):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            out.append(obj)
        elif isinstance(obj, bytes):
            out.append(obj.decode("utf-8", "replace"))
        else:
            stack.extend(gc.get_referents(obj))
    return out
