"""Process-wide memos keyed by text a session held, and the one call that empties them all.

Induction, the approximate tokenizer and the digest renderer memoize small functions of the
words, keys and values they read (an identifier, a JSON key, a value word), and ``select``
keeps a cache of encoded texts per encoder.  A value that a user removed (a card number) would
stay in them until evicted, so ``forget_texts`` empties every one: ``MemoryStore`` calls it on
each deletion, ``ThreadMemory`` when a thread's messages lost or changed one.  The memos only
save time: emptying them never changes an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_Memo = TypeVar("_Memo", bound=Any)

_clearers: list[Callable[[], None]] = []


def text_memo(memo: _Memo) -> _Memo:
    """Register an ``functools.lru_cache``-wrapped function whose keys are texts (a decorator)."""
    _clearers.append(memo.cache_clear)
    return memo


def on_forget(clear: Callable[[], None]) -> None:
    """Register ``clear`` (it empties a cache keyed by texts) with ``forget_texts``."""
    _clearers.append(clear)


def forget_texts() -> None:
    """Empty every process-wide memo and cache keyed by texts (module docstring)."""
    for clear in list(_clearers):
        clear()
