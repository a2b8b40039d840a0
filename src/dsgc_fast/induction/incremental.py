"""Per-block induction for a growing memory store, from plain texts and chat messages.

``IncrementalInducer.add(text, message=None)`` returns what one new block adds: its edges
to earlier blocks, the edges a key turning into a hub takes back, and the block's
``binds``/``uses``.  A block is a plain text, or a chat message (``message``; ``text`` is
then only what the store keeps of it); ``mentions`` says what either mentions.  All rules
look only backwards in time:

- **Introducer edges** (the ``edges`` rule) for plain texts: a plain block mentioning a key
  (a prose identifier, or a word naming an earlier JSON value) first mentioned by an
  earlier block depends on that block, until the key has more than ``max_fanout``
  dependents: then it is a hub, and its edges are withdrawn (``retracted``) unless another
  key, or one of the rules below, still supports them.  Chat messages introduce keys but
  get no introducer edges: a message that repeats a value states it itself, and the newest
  user message, the query of the next compaction, would lift the old block that first
  named the value over the turns the session is working on.
- **Trace edges** (``traces``: result -> call, step -> result, step -> user message).
- **Referents** (``referents.ReferentTracker``).  With ``pin_referents=True`` (default) the
  block's ``binds``/``uses`` for the pinning API.  With ``pin_referents=False`` (the store's
  induction) no binds or uses: a definite description the tracker resolves ("that order"
  -> the order id 12446) becomes an edge to the newest earlier block mentioning the
  value (for an anchored description, to the block that anchored it), support rather than
  a pin, when that block lies before the newest earlier user message.  A description reaches back: a value the newest exchange (the previous user
  message and what followed it) names is what recency keeps, and there an edge would only
  reorder that exchange (on the BFCL development splits, 199 of the 210 queries whose
  descriptions resolve name only values of the newest exchange).  When the newest exchange
  names the value but an earlier block bound it (introduced it, "owns account AC-7730", or
  rebound it), the edge goes to the newest such binder: the block that says what the
  referent is, which the exchange's bare mentions (a call's argument) do not.

Trace and description edges are never withdrawn.  On plain texts with
``pin_referents=True``, after any number of ``add`` calls, ``edges`` / ``binds`` / ``uses``
equal the batch functions (``induce_edges``, ``induce_referents``) run on the same texts
in the same order.

State: per key the introducing block, its dependents so far (until it becomes a hub; only
keys a plain text mentioned again have a list) and its newest mention; per edge the number of keys supporting it, and whether another rule
made it.  Work per block is proportional to its size (plus, once per key, the retraction
when it becomes a hub): no pass over the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from . import _checks
from .edges import MAX_FANOUT
from .mentions import MentionReader, parts
from .referents import DESCRIPTION_WINDOW, ReferentTracker
from .traces import TraceTracker

Pair = tuple[int, int]


def _pairs(pairs: list[Pair] | set[Pair]) -> np.ndarray:
    if not pairs:  # most blocks: no array construction from an empty list
        return np.empty((0, 2), dtype=np.int64)
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


@dataclass(frozen=True)
class BlockInduction:
    """What adding one block changed.

    ``index``     the new block's index;
    ``edges``     (k, 2) new ``(index, prerequisite)`` edges, sorted;
    ``retracted`` (m, 2) earlier edges withdrawn because a key became a hub, sorted;
    ``binds``     the block's bindings (referent -> value) or None; ``uses`` its referents;
    ``keys``      the keys the block mentions;
    ``support``   each new edge -> the keys it rests on (empty for a result -> call edge).

    ``binds``/``uses`` are None/[] when the inducer does not pin referents.
    """

    index: int
    edges: np.ndarray
    retracted: np.ndarray
    binds: dict[str, str] | None
    uses: list[str] = field(default_factory=list)
    keys: frozenset[str] = frozenset()
    support: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict)


class IncrementalInducer:
    """Edge and referent induction one block at a time (module docstring).

    Blocks must arrive in time order: a ``timestamp``, when given, may not be older than
    the last one given (equal timestamps keep arrival order, as in the batch functions).
    """

    def __init__(
        self, *, max_fanout: int = MAX_FANOUT, window: int = DESCRIPTION_WINDOW, pin_referents: bool = True
    ) -> None:
        self.max_fanout = _checks.positive_int("max_fanout", max_fanout)
        if not isinstance(pin_referents, bool):
            raise DsgcTypeError(f"pin_referents must be a bool, got {type(pin_referents).__name__}")
        self.pin_referents = pin_referents
        self._reader = MentionReader()
        self._trace = TraceTracker()
        self._referents = ReferentTracker(window)
        self._introducer: dict[str, int] = {}  # key -> the block first mentioning it
        self._dependents: dict[str, list[int] | None] = {}  # key -> its dependents, None once a hub (none: absent)
        self._newest: dict[str, int] = {}  # key -> newest block mentioning it
        self._support: dict[Pair, int] = {}
        self._fixed: set[Pair] = set()  # edges of the rules that never withdraw theirs
        self._last_user: int | None = None  # the newest user message so far
        self._binds: list[dict[str, str] | None] = []
        self._uses: list[list[str]] = []
        self._last_time: Any = None

    def __len__(self) -> int:
        return len(self._uses)

    def add(self, text: str, timestamp: Any = None, *, message: Mapping[str, Any] | None = None) -> BlockInduction:
        """Induce for one new block (the newest); returns the changes it brings.

        ``message``: the chat message the block holds (``text`` is then only its stored
        text); None for a plain text.
        """
        if not isinstance(text, str):
            raise DsgcTypeError(f"text must be str, got {type(text).__name__}")
        if message is not None and not isinstance(message, Mapping):
            raise DsgcTypeError(f"message must be a mapping or None, got {type(message).__name__}")
        block = parts(text, message)
        self._check_time(timestamp)
        j = len(self)
        found = self._reader.read(block, self._trace.tool_of(block))
        keys = found.keys()
        rests: dict[Pair, set[str]] = {}  # every edge of the block -> the keys it rests on
        retracted: set[Pair] = set()
        if message is None:
            self._introduce(j, keys, rests, retracted)
        else:  # a chat message introduces keys, and gets no introducer edges
            for key in keys:
                self._introducer.setdefault(key, j)
        fixed = self._trace.observe(j, block, found)
        binds, uses, described = self._referents.observe_mentions(found.prose, found.mentions)
        if not self.pin_referents:
            fixed += self._description_edges(j, described)
            binds, uses = None, []
        for pair, rests_on in fixed:
            self._fixed.add(pair)
            rests.setdefault(pair, set()).update(() if rests_on is None else (rests_on,))
        self._newest.update(dict.fromkeys(keys, j))
        if block.role == "user":
            self._last_user = j
        self._binds.append(binds)
        self._uses.append(uses)
        support = {pair: frozenset(rests[pair]) for pair in sorted(rests)}
        return BlockInduction(j, _pairs(list(rests)), _pairs(retracted), binds, uses, frozenset(keys), support)

    @property
    def edges(self) -> np.ndarray:
        """All current edges, (E, 2) int64 sorted (equals ``induce_edges`` on the texts so far)."""
        return _pairs(set(self._support) | self._fixed)

    @property
    def binds(self) -> list[dict[str, str] | None]:
        """``binds[i]`` for every block so far (equals ``induce_referents``)."""
        return list(self._binds)

    @property
    def uses(self) -> list[list[str]]:
        """``uses[i]`` for every block so far (equals ``induce_referents``)."""
        return [list(u) for u in self._uses]

    def _description_edges(self, j: int, described: dict[str, int | None]) -> list[tuple[Pair, str]]:
        """``((j, target), key)`` per resolved description, its target (``_description_target``)
        when it lies before the newest user message (module docstring)."""
        horizon = self._last_user
        targets = {key: self._description_target(key, anchor, horizon) for key, anchor in described.items()}
        return [
            ((j, target), key)
            for key, target in sorted(targets.items())
            if target is not None and (horizon is None or target < horizon)
        ]

    def _description_target(self, key: str, anchor: int | None, horizon: int | None) -> int | None:
        """The block a description of ``key`` rests on: the block that anchored it; else the newest
        block mentioning the value, or, when that one is in the newest exchange (at or after
        ``horizon``), the newest block before it that bound the value."""
        if anchor is not None:
            return anchor
        newest = self._newest.get(key)
        if horizon is not None and newest is not None and newest >= horizon:
            binder = self._referents.binder(key)
            if binder is not None and binder < horizon:
                return binder
        return newest

    def _introduce(self, j: int, keys: set[str], rests: dict[Pair, set[str]], retracted: set[Pair]) -> None:
        """Plain block ``j``'s introducer edges, into ``rests`` with their keys; the edges of
        keys turning into hubs, into ``retracted``."""
        for key in sorted(keys):
            introducer = self._introducer.get(key)
            if introducer is None:
                self._introducer[key] = j
                continue
            dependents = self._dependents.setdefault(key, [])
            if dependents is None:
                continue
            if len(dependents) < self.max_fanout:
                dependents.append(j)
                self._support[(j, introducer)] = self._support.get((j, introducer), 0) + 1
                rests.setdefault((j, introducer), set()).add(key)
            else:
                retracted.update(self._retract_hub(key, introducer))

    def _retract_hub(self, key: str, introducer: int) -> list[Pair]:
        gone = []
        for dependent in self._dependents[key] or ():
            pair = (dependent, introducer)
            self._support[pair] -= 1
            if self._support[pair] == 0:
                del self._support[pair]
                if pair not in self._fixed:
                    gone.append(pair)
        self._dependents[key] = None
        return gone

    def _check_time(self, timestamp: Any) -> None:
        """A given timestamp must be a finite real number no older than the last one given."""
        if timestamp is None:
            return
        _checks.time_rank([timestamp], 1)
        if self._last_time is not None and timestamp < self._last_time:
            raise DsgcValueError(f"timestamp {timestamp!r} is older than the previous block's {self._last_time!r}")
        self._last_time = timestamp
