"""Per-block induction for a growing memory store.

``IncrementalInducer.add(text)`` returns what one new block adds: its edges to earlier
blocks, the edges a key turning into a hub takes back, and the block's ``binds``/``uses``.
After any number of ``add`` calls, ``edges`` / ``binds`` / ``uses`` equal the batch
functions (``induce_edges``, ``induce_referents``) run on the same texts in the same order:
the rules of ``edges`` and ``referents`` only look backwards in time, except the hub cap,
which is why an update can retract edges.

State per key: the introducing block, the dependents linked so far (until the key becomes
a hub), and for each edge the number of keys supporting it (an edge disappears only when
its last supporting key becomes a hub).  Work per block is proportional to its identifier
count (plus, once per key, the retraction when it becomes a hub): no pass over the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _checks
from .edges import MAX_FANOUT
from .referents import DESCRIPTION_WINDOW, ReferentTracker
from .tokens import iter_identifiers


def _pairs(pairs: list[tuple[int, int]] | set[tuple[int, int]]) -> np.ndarray:
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


@dataclass(frozen=True)
class BlockInduction:
    """What adding one block changed.

    ``index``     the new block's index;
    ``edges``     (k, 2) new ``(index, prerequisite)`` edges, sorted;
    ``retracted`` (m, 2) earlier edges withdrawn because a key became a hub, sorted;
    ``binds``     the block's bindings (referent -> value) or None; ``uses`` its referents.
    """

    index: int
    edges: np.ndarray
    retracted: np.ndarray
    binds: dict[str, str] | None
    uses: list[str] = field(default_factory=list)


@dataclass
class _Key:
    introducer: int
    dependents: list[int] | None  # None once the key is a hub


class IncrementalInducer:
    """Edge and referent induction one block at a time (same rules as the batch functions).

    Blocks must arrive in time order: a ``timestamp``, when given, may not be older than
    the last one given (equal timestamps keep arrival order, as in the batch functions).
    """

    def __init__(self, *, max_fanout: int = MAX_FANOUT, window: int = DESCRIPTION_WINDOW) -> None:
        self.max_fanout = _checks.positive_int("max_fanout", max_fanout)
        self._referents = ReferentTracker(window)
        self._keys: dict[str, _Key] = {}
        self._support: dict[tuple[int, int], int] = {}
        self._binds: list[dict[str, str] | None] = []
        self._uses: list[list[str]] = []
        self._last_time: Any = None

    def __len__(self) -> int:
        return len(self._uses)

    def add(self, text: str, timestamp: Any = None) -> BlockInduction:
        """Induce for one new block (the newest); returns the changes it brings."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        self._check_time(timestamp)
        j = len(self)
        added: list[tuple[int, int]] = []
        retracted: set[tuple[int, int]] = set()
        occurrences = list(iter_identifiers(text))
        for key in sorted({o[0] for o in occurrences}):
            state = self._keys.get(key)
            if state is None:
                self._keys[key] = _Key(introducer=j, dependents=[])
            elif state.dependents is not None:
                if len(state.dependents) < self.max_fanout:
                    state.dependents.append(j)
                    if self._link((j, state.introducer)):
                        added.append((j, state.introducer))
                else:
                    retracted.update(self._retract_hub(state))
        binds, uses = self._referents.observe(text, occurrences)
        self._binds.append(binds)
        self._uses.append(uses)
        return BlockInduction(j, _pairs(added), _pairs(retracted), binds, uses)

    @property
    def edges(self) -> np.ndarray:
        """All current edges, (E, 2) int64 sorted (equals ``induce_edges`` on the texts so far)."""
        return _pairs(list(self._support))

    @property
    def binds(self) -> list[dict[str, str] | None]:
        """``binds[i]`` for every block so far (equals ``induce_referents``)."""
        return list(self._binds)

    @property
    def uses(self) -> list[list[str]]:
        """``uses[i]`` for every block so far (equals ``induce_referents``)."""
        return [list(u) for u in self._uses]

    def _link(self, pair: tuple[int, int]) -> bool:
        count = self._support.get(pair, 0)
        self._support[pair] = count + 1
        return count == 0

    def _retract_hub(self, state: _Key) -> list[tuple[int, int]]:
        gone = []
        for dependent in state.dependents or ():
            pair = (dependent, state.introducer)
            self._support[pair] -= 1
            if self._support[pair] == 0:
                del self._support[pair]
                gone.append(pair)
        state.dependents = None
        return gone

    def _check_time(self, timestamp: Any) -> None:
        """A given timestamp must be a finite real number no older than the last one given."""
        if timestamp is None:
            return
        _checks.time_rank([timestamp], 1)
        if self._last_time is not None and timestamp < self._last_time:
            raise ValueError(f"timestamp {timestamp!r} is older than the previous block's {self._last_time!r}")
        self._last_time = timestamp
