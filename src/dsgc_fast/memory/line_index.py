"""Value lines by block with each distinct line interned once: the arrays C(S) is read from.

``value_table.candidates`` lists the lines of a set of blocks in rounds (its module docstring,
**Candidates**).  Over a long history most blocks have no value lines and most lines repeat,
so the walk runs in one kernel (``kernels.value_lines.candidate_entries``) over integer ids:
``LineIndex`` gives each distinct line an id at its first appearance and keeps, for each slot
in order, where the slot's ids start in one flat array and how many there are.  ``at`` and
``prefix`` give the read-only view of some slots by position (``IndexedLines``); the index only
grows, so a view never changes after it is taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ._growable import Growable


@dataclass(frozen=True)
class IndexedLines:
    """The value lines of blocks by position: block k's line ids are ``ids[starts[k] : starts[k] + counts[k]]``,
    id i's text is ``texts[i]`` and has ``chars[i]`` characters."""

    starts: np.ndarray
    counts: np.ndarray
    ids: np.ndarray
    chars: np.ndarray
    texts: Sequence[str]

    @classmethod
    def of(cls, lines: Iterable[Sequence[str]]) -> IndexedLines:
        """The view of the blocks whose lines are ``lines``, in order."""
        index = LineIndex()
        for block in lines:
            index.append(block)
        return index.prefix(len(index))

    def __len__(self) -> int:
        return int(self.starts.shape[0])


class LineIndex:
    """The value lines of slots 0, 1, ... in the order appended, each distinct line with one id."""

    def __init__(self) -> None:
        self._id: dict[str, int] = {}
        self._texts: list[str] = []
        self._chars = Growable(np.int64)
        self._ids = Growable(np.int64)
        self._starts = Growable(np.int64)
        self._counts = Growable(np.int64)

    def __len__(self) -> int:
        return self._starts.n

    def append(self, lines: Sequence[str]) -> None:
        """Index ``lines`` as the next slot's."""
        self._starts.append(self._ids.n)
        for line in lines:
            i = self._id.get(line)
            if i is None:
                i = self._id[line] = len(self._texts)
                self._texts.append(line)
                self._chars.append(len(line))
            self._ids.append(i)
        self._counts.append(len(lines))

    def at(self, slots: np.ndarray) -> IndexedLines:
        """The view of the indexed ``slots``, by position."""
        return self._view(self._starts.view()[slots], self._counts.view()[slots])

    def prefix(self, n: int) -> IndexedLines:
        """The view of slots ``0 .. n - 1`` (all indexed)."""
        return self._view(self._starts.view()[:n], self._counts.view()[:n])

    def _view(self, starts: np.ndarray, counts: np.ndarray) -> IndexedLines:
        return IndexedLines(starts, counts, self._ids.view(), self._chars.view(), self._texts)
