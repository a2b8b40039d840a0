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

from ._growable import Growable
from .archive import Block
from .induction import IncrementalInducer

#: the meta key marking a block added with ``induce=True``
INDUCED_KEY = "induced"


def is_induced(meta: Mapping[str, Any]) -> bool:
    """True for the meta of a block added with ``induce=True``."""
    return meta.get(INDUCED_KEY) is True


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
    """The induction state of one store: the inducer, and the induced edges in force."""

    def __init__(self) -> None:
        self._inducer = IncrementalInducer(pin_referents=False)
        self._slots: list[int] = []  # inducer index -> store slot
        self._pairs = Growable(np.int64, 2)
        self._live = Growable(np.bool_)
        self._row: dict[tuple[int, int], int] = {}  # pair in force -> its row in _pairs

    def observe(self, slot: int, block: Block, declared: Collection[int]) -> None:
        """Induce for ``block``, the newest, at ``slot``: record its edges and the retractions.

        ``declared``: the slots of the blocks it declares it depends on.
        """
        update = self._inducer.add(block.text, message=added_message(block))
        self._slots.append(slot)
        for _, i in update.edges.tolist():
            prerequisite = self._slots[i]
            if prerequisite not in declared:
                self._row[(slot, prerequisite)] = self._pairs.n
                self._pairs.append((slot, prerequisite))
                self._live.append(True)
        for j, i in update.retracted.tolist():
            row = self._row.pop((self._slots[j], self._slots[i]), None)
            if row is not None:
                self._live.view()[row] = False

    @property
    def blocks(self) -> int:
        """The number of blocks read."""
        return len(self._slots)

    def live(self) -> np.ndarray:
        """The induced edges in force, (E, 2) int64 ``(dependent slot, prerequisite slot)``."""
        return self._pairs.view()[self._live.view()]

    def with_declared(self, declared: np.ndarray) -> np.ndarray:
        """The declared (E, 2) slot edges followed by the induced edges in force."""
        return np.concatenate([declared, self.live()])

    def pairs(self) -> list[tuple[int, int]]:
        """The induced edges in force as sorted slot pairs."""
        return sorted(self._row)
