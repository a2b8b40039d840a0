"""``AsyncMemoryStore``: a ``MemoryStore`` for ``async`` code (LangGraph's ``ainvoke``, the Agents SDK).

Every method runs the store's method in a worker thread (``asyncio.to_thread``), so a
compaction or an encoder call never blocks the event loop.  The store serializes its calls
(it may be used from any thread), so concurrent coroutines on one store are safe; they run
one at a time.  The wrapped store stays usable directly (``.store``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from dsgc_ref.contract import DsgcTypeError

from . import messages as _messages
from .block import ArchivedBlock, Block, DeletedBlock
from .explain import CompactionReport
from .store import MemoryStore, SearchHit

T = TypeVar("T")


async def _in_thread(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(functools.partial(function, *args, **kwargs))


class AsyncMemoryStore:
    """Awaitable versions of the ``MemoryStore`` methods and of the chat-message functions.

    ``AsyncMemoryStore(store)`` wraps an open store; ``AsyncMemoryStore.open(**kwargs)``
    opens one (``MemoryStore(**kwargs)``) in a worker thread.  Use it as an ``async with``
    block to close the store at the end.
    """

    def __init__(self, store: MemoryStore) -> None:
        if not isinstance(store, MemoryStore):
            raise DsgcTypeError(f"store must be a MemoryStore, got {type(store).__name__}")
        self.store = store

    @classmethod
    async def open(cls, **kwargs: Any) -> AsyncMemoryStore:
        return cls(await _in_thread(MemoryStore, **kwargs))

    # -- the store's methods --------------------------------------------------------------
    async def add(self, text: str, **kwargs: Any) -> str:
        return await _in_thread(self.store.add, text, **kwargs)

    async def compact(self, query: Any, budget: int, **kwargs: Any) -> CompactionReport:
        return await _in_thread(self.store.compact, query, budget, **kwargs)

    async def recall(self, ids: str | Iterable[str]) -> list[Block]:
        return await _in_thread(self.store.recall, ids)

    async def search(self, query: Any, k: int, *, recall: bool = False) -> list[SearchHit]:
        return await _in_thread(self.store.search, query, k, recall=recall)

    async def delete(self, ids: str | Iterable[str]) -> list[str]:
        return await _in_thread(self.store.delete, ids)

    async def pop(self) -> Block:
        return await _in_thread(self.store.pop)

    async def truncate_after(self, block_id: str) -> list[str]:
        return await _in_thread(self.store.truncate_after, block_id)

    async def clear(self) -> list[str]:
        return await _in_thread(self.store.clear)

    async def blocks(self, *, embeddings: bool = True) -> list[Block]:
        return await _in_thread(self.store.blocks, embeddings=embeddings)

    async def get(self, block_id: str) -> Block:
        return await _in_thread(self.store.get, block_id)

    async def archived(self, ids: Iterable[str] | None = None) -> list[ArchivedBlock]:
        return await _in_thread(self.store.archived, ids)

    async def deleted(self, ids: Iterable[str] | None = None) -> list[DeletedBlock]:
        return await _in_thread(self.store.deleted, ids)

    async def save(self, path: Any) -> None:
        await _in_thread(self.store.save, path)

    async def close(self) -> None:
        await _in_thread(self.store.close)

    # -- chat messages (``dsgc_fast.memory.messages``) -------------------------------------------
    async def add_messages(self, messages: Iterable[Mapping[str, Any]], *, embeddings: Any = None) -> list[str]:
        return await _in_thread(_messages.add_messages, self.store, list(messages), embeddings=embeddings)

    async def compact_messages(self, budget: int, **options: Any) -> CompactionReport:
        return await _in_thread(_messages.compact_messages, self.store, budget, **options)

    async def remove_messages(self, ids: str | Iterable[str]) -> list[str]:
        return await _in_thread(_messages.remove_messages, self.store, ids)

    async def to_messages(self) -> list[dict[str, Any]]:
        return await _in_thread(_messages.to_messages, self.store)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
