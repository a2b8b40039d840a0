"""``BlockColumns``: the column store of blocks that ``MemoryStore`` and ``select`` share.

Per-block data lives in append-only arrays that grow by doubling (``_growable``), so
``append`` is amortized O(1): the embeddings, the costs, the active/deleted/pinned flags,
each block's prerequisites as a CSR (``edge_ptr``/``prerequisites``: row ``s`` holds the
slots block ``s`` depends on), its referent links (``Referents``: uses and binds as CSRs over
referent ids), the induced edges (``_induced.InducedEdges``) and the chat facts
(``chat.ChatFacts``).  A block's slot is its seq (its position in the history).

What one compaction needs of a set of blocks ``slots`` (ascending) is gathered in one kernel
call each, in O(len(slots) + their links) whatever the other blocks hold:

* ``active_graph(slots)``: the prerequisite edges (declared and induced) among them;
* ``active_index(slots)``: their ``ReferentIndex`` (the live binder of a referent is its
  newest binder among them, as ``retain`` reads it).

``MemoryStore`` keeps the blocks it holds in memory in ``blocks`` (slot -> ``Block``, no
embeddings) and the rest in its archive; ``select`` keeps every block of a history there.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcRuntimeError, DsgcValueError

from .. import _validate
from .._deferred import deferred
from ..encoders import check_unicode
from ..graph import DependencyGraph
from ..pins import ReferentIndex
from ._growable import Growable
from ._induced import InducedEdges
from .block import Block
from .chat import ChatFacts

graph_kernels = deferred("dsgc_fast.kernels.graph_kernels")
referent_kernels = deferred("dsgc_fast.kernels.referents")


class BlockColumns:
    """The blocks of one history as columns (the module docstring); every attribute is read-only to others.

    Parameters
    ----------
    width : numpy.dtype
        The dtype the embeddings are kept in.

    Attributes
    ----------
    ids, slot_of : list of str, dict of str to int
        The id of every slot, and its inverse.
    uses, binds : list
        Each block's used referents and bound referent -> value (emptied when deleted).
    newest_binder : dict of str to int
        Referent -> the newest slot binding it, over the blocks not deleted.
    binder_slots : dict of str to list of int
        Referent -> every slot binding it (not deleted), oldest first.
    blocks : dict of int to Block
        The blocks held in memory (a store's active ones; every block for ``select``), by
        slot, without embeddings.  Replaced, never edited.
    cost, active, deleted, pinned : Growable
        Per slot: token cost, and the three flags.
    induced : InducedEdges
        The induced edges.
    chat : ChatFacts
        The chat facts of every slot.
    """

    def __init__(self, width: np.dtype) -> None:
        self.width = width
        self.ids: list[str] = []
        self.slot_of: dict[str, int] = {}
        self.uses: list[tuple[str, ...]] = []
        self.binds: list[dict[str, str]] = []
        self.newest_binder: dict[str, int] = {}
        self.binder_slots: dict[str, list[int]] = {}
        self.referents = Referents()
        self.chat = ChatFacts()
        self.blocks: dict[int, Block] = {}
        self.emb: Growable | None = None
        self.cost = Growable(np.int64)
        self.active = Growable(np.bool_)
        self.deleted = Growable(np.bool_)
        self.pinned = Growable(np.bool_)
        self.prerequisites = Growable(np.int64)  # with edge_ptr: CSR of slot -> the slots it depends on
        self.edge_ptr = Growable(np.int64)
        self.edge_ptr.append(0)
        self.induced = InducedEdges()
        self._slot_array: np.ndarray | None = None  # the active slots, ascending (None: read them off ``active``)
        self._appended: list[int] = []  # active slots appended since _slot_array was set

    @property
    def total(self) -> int:
        """The number of slots (blocks ever appended)."""
        return len(self.ids)

    @property
    def dimension(self) -> int | None:
        """The embedding dimension d (None before the first embedding)."""
        return None if self.emb is None else int(self.emb.view().shape[1])

    def embeddings(self) -> np.ndarray:
        """Every embedded slot's row (at least one row must be there)."""
        if self.emb is None:
            raise DsgcRuntimeError("the store holds no embeddings yet")
        return self.emb.view()

    def add_embedding(self, embedding: np.ndarray) -> None:
        """Append the next slot's embedding row (rows come in slot order)."""
        if self.emb is None:
            self.emb = Growable(self.width, embedding.shape[0])
        self.emb.append(embedding)

    def append(self, block: Block, embedding: np.ndarray | None, *, active: bool = True, deleted: bool = False) -> None:
        """Append ``block`` (its seq the next slot) with its ``embedding`` row (None: added later by ``add_embedding``)."""
        slot = len(self.ids)
        if embedding is not None:
            self.add_embedding(embedding)
        self.cost.append(block.cost)
        self.active.append(active)
        self.deleted.append(deleted)
        self.pinned.append(block.pinned)
        for prerequisite in block.depends_on:
            self.prerequisites.append(self.slot_of[prerequisite])
        self.edge_ptr.append(self.prerequisites.n)
        self.ids.append(block.id)
        self.slot_of[block.id] = slot
        self.uses.append(block.uses)
        self.binds.append(block.binds)
        if not deleted:
            self.newest_binder.update(dict.fromkeys(block.binds, slot))
            for referent in block.binds:
                self.binder_slots.setdefault(referent, []).append(slot)
        self.referents.append(block.uses, block.binds)
        self.chat.append(slot, block.meta)
        if active:
            self.blocks[slot] = block if block.embedding is None else dataclasses.replace(block, embedding=None)
            if self._slot_array is not None:
                self._appended.append(slot)

    def induce(self, block: Block) -> None:
        """Run the inducer on ``block``, the next block appended (``_induced``)."""
        self.induced.observe(block.seq, block, {self.slot_of[d] for d in block.depends_on})

    def active_slots(self) -> np.ndarray:
        """The active slots, ascending (read-only; kept up to date as blocks come and go)."""
        if self._slot_array is None:
            self.set_active_slots(np.flatnonzero(self.active.view()))
        elif self._appended:
            self.set_active_slots(np.concatenate([self._slot_array, np.array(self._appended, dtype=np.int64)]))
        assert self._slot_array is not None
        return self._slot_array

    def set_active_slots(self, slots: np.ndarray | None) -> None:
        """Record the active slots (None: unknown, read off ``active`` when next asked)."""
        if slots is not None:
            slots.flags.writeable = False
        self._slot_array = slots
        self._appended.clear()

    def live_slots(self) -> np.ndarray:
        """The slots not deleted (active and archived), ascending."""
        return np.flatnonzero(~self.deleted.view())

    def archived_slots(self) -> np.ndarray:
        """The archived slots (neither active nor deleted), ascending."""
        return np.flatnonzero(~(self.active.view() | self.deleted.view()))

    def names_of(self, slots: np.ndarray) -> list[str]:
        """The ids of ``slots`` (a copy of ``ids`` when they are every slot, ascending)."""
        if slots.shape[0] == self.total:
            return list(self.ids)
        return list(map(self.ids.__getitem__, slots.tolist()))

    def rows_of(self, slots: np.ndarray) -> np.ndarray:
        """The embedding rows of ``slots`` (ascending; a read-only view when they are every slot, else a copy)."""
        rows = self.embeddings()
        if slots.shape[0] == rows.shape[0]:
            view = rows[:]
            view.flags.writeable = False
            return view
        return rows[slots]

    def state(self, slot: int) -> str:
        """``"active"``, ``"archived"`` or ``"deleted"``."""
        if slot in self.blocks:
            return "active"
        return "deleted" if self.deleted.view()[slot] else "archived"

    def active_graph(self, slots: np.ndarray, among: np.ndarray | None = None) -> DependencyGraph:
        """The prerequisite edges (declared and induced in force) among ``slots`` (ascending), in positions.

        ``among`` flags every slot, True exactly at ``slots`` (default: the ``active`` flags).
        An edge j -> i counts when both are among them; O(len(slots) + their edges).
        """
        if among is None:
            among = self.active.view()
        ptr, prerequisites, in_force = self.induced.csr(len(self.ids))
        csr = graph_kernels.active_csr(
            slots, among, self.edge_ptr.view(), self.prerequisites.view(), ptr, prerequisites, in_force
        )
        return DependencyGraph.built(int(slots.shape[0]), *csr)

    def active_index(self, slots: np.ndarray) -> ReferentIndex:
        """The ``ReferentIndex`` of the blocks ``slots`` (ascending; local index = position)."""
        return self.referents.active_index(slots, self.binds)

    def archived_closure(self, slots: Iterable[int], binders: Mapping[str, int | None] | None = None) -> list[int]:
        """The slots among ``slots`` not in ``blocks``, with the part of their referent closure not in ``blocks``.

        The traversal (use -> newest binder over the blocks not deleted; ``binders``
        overrides some referents' binder, None for unbound) stops at blocks held in memory:
        a store keeps its active set closed, so nothing behind an active block is archived.
        Its cost is the size of what it returns, not the size of the history.
        """
        newest = self.newest_binder if binders is None else {**self.newest_binder, **binders}
        seen: set[int] = set()
        frontier = [s for s in slots if s not in self.blocks]
        while frontier:
            u = frontier.pop()
            if u in seen:
                continue
            seen.add(u)
            for x in self.uses[u]:
                b = newest.get(x)
                if b is not None and b not in seen and b not in self.blocks:
                    frontier.append(b)
        return sorted(seen)

    def mark_active(self, restored: Iterable[Block]) -> None:
        """Record blocks read back from the archive (without their embeddings) as active, held as they are.

        The columns own them from then on: a caller that hands them on hands on copies.
        """
        changed = False
        for block in restored:
            self.active.view()[block.seq] = True
            self.blocks[block.seq] = block
            changed = True
        if changed:
            self.set_active_slots(None)

    def replace(self, block: Block) -> None:
        """Hold ``block`` (an active block cut, digested or made whole) in place of its slot's block."""
        self.blocks[block.seq] = block
        self.cost.view()[block.seq] = block.cost

    def drop_active(self, slots: Iterable[int]) -> None:
        """Take these (active) slots out of ``blocks`` and the active flags; a dict left mostly empty is rebuilt.

        A dict keeps its table after deletions (CPython resizes it only when insertions fill
        it), and copying or scanning it reads every slot the table ever held: after one
        compaction of a 100,000-block history to 150, each turn's copy of the active blocks
        took 73 us instead of 2.
        """
        removed = 0
        for slot in slots:
            del self.blocks[slot]
            self.active.view()[slot] = False
            removed += 1
        if removed > len(self.blocks):
            self.blocks = dict(self.blocks)

    def newest_active_binder(self, referent: str) -> int | None:
        """The newest slot held in ``blocks`` that binds ``referent``, if any."""
        for slot in reversed(self.binder_slots.get(referent, ())):
            if slot in self.blocks:
                return slot
        return None

    def erase(self, slots: Sequence[int], binders: Mapping[str, int | None]) -> None:
        """Record ``slots`` (not deleted) as deleted, ``binders`` the new live binder of each referent they bound."""
        gone = set(slots)
        for slot in slots:
            self.active.view()[slot] = False
            self.deleted.view()[slot] = True
            self.binds[slot], self.uses[slot] = {}, ()  # erased, as in the database's tombstone
        self.drop_active([s for s in slots if s in self.blocks])
        self.set_active_slots(None)
        for referent, binder in binders.items():
            self.binder_slots[referent] = [b for b in self.binder_slots[referent] if b not in gone]
            if binder is None:
                del self.newest_binder[referent], self.binder_slots[referent]
            else:
                self.newest_binder[referent] = binder


class Referents:
    """Every block's uses and binds as append-only arrays over referent ids (all blocks).

    ``use_ptr``/``use_refs``: CSR of slot -> referent ids it uses (the block's order, each
    once); ``bind_ptr``/``bind_refs``: CSR of slot -> referent ids it binds.  ``active_index``
    gathers some blocks' part into a ``ReferentIndex`` in one kernel call
    (``kernels.referents.active_links``), in O(those blocks + their links) whatever the
    number of other blocks.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.use_ptr = Growable(np.int64)
        self.use_ptr.append(0)
        self.use_refs = Growable(np.int64)
        self.bind_ptr = Growable(np.int64)
        self.bind_ptr.append(0)
        self.bind_refs = Growable(np.int64)

    def _id(self, referent: str) -> int:
        k = self.ids.get(referent)
        if k is None:
            k = self.ids[referent] = len(self.names)
            self.names.append(referent)
        return k

    def append(self, uses: Sequence[str], binds: Mapping[str, str]) -> None:
        """Append the next slot's links."""
        for x in uses:
            self.use_refs.append(self._id(x))
        self.use_ptr.append(self.use_refs.n)
        for x in binds:
            self.bind_refs.append(self._id(x))
        self.bind_ptr.append(self.bind_refs.n)

    def active_index(self, slots: np.ndarray, binds: Sequence[Mapping[str, str]]) -> ReferentIndex:
        """The ``ReferentIndex`` of the blocks ``slots`` (ascending; local index = position).

        The live binder of a referent is its newest binder among them, as ``retain`` computes
        it from the blocks' lists; referent ids are local (those the blocks touch).
        """
        uses, binds_csr = (self.use_ptr.view(), self.use_refs.view()), (self.bind_ptr.view(), self.bind_refs.view())
        touched, indptr, use_ids, binder, binder_slot = referent_kernels.active_links(
            slots, *uses, *binds_csr, len(self.names)
        )
        names = _Gather(self.names, touched)
        values = _LiveValues(binds, names, binder_slot)
        return ReferentIndex.built(int(slots.shape[0]), indptr, use_ids, binder, names, values)


class _Gather(Sequence[str]):
    """``base[keys[k]]`` for k in range(len(keys)), read when asked."""

    def __init__(self, base: Sequence[str], keys: np.ndarray) -> None:
        self._base, self._keys = base, keys

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._base[int(j)] for j in self._keys[k]]
        return self._base[int(self._keys[k])]

    def __len__(self) -> int:
        return int(self._keys.shape[0])


class _LiveValues(Sequence[Any]):
    """The value the live binder of referent k binds it to (None when unbound)."""

    def __init__(self, binds: Sequence[Mapping[str, str]], names: Sequence[str], binder_slots: np.ndarray) -> None:
        self._binds, self._names, self._slots = binds, names, binder_slots

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        slot = int(self._slots[k])
        return None if slot < 0 else self._binds[slot][self._names[k]]

    def __len__(self) -> int:
        return int(self._slots.shape[0])


def encoded(encode: Callable[[list[str]], Any], texts: list[str], name: str, dimension: int | None) -> np.ndarray:
    """``encode(texts)`` checked: an (len(texts), d) finite array, d the blocks' ``dimension`` if known."""
    out = np.asarray(encode(texts), dtype=np.float64)
    if out.ndim != 2 or out.shape[0] != len(texts):
        raise DsgcValueError(f"{name} must return an ({len(texts)}, d) array, got shape {out.shape}")
    return check_vectors(out, name, dimension)


def in_width(vectors: np.ndarray, width: np.dtype) -> np.ndarray:
    """Checked float64 embeddings as ``width`` (a store's ``embedding_dtype``); refused if they overflow it."""
    with np.errstate(over="ignore"):
        out = vectors.astype(width)
    if not np.isfinite(out).all():
        raise DsgcValueError(
            f"embedding does not fit {width.name} (largest magnitude {np.finfo(width).max:g}); choose a wider embedding_dtype"
        )
    return out


def check_vectors(vectors: np.ndarray, name: str, dimension: int | None) -> np.ndarray:
    """``vectors`` (k, d) must be finite, with d >= 1 and d = ``dimension`` when that is known."""
    if vectors.shape[1] == 0 or not np.isfinite(vectors).all():
        raise DsgcValueError(f"{name} must be finite with d >= 1")
    if dimension is not None and vectors.shape[1] != dimension:
        raise DsgcValueError(f"{name} has d = {vectors.shape[1]}, but the store's blocks have d = {dimension}")
    return np.ascontiguousarray(vectors)


def query_embedding(query: Any, encode: Callable[[list[str], str], np.ndarray]) -> tuple[np.ndarray, str]:
    """A compaction's query as an embedding (d,) or (m, d), and its text for the log.

    A text or a list of texts is encoded with ``encode(texts, name)``; anything else must be
    a numeric (d,)/(m, d) embedding.
    """
    if isinstance(query, str):
        return encode([check_unicode("query", query)], "encoder(query)")[0], query
    if isinstance(query, Sequence) and query and all(isinstance(q, str) for q in query):
        texts = [check_unicode("query", q) for q in query]
        return encode(texts, "encoder(query)"), json.dumps(texts)
    arr = _validate.numeric_array("query", query).astype(np.float64)
    if arr.ndim not in (1, 2):
        raise DsgcValueError(f"query must be a text, a list of texts or a (d,)/(m, d) embedding, got shape {arr.shape}")
    return arr, f"<embedding {arr.shape}>"
