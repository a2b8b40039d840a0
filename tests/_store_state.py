"""The full state of a store's blocks, as comparable values (for round-trip and crash tests)."""

from __future__ import annotations

from dsgc_fast.memory.store import MemoryStore


def block_states(store: MemoryStore) -> dict[str, tuple]:
    """Every block (active or archived) -> its full record, embedding bytes and whether it is active."""
    out = {}
    for block_id in store.ids() + store.archived_ids():
        b = store.get(block_id)
        out[block_id] = (
            b.text,
            b.cost,
            b.seq,
            b.depends_on,
            b.binds,
            b.uses,
            b.pinned,
            b.meta,
            b.embedding.tobytes(),
            block_id in store,
        )
    return out
