"""Deleting blocks from a ``MemoryStore`` for good (``delete``, ``pop``, ``truncate_after``, ``clear``).

A deleted block is neither active nor archived: its content leaves the columns, the
database (a tombstone stays in the ``deleted`` table) and every memo keyed by text, in one
transaction.  The active set stays closed: for each referent a deleted block bound, the
newest remaining binder becomes live, and one that is archived while an active block uses
the referent comes back with its closure in the same transaction.
"""

from __future__ import annotations

from dsgc_ref.contract import DsgcValueError

from .._text_caches import forget_texts
from .block import Block
from .core import StoreCore


def delete_named(core: StoreCore, slots: list[int]) -> list[str]:
    """``MemoryStore.delete`` of ``slots`` (ascending): refused, deleting nothing, if one is deleted already."""
    gone = [core.columns.ids[s] for s in slots if core.columns.deleted.view()[s]]
    if gone:
        raise DsgcValueError(f"block(s) {gone} are already deleted")
    return delete(core, slots, "delete")


def pop(core: StoreCore) -> Block:
    """``MemoryStore.pop``: delete the newest block not deleted yet and return it (``IndexError`` when none is left)."""
    left = core.columns.live_slots()
    if left.size == 0:
        raise IndexError("pop from a store with no blocks left")
    block = core.block(int(left[-1]))
    delete(core, [int(left[-1])], "pop")
    return block


def delete(core: StoreCore, slots: list[int], operation: str) -> list[str]:
    """Move ``slots`` (not deleted, ascending) to the deleted table; returns their ids."""
    if not slots:
        return []
    columns = core.columns
    gone = set(slots)
    binders: dict[str, int | None] = {}
    for slot in slots:
        for referent in columns.binds[slot]:
            if referent not in binders:
                left = [b for b in columns.binder_slots.get(referent, ()) if b not in gone]
                binders[referent] = left[-1] if left else None
    used = {x for s, block in columns.blocks.items() if s not in gone for x in block.uses}
    wanted = [b for x, b in binders.items() if b is not None and x in used]
    missing = columns.archived_closure(wanted, binders)
    with core.archive.transaction():
        restored = core.archive.restore_blocks(missing) if missing else []
        core.archive.delete_blocks(slots, operation)
        core.write_value_table(None)  # it may hold values of the deleted blocks
    columns.mark_active(restored)
    columns.erase(slots, binders)
    core.digests.forget(slots)
    core.value_lines.forget(slots)
    core.value_table = None
    core.recent_rows.clear()  # a memo keyed by text: no deleted text stays in it
    forget_texts()  # nor in the process-wide memos of words and values (``_text_caches``)
    if columns.induced.blocks:  # induction forgets deleted blocks: read the others again
        core.rebuild()
    return [core.columns.ids[s] for s in slots]
