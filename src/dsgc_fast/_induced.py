"""A store's induced edges: what ``MemoryStore.add(..., induce=True)`` adds, kept apart.

The rules are ``dsgc_fast.induction.IncrementalInducer`` with ``pin_referents=False``, run
over the blocks added with ``induce=True`` in insertion order (other blocks are not read):
a chat-message block is read as its message (``meta["message"]``), any other block as its
text.  Induction gives edges only, support and never a pin: the binds and uses that decide
what must stay (and what a compaction refuses to split) are the declared ones.

The induced edges are kept apart from the declared ``depends_on``: a set of (dependent,
prerequisite) slots that compaction reads together with the declared edges, and that a
later block may take back (a key turning into a hub withdraws its edges,
``BlockInduction.retracted``).  They are derived data, never written to the archive: the
archive keeps every block as it was added, with ``meta["induced"] = true`` marking the
induced ones, and opening a store reads those again, in order, which gives the same set.
An edge the block declares is not added twice.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from ._growable import Growable
from .induction import IncrementalInducer

#: the meta key marking a block added with ``induce=True``
INDUCED_KEY = "induced"


def is_induced(meta: Mapping[str, Any]) -> bool:
    """True for the meta of a block added with ``induce=True``."""
    return meta.get(INDUCED_KEY) is True


class InducedEdges:
    """The induction state of one store: the inducer, and the induced edges in force."""

    def __init__(self) -> None:
        self._inducer = IncrementalInducer(pin_referents=False)
        self._slots: list[int] = []  # inducer index -> store slot
        self._pairs = Growable(np.int64, 2)
        self._live = Growable(np.bool_)
        self._row: dict[tuple[int, int], int] = {}  # pair in force -> its row in _pairs

    def observe(self, slot: int, text: str, message: Mapping[str, Any] | None, declared: Collection[int]) -> None:
        """Induce for the block at ``slot`` (the newest): record its edges and the retractions.

        ``declared``: the slots the block declares it depends on.
        """
        update = self._inducer.add(text, message=message)
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

    def live(self) -> np.ndarray:
        """The induced edges in force, (E, 2) int64 ``(dependent slot, prerequisite slot)``."""
        return self._pairs.view()[self._live.view()]

    def pairs(self) -> list[tuple[int, int]]:
        """The induced edges in force as sorted slot pairs."""
        return sorted(self._row)
