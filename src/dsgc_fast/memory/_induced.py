"""A store's induced edges: what ``MemoryStore.add(..., induce=True)`` adds, kept apart.

The same state serves ``dsgc_fast.select``'s parsed histories, so that ``select`` decides as
the store path does.

The rules are ``dsgc_fast.induction.IncrementalInducer`` with ``pin_referents=False``, run
over the blocks added with ``induce=True`` in insertion order (other blocks are not read):
a chat-message block is read as the message it was added as (``added_message``), any other
block as its text.  Induction gives edges only, support and never a pin: the binds and uses that decide
what must stay (and what a compaction refuses to split) are the declared ones.

The induced edges are kept apart from the declared ``depends_on``: a set of (dependent,
prerequisite) slots that compaction reads together with the declared edges, and that a
later block may take back (a key turning into a hub withdraws its edges,
``BlockInduction.retracted``).  They are derived data, never written to the archive: the
archive keeps every block as it was added, with ``meta["induced"] = true`` marking the
induced ones, and opening a store reads those again, in order, which gives the same set.
Deleted blocks are not read: deleting induced blocks reads the others again, so that the
edges are those of a store that never held them.  An edge the block declares is not added
twice; an edge to an archived block is left out of compaction with the block.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from ..induction import IncrementalInducer
from ._growable import Growable
from .block import Block


def added_message(block: Block) -> Mapping[str, Any] | None:
    """The chat message a block was added as, None for a plain block.

    A tool result that a compaction cut (``meta["truncated"]``) is read with its original
    content, so that opening the store again induces what adding it did.
    """
    message = block.meta.get("message")
    if not (isinstance(message, Mapping) and isinstance(message.get("role"), str)):
        return None
    cut = block.meta.get("truncated")
    return {**message, "content": cut["content"]} if isinstance(cut, Mapping) and "content" in cut else message


class InducedEdges:
    """The induction state of one store: the inducer, and the induced edges it gave.

    The edges are a CSR by dependent slot (rows for every slot, empty for blocks not read),
    each entry flagged while it is in force, so that compaction gathers the edges of its
    active blocks alone (``csr``).
    """

    def __init__(self) -> None:
        self._inducer = IncrementalInducer(pin_referents=False)
        self._slots: list[int] = []  # inducer index -> store slot
        self._prerequisites = Growable(np.int64)  # with _ptr: CSR of dependent slot -> prerequisite slots
        self._ptr = Growable(np.int64)
        self._ptr.append(0)
        self._in_force = Growable(np.bool_)  # per entry: not taken back by a hub
        self._entry: dict[tuple[int, int], int] = {}  # pair in force -> its entry

    @property
    def blocks(self) -> int:
        """The number of blocks read."""
        return len(self._slots)

    def observe(self, slot: int, block: Block, declared: Collection[int]) -> None:
        """Induce for ``block``, the newest, at ``slot``: record its edges and the retractions.

        ``declared``: the slots of the blocks it declares it depends on.
        """
        update = self._inducer.add(block.text, message=added_message(block))
        self._slots.append(slot)
        self._close_rows(slot)
        for _, i in update.edges.tolist():
            prerequisite = self._slots[i]
            if prerequisite not in declared:
                self._entry[(slot, prerequisite)] = self._prerequisites.n
                self._prerequisites.append(prerequisite)
                self._in_force.append(True)
        self._ptr.append(self._prerequisites.n)
        for j, i in update.retracted.tolist():
            entry = self._entry.pop((self._slots[j], self._slots[i]), None)
            if entry is not None:
                self._in_force.view()[entry] = False

    def _close_rows(self, slots: int) -> None:
        """Empty rows up to ``slots`` rows in all (the blocks before it that were not read)."""
        while self._ptr.n <= slots:
            self._ptr.append(self._prerequisites.n)

    def csr(self, slots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ptr, prerequisites, in_force)`` with rows for ``slots`` slots."""
        self._close_rows(slots)
        return self._ptr.view(), self._prerequisites.view(), self._in_force.view()

    def live(self) -> np.ndarray:
        """The induced edges in force, (E, 2) int64 ``(dependent slot, prerequisite slot)``, by dependent."""
        ptr, prerequisites, in_force = self._ptr.view(), self._prerequisites.view(), self._in_force.view()
        dependents = np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), np.diff(ptr))
        return np.stack([dependents[in_force], prerequisites[in_force]], axis=1)

    def pairs(self) -> list[tuple[int, int]]:
        """The induced edges in force as sorted slot pairs."""
        return sorted(self._entry)
