"""Reading a ``MemoryStore``'s archive back: ``recall``, ``search``, and the newest-first walk over all blocks.

Each is a function of a ``core.StoreCore`` that the store calls holding its lock.  Recall
keeps the active set closed: a block comes back with the archived part of its referent
closure (``BlockColumns.archived_closure``), in one transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcValueError, is_integer_scalar

from ..stages import similarity_rows
from .block import Block
from .columns import query_embedding
from .compaction import table_cost
from .core import StoreCore
from .digest_blocks import whole_block
from .value_table import without_sources


@dataclasses.dataclass(frozen=True)
class SearchHit:
    """An archived block found by ``MemoryStore.search``: its similarity to the query (the
    largest over the query's texts) and the compaction and reason that archived it."""

    block: Block
    similarity: float
    compaction: int
    reason: str


def recall(core: StoreCore, slots: Iterable[int]) -> list[Block]:
    """``MemoryStore.recall`` of ``slots`` (not deleted): the blocks brought back (or made whole), oldest first."""
    columns = core.columns
    slots = list(slots)
    archived = columns.archived_closure(slots)
    restored = core.archive.restore_blocks(archived) if archived else []
    columns.mark_active(restored)
    back = {block.seq: block.detached(columns.embeddings()[block.seq].copy()) for block in restored}  # own copies
    for slot in sorted({*slots, *back}):
        whole = whole_block(columns.blocks[slot]) if slot in columns.blocks else None
        if whole is not None:
            core.archive.update_active(whole)
            columns.replace(whole)
            back[slot] = whole.detached(back[slot].embedding if slot in back else columns.embeddings()[slot].copy())
    if core.value_table is not None:  # what comes back is sent whole: its values leave the table
        gone = set(columns.names_of(np.asarray(sorted(back), dtype=np.int64)))
        table = without_sources(core.value_table, gone, table_cost(core.counter))
        if table is not core.value_table:
            core.write_value_table(table)
            core.value_table = table
    return [back[slot] for slot in sorted(back)]


def search(core: StoreCore, query: str | Sequence[str] | Any, k: int) -> list[SearchHit]:
    """``MemoryStore.search`` without its ``recall``: the ``k`` archived blocks most similar to ``query``."""
    if not is_integer_scalar(k) or int(k) < 0:
        raise DsgcValueError(f"k must be a non-negative integer, got {k!r}")
    columns = core.columns
    queries = np.atleast_2d(query_embedding(query, core.encode)[0])
    if queries.ndim != 2 or queries.shape[0] == 0:
        raise DsgcValueError(
            f"query must be a text, a list of texts or a (d,)/(m, d) embedding, got shape {queries.shape}"
        )
    if columns.dimension is not None and queries.shape[1] != columns.dimension:
        raise DsgcValueError(f"query has d = {queries.shape[1]}, but the store's blocks have d = {columns.dimension}")
    if not np.isfinite(queries).all():
        raise DsgcValueError("query must be finite")
    slots = columns.archived_slots()
    if int(k) == 0 or slots.size == 0:
        return []
    similarity = similarity_rows(np.ascontiguousarray(queries), np.ascontiguousarray(columns.embeddings()[slots]))
    best = similarity.max(axis=0)
    top = np.argsort(-best, kind="stable")[: int(k)]
    found = {a.block.seq: a for a in core.archive.archived(slots[top])}
    return [
        SearchHit(found[s].block, float(best[j]), found[s].compaction, found[s].reason) for j, s in zip(top, slots[top])
    ]


def older_blocks(core: StoreCore, end: int, count: int) -> tuple[list[Block], int]:
    """Up to ``count`` of the newest blocks older than seq ``end`` that are not deleted, newest first.

    Returns them (active ones as the store holds them) and the seq to continue from.  An
    archived block is read from the archive only when it comes first, alone, so a walk that
    stops before it never reads it.  The cost grows with the blocks skipped and returned,
    not with the store.
    """
    held = core.columns.blocks
    out: list[Block] = []
    while end > 0 and len(out) < count and end - 1 in held:  # the newest, mostly active
        end -= 1
        out.append(held[end])
    if len(out) == count or end == 0:
        return out, end
    deleted = core.columns.deleted.view()
    while end > 0:
        start = max(0, end - 4 * count)
        for slot in (start + np.flatnonzero(~deleted[start:end]))[::-1].tolist():
            block = held.get(slot)
            if block is None:
                if out:
                    return out, slot + 1
                return [core.archived_block(slot)], slot
            out.append(block)
            if len(out) == count:
                return out, slot
        end = start
    return out, 0
