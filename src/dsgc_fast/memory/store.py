"""``MemoryStore``: an agent's memory as blocks, compacted to a token budget, never lost.

An agent loop appends blocks (``add``) and, before each model call, compacts the store to
its budget (``compact``): ``retain`` ranks the active blocks against the query, the live
roots and their referent closure are pinned, and every block that is not kept is moved to
the SQLite archive in one transaction *before* it leaves the active set.  ``recall`` moves
archived blocks back (with the referent closure they need); ``save``/``load`` copy the whole
store.  The database is the record: opening a store on an existing archive file resumes it.

Sessions.  ``delete``, ``pop``, ``truncate_after`` and ``clear`` take blocks out of the
conversation for good: a deleted block is neither active nor archived, is never recalled,
found by ``search`` or used as a binder, and its id is never reused.  Its content is erased
from the store and from the database, in one transaction: a tombstone (seq, id, cost,
dependencies, with the compaction and reason that had archived it, if any) moves to the
``deleted`` table and the deletion is logged (``deleted()``: blocks with empty text), and
the compaction log keeps every compaction as it happened.  When a deleted block was the live binder of a referent an active block uses,
the next newest binder becomes live and, if archived, returns to the active set in the same
transaction.  ``search`` ranks the archive by similarity to a query and can recall the hits.

Per-block data lives in append-only arrays that grow by doubling (embeddings, costs, flags,
each block's prerequisites and referent links as per-block ranges), so ``add`` is amortized
O(1); ``compact`` gathers the active blocks' rows (vectorized indexing) and ranges (one kernel each), in
O(active blocks + their links) whatever the archive holds, and never rebuilds anything per
turn.  The store remembers the rows of the texts it encoded last (``RECENT_TEXTS``), so a
batch encoded in one call (``messages.add_messages``) and a query that repeats a block's text
cost no second encoder call.

A store may be used from any thread: every method holds the store's lock, so calls from
several threads run one at a time (an ``atomic()`` group holds it to its end).  A file
archive has one writer: a second store on the same file, in this process or another, is
refused with ``ArchiveLockedError`` until the first closes (or its process dies); readers
(``MemoryStore.load`` of the file) are not.  A forked process must open its own store.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Unpack

import numpy as np

from dsgc_ref.contract import (
    BindingTable,
    DsgcRuntimeError,
    DsgcTypeError,
    DsgcValueError,
    ParamOverrides,
    Params,
    Reason,
    ReferentEvictionError,
    is_integer_scalar,
    listing,
)

from .. import _validate
from .._deferred import deferred
from .._text_caches import forget_texts
from ..encoders import check_unicode, encode_function
from ..graph import DependencyGraph
from ..pins import ReferentIndex, closure
from ..stages import similarity_rows
from . import token_counts
from ._access import database_error
from ._growable import Growable as _Growable
from ._induced import INDUCED_KEY, InducedEdges, is_induced
from ._nesting import MAX_NESTING, NotCanonical, canonical_copy, check_nesting
from .archive import EMBEDDING_DTYPES, Archive, ArchivedBlock, Block, DeletedBlock
from .chat import CALL_PREFIX, RESULT_PREFIX, ChatFacts
from .compaction import Truncation, decide, table_block
from .digest_blocks import BlockDigests, digested_block, whole_block
from .explain import BindingTableBlock, BlockRoles, CompactionReport, build_report
from .token_counts import TokenCounter, Tokenizer

graph_kernels = deferred("dsgc_fast.kernels.graph_kernels")
referent_kernels = deferred("dsgc_fast.kernels.referents")

Encoder = Any  # a name, an object with ``encode(list[str]) -> (n, d)`` (``dsgc_fast.encoders``) or such a callable


#: the largest token cost of one block (the engine's cost total stays far from int64 overflow)
MAX_COST = 2**32 - 1
#: how many recently encoded texts a store remembers the rows of (``MemoryStore._encode``)
RECENT_TEXTS = 256
#: the store's default knobs: the agent policy (without working ages it ranks as dsgc)
AGENT_PARAMS = Params(policy="agent")


class _Forks:
    """How many forks led to this process (each forked child counts one more), so that a
    store can tell it runs in a process forked after it was opened without a system call."""

    count = 0

    @classmethod
    def forked(cls) -> None:
        cls.count += 1


os.register_at_fork(after_in_child=_Forks.forked)


def _serialized(method: Callable) -> Callable:
    """Run ``method`` holding the store's lock, on an open store, in the process that opened it."""

    @functools.wraps(method)
    def run(self: MemoryStore, *args: Any, **kwargs: Any) -> Any:
        self._enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._lock.release()

    return run


@dataclasses.dataclass(frozen=True)
class SearchHit:
    """An archived block found by ``MemoryStore.search``: its similarity to the query (the
    largest over the query's texts) and the compaction and reason that archived it."""

    block: Block
    similarity: float
    compaction: int
    reason: str


def default_encoder() -> Encoder:
    """The offline, deterministic lexical hashing encoder of the paper."""
    from ..encoders import LexicalEncoder

    return LexicalEncoder()


class MemoryStore:
    """Blocks of agent memory with budgeted, explained, lossless compaction.

    ``encoder`` embeds texts: a name (``"lexical"``, ``"sentence"``), an object with
    ``encode(list[str]) -> (n, d)`` or such a callable (default: the lexical hashing encoder);
    ``tokenizer`` counts a block's cost in model tokens: anything
    ``dsgc_fast.memory.token_counts.token_counter`` accepts (a name such as ``"o200k_base"``,
    ``"approx"`` or ``"whitespace"``, a tokenizer object, a callable ``str -> int``; default
    ``token_counts.default_tokenizer()``); a block added from a chat message costs what the
    chat API charges for the message, framing included (``token_counts.block_tokens``).
    ``archive`` is the SQLite database: a file path or ``file:`` URI (resumed if it exists;
    one store at a time per file, see the module docstring) or ``":memory:"``; the database
    records the encoder's and the tokenizer's names and refuses a different one when resumed.
    ``params`` (a ``Params``) are the scoring knobs ``compact`` uses unless told otherwise
    (default: ``AGENT_PARAMS``, the agent policy).  ``embedding_dtype`` is the width the
    store keeps embeddings in, in memory and in the archive: ``"float32"`` (the default for a
    new archive: half the bytes of float64, and an encoder's rows carry no more precision
    than that), ``"float16"`` or ``"float64"``; a resumed archive keeps the width it was
    written in (float64 for one written before widths were recorded) and refuses another.
    Scoring reads the stored values exactly (float16 and float32 widen to float64 without
    rounding), so the exact contract holds for the stored embeddings.
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        tokenizer: Tokenizer = None,
        archive: str | os.PathLike = ":memory:",
        *,
        params: Params | None = None,
        embedding_dtype: Any = None,
        token_counter: Any = None,
    ) -> None:
        _refuse_token_counter(token_counter)
        self.params = Params.of(AGENT_PARAMS if params is None else params)
        self._asked_width = _embedding_dtype(embedding_dtype)
        encoder, self._encode_texts = encode_function(encoder if encoder is not None else default_encoder())
        self._recent_rows: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._counter = token_counter_of(tokenizer)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._forks = _Forks.count
        self._closed = False
        self._archive = Archive(archive)
        self._encoder_name = getattr(encoder, "name", None)
        self._digests = BlockDigests()
        self._resume()

    @property
    def tokenizer(self) -> TokenCounter:
        """The ``TokenCounter`` that gives block costs (the ``tokenizer`` option, resolved)."""
        return self._counter

    def _resume(self) -> None:
        """Rebuild from the database and record the encoder; on any error close the database.

        A database SQLite refuses to write (a damaged header, say) is a ``ValueError``; a
        locked one an ``ArchiveLockedError``.
        """
        try:
            try:
                self._width = self._archive.settle_width(self._asked_width)
            except sqlite3.DatabaseError as exc:
                origin = self._archive.origin
                raise database_error(exc, origin, f"archive {origin!r} is corrupt") from None
            self._rebuild()
            try:
                self._record_encoder()
            except sqlite3.DatabaseError as exc:
                origin = self._archive.origin
                raise database_error(exc, origin, f"archive {origin!r} is corrupt") from None
        except BaseException:
            self._archive.close()
            raise

    def _enter(self) -> None:
        """Take the store's lock; raise unless the store is open and this process opened it."""
        if self._forks != _Forks.count and self._archive.path != ":memory:":
            raise DsgcRuntimeError(
                f"this MemoryStore was opened by process {self._pid} on {self._archive.path!r}; "
                "a forked process must open its own store"
            )
        self._lock.acquire()
        if self._closed:
            self._lock.release()
            raise DsgcValueError("the store is closed")

    def _record_encoder(self) -> None:
        """Remember the encoder's and tokenizer's names in the database; refuse different ones.

        An archive written before tokenizers were recorded has no tokenizer entry: it is
        recorded now, unchecked.
        """
        for key, name, what in (
            ("encoder", self._encoder_name, "embeddings come from the {stored!r} encoder, but encoder is {name!r}"),
            ("tokenizer", self._counter.name, "costs were counted with {stored!r}, but tokenizer is {name!r}"),
        ):
            if not isinstance(name, str):
                continue
            stored = self._archive.setting(key)
            if stored is None:
                self._archive.set_setting(key, name)
            elif stored != name:
                raise DsgcValueError("this store's " + what.format(stored=stored, name=name))

    # -- construction from the database -------------------------------------------------
    def _rebuild(self) -> None:
        """(Re)build the in-memory structures from every block in the database.

        Raises ``ValueError`` naming the database if a row is malformed or the rows do not
        form a store (seq gaps, duplicate ids, unknown dependencies, mixed dimensions).
        """
        self._ids: list[str] = []
        self._slot_of: dict[str, int] = {}
        self._uses: list[tuple[str, ...]] = []
        self._binds: list[dict[str, str]] = []
        self._newest_binder: dict[str, int] = {}
        self._binder_slots: dict[str, list[int]] = {}  # referent -> blocks binding it, oldest first (not deleted)
        self._referents = _Referents()
        self._chat = ChatFacts()
        self._active_blocks: dict[int, Block] = {}
        self._emb: _Growable | None = None
        self._cost = _Growable(np.int64)
        self._active = _Growable(np.bool_)
        self._deleted = _Growable(np.bool_)
        self._pinned = _Growable(np.bool_)
        self._slot_array: np.ndarray | None = None  # the active slots, ascending (None: read them off _active)
        self._appended: list[int] = []  # active slots appended since _slot_array was set
        self._prerequisites = _Growable(np.int64)  # with _edge_ptr: CSR of slot -> the slots it depends on
        self._edge_ptr = _Growable(np.int64)
        self._edge_ptr.append(0)
        self._induced = InducedEdges()
        try:
            for block, table in self._archive.all_blocks():
                _check_stored(block, len(self._ids), self._slot_of, self.dimension)
                if table != "deleted" and is_induced(block.meta):  # the reading of ``add``: its edges again
                    self._induce(block)
                self._append(block, block.embedding, active=table == "active", deleted=table == "deleted")
        except (ValueError, sqlite3.DatabaseError) as exc:
            raise DsgcValueError(f"archive {self._archive.origin!r} is corrupt: {exc}") from None

    def _embeddings(self) -> np.ndarray:
        """Every block's embedding row (the store holds at least one block when this is read)."""
        if self._emb is None:
            raise DsgcRuntimeError("the store holds no embeddings yet")
        return self._emb.view()

    def _append(
        self,
        block: Block,
        embedding: np.ndarray | None,
        *,
        active: bool,
        deleted: bool = False,
    ) -> None:
        if embedding is None:
            raise DsgcValueError(f"block {block.id!r} has no embedding")
        slot = len(self._ids)
        if self._emb is None:
            self._emb = _Growable(self._width, embedding.shape[0])
        self._emb.append(embedding)
        self._cost.append(block.cost)
        self._active.append(active)
        self._deleted.append(deleted)
        self._pinned.append(block.pinned)
        for prerequisite in block.depends_on:
            self._prerequisites.append(self._slot_of[prerequisite])
        self._edge_ptr.append(self._prerequisites.n)
        self._ids.append(block.id)
        self._slot_of[block.id] = slot
        self._uses.append(block.uses)
        self._binds.append(block.binds)
        if not deleted:
            self._newest_binder.update(dict.fromkeys(block.binds, slot))
            for referent in block.binds:
                self._binder_slots.setdefault(referent, []).append(slot)
        self._referents.append(block.uses, block.binds)
        self._chat.append(slot, block.meta)
        if active:
            self._active_blocks[slot] = block if block.embedding is None else dataclasses.replace(block, embedding=None)
            if self._slot_array is not None:
                self._appended.append(slot)

    def _active_slots(self) -> np.ndarray:
        """The active slots, ascending (read-only; kept up to date as blocks come and go)."""
        if self._slot_array is None:
            self._set_active_slots(np.flatnonzero(self._active.view()))
        elif self._appended:
            self._set_active_slots(np.concatenate([self._slot_array, np.array(self._appended, dtype=np.int64)]))
        assert self._slot_array is not None
        return self._slot_array

    def _set_active_slots(self, slots: np.ndarray | None) -> None:
        """Record the active slots (None: unknown, read them off ``_active`` when next asked)."""
        if slots is not None:
            slots.flags.writeable = False
        self._slot_array = slots
        self._appended.clear()

    # -- adding blocks ------------------------------------------------------------------
    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Group operations (``add``, ``recall``, ``compact``): all of them happen, or none.

        They share one database transaction; a group nested in another is a savepoint.  If
        a group raises, its writes roll back (a nested group's alone), the in-memory store
        is rebuilt from the database, and the error propagates.  The group holds the
        store's lock: other threads wait until it ends.  ``save`` inside a group is refused.
        """
        with self.held():
            try:
                with self._archive.transaction():
                    yield
            except BaseException:
                self._rebuild()
                raise

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the store's lock (on an open store, in the process that opened it) for the whole block.

        Public so that the chat layer (``messages``) groups its reads and writes without
        reaching into the store.  For a read-check-write made of several calls (``messages.add_records`` plans
        generated ids and tool-call pairing against the store's blocks, then adds the
        plans): no other thread changes the store in between.
        """
        self._enter()
        try:
            yield
        finally:
            self._lock.release()

    @_serialized
    def add(
        self,
        text: str,
        *,
        id: str | None = None,
        depends_on: Iterable[str] = (),
        binds: Mapping[str, str] | None = None,
        uses: Iterable[str] = (),
        embedding: Any = None,
        cost: int | None = None,
        pinned: bool = False,
        meta: Mapping[str, Any] | None = None,
        induce: bool = False,
    ) -> str:
        """Append a block; returns its id (default ``"b<seq>"``).

        ``depends_on``: ids of earlier blocks it depends on (edges dependent -> prerequisite);
        ``binds``: referent -> value this block binds; ``uses``: referents it uses;
        ``embedding``: (d,) vector (default: ``encoder([text])``); ``cost``: token cost
        (default: the tokenizer's count of ``text``); ``pinned``: a live root at every compaction;
        ``meta``: JSON-serializable data kept with the block (the key ``"induced"`` is
        reserved); ``induce``: also give the block the edges induction finds to earlier
        induced blocks (``dsgc_fast.memory._induced``; a chat message in ``meta["message"]`` is read
        as one), kept apart from ``depends_on``: ``induced_edges()``.

        If the block uses a referent whose live binder (the newest block binding it) is
        archived, that binder and its referent closure return to the active set in the same
        transaction: no active block uses a referent whose binder sits in the archive.
        """
        block, vector, missing = self._prepared(
            text, id=id, depends_on=depends_on, binds=binds, uses=uses, embedding=embedding, cost=cost, pinned=pinned,
            meta=meta, induce=induce,
        )  # fmt: skip
        restored = []
        try:
            if missing:
                with self._archive.transaction():
                    restored = self._archive.restore_blocks(missing)
                    self._archive.insert_active([(block, vector)])
            else:
                self._archive.insert_active([(block, vector)])  # one statement: atomic on its own
        except BaseException:
            if is_induced(block.meta):  # the inducer has read the block: rebuild it from the record
                self._rebuild()
            raise
        self._mark_active(restored)
        self._append(block, vector, active=True)
        return block.id

    @_serialized
    def _add_all(self, entries: Sequence[Mapping[str, Any]], error: Callable[[int, Exception], Exception]) -> list[str]:
        """``add(**entry)`` for each entry in order, all or none (an ``atomic`` group), the new rows in one statement.

        A ``TypeError``/``ValueError`` raised for entry k is replaced by ``error(k, exc)``.
        """
        rows = []
        with self.atomic():
            for k, entry in enumerate(entries):
                try:
                    block, vector, missing = self._prepared(**entry)
                except (TypeError, ValueError) as exc:
                    raise error(k, exc) from None
                if missing:
                    self._mark_active(self._archive.restore_blocks(missing))
                self._append(block, vector, active=True)
                rows.append((block, vector))
            self._archive.insert_active(rows)
        return [block.id for block, _ in rows]

    def _prepared(
        self, text: str, *, id: str | None = None, depends_on: Iterable[str] = (), binds: Mapping[str, str] | None = None,
        uses: Iterable[str] = (), embedding: Any = None, cost: int | None = None, pinned: bool = False,
        meta: Mapping[str, Any] | None = None, induce: bool = False, encoded: np.ndarray | None = None,
        own_meta: bool = False,
    ) -> tuple[Block, np.ndarray, list[int]]:  # fmt: skip
        """The block ``add`` appends next (every argument checked), its embedding, and the archived slots it brings back.

        ``encoded``: the row ``_encode`` gave for ``text`` (checked there), used instead of
        ``embedding``; a row already in the store's width (``_stored``) is kept as it is.
        ``own_meta``: ``meta`` is the store's to keep uncopied (``checked_block``).
        With ``induce`` the store's inducer reads the block last, once nothing can refuse it
        before it is written, and the block is marked as induced.
        """
        induce = _check_flag("induce", induce)
        block = checked_block(
            text, seq=len(self._ids), id=id, depends_on=depends_on, binds=binds, uses=uses, cost=cost, pinned=pinned,
            meta=meta, known=self._slot_of, counter=self._counter, induced=induce, own_meta=own_meta,
        )  # fmt: skip
        for prerequisite in block.depends_on:
            if self._deleted.view()[self._slot_of[prerequisite]]:
                raise DsgcValueError(f"dependency {prerequisite!r} was deleted")
        if encoded is None:
            encoded = self._encode([text], "encoder(text)")[0] if embedding is None else self._embedding(embedding)
        vector = encoded if encoded.dtype == self._width else self._stored(encoded)
        binders = [self._newest_binder[x] for x in block.uses if x in self._newest_binder]
        missing = self._archived_closure(binders)
        if induce:
            self._induce(block)
        return block, vector, missing

    def _induce(self, block: Block) -> None:
        """Run the store's inducer on ``block``, the newest (``dsgc_fast.memory._induced``)."""
        self._induced.observe(block.seq, block, {self._slot_of[d] for d in block.depends_on})

    @_serialized
    def induced_edges(self) -> list[tuple[str, str]]:
        """The induced edges in force, ``(dependent id, prerequisite id)``, oldest dependent first.

        Kept apart from the blocks' declared ``depends_on`` (``dsgc_fast.memory._induced``);
        compaction uses both.
        """
        return [(self._ids[j], self._ids[i]) for j, i in self._induced.pairs()]

    def _embedding(self, embedding: Any) -> np.ndarray:
        """A given ``embedding`` checked: a finite (d,) vector, d the store's."""
        vec = _validate.numeric_array("embedding", embedding).astype(np.float64)
        if vec.ndim != 1:
            raise DsgcValueError(f"embedding must be 1-D (d,), got shape {vec.shape}")
        return self._check_vectors(vec[None, :], "embedding")[0]

    def _stored(self, vector: np.ndarray) -> np.ndarray:
        return in_width(vector, self._width)

    @property
    def embedding_dtype(self) -> np.dtype:
        """The width the store keeps embeddings in, in memory and in the archive."""
        return self._width

    def _encode(self, texts: list[str], name: str) -> np.ndarray:
        """The encoder's rows of ``texts`` (checked), in one encoder call for the texts not encoded recently.

        The store remembers the rows of the ``RECENT_TEXTS`` texts it encoded last, so a batch
        encoded up front (``messages.add_records``) and a query that repeats a block's text
        (``messages.compact_messages``: the newest user message) cost no second call.
        """
        if not texts:
            return encoded(self._encode_texts, texts, name, self.dimension)
        recent = self._recent_rows
        new = [t for t in dict.fromkeys(texts) if t not in recent]
        if new:
            for text, row in zip(new, encoded(self._encode_texts, new, name, self.dimension)):
                row = row.copy()  # a row of its own: a view would keep the whole batch's array alive
                row.flags.writeable = False
                recent[text] = row
        for text in texts:
            recent.move_to_end(text)
        out = np.array([recent[t] for t in texts], dtype=np.float64).reshape(len(texts), -1)
        while len(recent) > RECENT_TEXTS:
            recent.popitem(last=False)
        return out

    def _check_vectors(self, vectors: np.ndarray, name: str) -> np.ndarray:
        return check_vectors(vectors, name, self.dimension)

    # -- reading ------------------------------------------------------------------------
    @_serialized
    def __len__(self) -> int:
        """Number of active blocks."""
        return len(self._active_blocks)

    @_serialized
    def __contains__(self, block_id: object) -> bool:
        """True if ``block_id`` is an active block."""
        slot = self._slot_of.get(block_id) if isinstance(block_id, str) else None
        return slot is not None and slot in self._active_blocks

    @property
    @_serialized
    def total(self) -> int:
        """Number of blocks ever added (active plus archived)."""
        return len(self._ids)

    @property
    @_serialized
    def dimension(self) -> int | None:
        """Embedding dimension d (None before the first block)."""
        return None if self._emb is None else int(self._emb.view().shape[1])

    @property
    @_serialized
    def used(self) -> int:
        """Total cost of the active blocks."""
        return int(self._cost.view()[self._active.view()].sum())

    @property
    def archive_path(self) -> str:
        return self._archive.path

    @_serialized
    def ids(self) -> list[str]:
        """Active block ids, oldest first."""
        return [self._ids[s] for s in sorted(self._active_blocks)]

    @_serialized
    def archived_ids(self) -> list[str]:
        """Archived block ids, oldest first."""
        return [self._ids[s] for s in self._archived_slots()]

    def _archived_slots(self) -> np.ndarray:
        return np.flatnonzero(~(self._active.view() | self._deleted.view()))

    @_serialized
    def blocks(self, *, embeddings: bool = True) -> list[Block]:
        """Active blocks, oldest first (``embeddings=False`` leaves ``Block.embedding`` None)."""
        slots = sorted(self._active_blocks)
        if not embeddings:
            return [self._active_blocks[s].detached() for s in slots]
        return [self._with_embedding(s) for s in slots]

    @_serialized
    def _shared_blocks(self) -> list[Block]:
        """The active blocks, oldest first, as the store holds them (no copies, no embeddings).

        For this package's readers only, which must not change them (``blocks`` gives copies).
        """
        return list(map(self._active_blocks.__getitem__, self._active_slots().tolist()))

    @_serialized
    def _older_blocks(self, end: int, count: int) -> tuple[list[Block], int]:
        """Up to ``count`` of the newest blocks older than seq ``end`` that are not deleted, newest first.

        Returns them (active ones as the store holds them) and the seq to continue from.  An
        archived block is read from the archive only when it comes first, alone, so a walk
        that stops before it never reads it.  The cost grows with the blocks skipped and
        returned, not with the store.
        """
        out: list[Block] = []
        while end > 0 and len(out) < count and end - 1 in self._active_blocks:  # the newest, mostly active
            end -= 1
            out.append(self._active_blocks[end])
        if len(out) == count or end == 0:
            return out, end
        deleted = self._deleted.view()
        while end > 0:
            start = max(0, end - 4 * count)
            for slot in (start + np.flatnonzero(~deleted[start:end]))[::-1].tolist():
                block = self._active_blocks.get(slot)
                if block is None:
                    if out:
                        return out, slot + 1
                    return [self._archived_block(slot)], slot
                out.append(block)
                if len(out) == count:
                    return out, slot
            end = start
        return out, 0

    def _archived_block(self, slot: int) -> Block:
        found = self._archive.archived([slot])
        if not found:
            raise DsgcValueError(
                f"archive {self._archive.origin!r} is corrupt: archived block {self._ids[slot]!r} is missing"
            )
        return found[0].block

    @_serialized
    def has(self, block_id: str) -> bool:
        """True if ``block_id`` names a block, active, archived or deleted (ids are never reused)."""
        return block_id in self._slot_of

    @_serialized
    def get(self, block_id: str) -> Block:
        """An active or archived block by id (archived ones are read from the archive).

        Raises ``KeyError`` for an unknown or a deleted id (``deleted()`` reads those).
        """
        slot = self._slot(block_id, deleted_ok=False)
        if slot in self._active_blocks:
            return self._with_embedding(slot)
        return self._archived_block(slot)

    @_serialized
    def archived(self, ids: Iterable[str] | None = None) -> list[ArchivedBlock]:
        """Archived blocks (all, or these ids) with the compaction and reason that evicted them."""
        slots = self._archived_slots() if ids is None else [self._slot(i) for i in _id_list("ids", ids)]
        return self._archive.archived(slots)

    @_serialized
    def deleted(self, ids: Iterable[str] | None = None) -> list[DeletedBlock]:
        """Deleted blocks (all, or these ids) with the deletion that removed them, oldest first."""
        slots = None if ids is None else [self._slot(i) for i in _id_list("ids", ids)]
        return self._archive.deleted(slots)

    @_serialized
    def binder_of(self, referent: str) -> str | None:
        """The id of the newest block (active or archived) binding ``referent``, if any."""
        slot = self._newest_binder.get(referent)
        return None if slot is None else self._ids[slot]

    def _slot(self, block_id: str, *, deleted_ok: bool = True) -> int:
        if block_id not in self._slot_of:
            raise KeyError(f"unknown block id {block_id!r}")
        slot = self._slot_of[block_id]
        if not deleted_ok and self._deleted.view()[slot]:
            raise KeyError(f"block {block_id!r} was deleted")
        return slot

    def _state(self, slot: int) -> str:
        """``"active"``, ``"archived"`` or ``"deleted"``."""
        if slot in self._active_blocks:
            return "active"
        return "deleted" if self._deleted.view()[slot] else "archived"

    def _with_embedding(self, slot: int) -> Block:
        return self._active_blocks[slot].detached(self._embeddings()[slot].copy())

    # -- compaction ---------------------------------------------------------------------
    @_serialized
    def compact(
        self,
        query: str | Sequence[str] | Any,
        budget: int,
        *,
        params: Params | None = None,
        live: Iterable[str] = (),
        query_weights: Any = None,
        ages: Mapping[str, int] | None = None,
        mode: str = "exact",
        on_over_budget: str = "raise",
        digests: bool = True,
        **overrides: Unpack[ParamOverrides],
    ) -> CompactionReport:
        """Keep what fits ``budget`` for ``query``; archive the rest; explain every decision.

        Parameters
        ----------
        query : str, list of str, or array_like
            A text, several texts (a query distribution weighted by ``query_weights``) or an
            embedding (d,) / (m, d).
        budget : int
            Token budget (a non-negative integer).
        params, **overrides
            The scoring knobs (default: the store's ``params``) with keyword overrides, as in
            ``dsgc_fast.retain``.
        live : iterable of str
            Ids of further live roots (the pinned blocks are live roots always).
        ages : mapping of str to int, optional
            Working ages of active blocks (id -> u >= 1; others 0), read by the agent
            policy only (``dsgc_fast.memory.messages.working_ages`` computes them for chat sessions).
        mode : {"exact", "fast"}
            As in ``dsgc_fast.retain``.
        on_over_budget : {"raise", "roots_only", "truncate"}
            What happens when even the live roots and the bindings they need exceed the
            budget (``dsgc_fast.memory.compaction``): raise ``ReferentEvictionError`` (and change
            nothing), keep the roots alone, or cut the largest tool results among the roots
            until they fit.  A cut block keeps its cut text, message and cost; its original
            content and cost stay in ``meta["truncated"]``.
        digests : bool
            With the agent policy, a tool result may stay active as its digest (its values
            verbatim, the bulk dropped; ``compaction``'s digest rule): its text, message and
            cost become the digest's, its whole stays in ``meta["digested"]`` and ``recall``
            brings it back.  A digest is never digested again.  Default True (False: whole
            blocks only).  ``to_messages`` sends the digest; a mirror that sends its own copy
            of a kept message must send ``meta["message"]`` for a block with ``meta["digested"]``.

        Returns
        -------
        CompactionReport
            Kept and evicted ids and the decision behind each; ``over_budget`` and
            ``truncated`` say what ``on_over_budget`` did.

        Notes
        -----
        The live roots and their referent closure are kept first, the rest is ranked by the
        policy; if the pinned set needs a binding table, the table becomes a new active block
        binding the tabled referents.  Evicted blocks are written to the archive in one
        transaction before they leave the active set.  A store without roots and without
        referent links takes the engine's unpinned path.
        """
        p = Params.of(params if params is not None else self.params, **overrides)
        query_emb, query_text = self._query(query)
        slots = self._active_slots()
        roots = self._live_roots(slots, live)
        working = self._local_ages(slots, ages) if ages is not None and p.policy == "agent" else None
        return self._compact(
            p, query_emb, query_text, budget, slots, roots, working, query_weights, mode, on_over_budget, digests
        )

    @_serialized
    def _compact_turn(
        self, budget: int, *, query: Any, live: Iterable[str], params: Params | None = None, query_weights: Any = None,
        mode: str = "exact", on_over_budget: str = "raise", digests: bool = True, **overrides: Unpack[ParamOverrides],
    ) -> CompactionReport | None:  # fmt: skip
        """``messages.compact_messages`` on the store's chat facts (None, changing nothing, when they are ambiguous).

        The live roots are the pinned blocks, the newest user turn and ``live``, each with
        its whole tool-call unit; the tool blocks before the newest user message get their
        working ages; the query defaults to that user message's text (``ChatUnits`` states
        the rules).
        """
        if self._chat.ambiguous:
            return None
        slots = self._active_slots()
        ages, turn = self._chat.ages(slots, self._active.view())
        if query is None:
            if turn is None:
                raise DsgcValueError("query is required: the store has no user message to use as the query")
            query = self._active_blocks[int(slots[turn])].text
        p = Params.of(params if params is not None else self.params, **overrides)
        query_emb, query_text = self._query(query)
        roots = self._turn_roots(slots, turn, live)
        working = ages if p.policy == "agent" else None
        return self._compact(
            p, query_emb, query_text, budget, slots, roots, working, query_weights, mode, on_over_budget, digests
        )

    def _turn_roots(self, slots: np.ndarray, turn: int | None, live: Iterable[str]) -> np.ndarray:
        """Local indices of the pinned blocks, the turn from position ``turn`` and ``live``, with their tool-call units."""
        named = _id_list("live", live)
        elsewhere = sorted(i for i in named if self._slot_of.get(i) not in self._active_blocks)
        if elsewhere:
            self._live_roots(slots, elsewhere)  # raises, naming the first as ``compact`` would
        chosen = set(slots[self._pinned.view()[slots]].tolist())
        chosen.update(slots[turn:].tolist() if turn is not None else (), map(self._slot_of.__getitem__, named))
        frontier = list(chosen)
        while frontier:
            for referent in self._uses[frontier.pop()]:
                if referent.startswith((CALL_PREFIX, RESULT_PREFIX)):
                    binder = self._newest_active_binder(referent)
                    if binder is not None and binder not in chosen:
                        chosen.add(binder)
                        frontier.append(binder)
        return np.searchsorted(slots, np.array(sorted(chosen), dtype=np.int64))

    def _newest_active_binder(self, referent: str) -> int | None:
        for slot in reversed(self._binder_slots.get(referent, ())):
            if slot in self._active_blocks:
                return slot
        return None

    def _compact(
        self, p: Params, query_emb: np.ndarray, query_text: str, budget: int, slots: np.ndarray, roots: np.ndarray,
        working: np.ndarray | None, query_weights: Any, mode: str, on_over_budget: str, digests: bool,
    ) -> CompactionReport:  # fmt: skip
        """``compact`` of the active blocks ``slots`` with the live ``roots`` and working ages by position.

        Its cost beyond ``retain`` is O(active blocks + their links), whatever the archive holds.
        """
        graph = self._active_graph(slots)
        index = self._referents.active_index(slots, self._binds)
        embs = self._emb.view()[slots] if self._emb is not None else np.empty((0, query_emb.shape[-1]))
        active = dict(self._active_blocks)  # this compaction's own view: later adds and cuts replace, never edit
        if not isinstance(digests, bool):
            raise DsgcTypeError(f"digests must be a bool, got {type(digests).__name__}")
        digest_of = self._digests.of(slots.tolist(), active, self._counter) if digests and p.policy == "agent" else None
        try:
            outcome = decide(
                query_emb, embs, self._cost.view()[slots], budget, params=p, graph=graph, index=index, roots=roots,
                counter=self._counter, ages=working, query_weights=query_weights, mode=mode, on_over_budget=on_over_budget,
                tool_results=lambda found: tool_messages([active[s] for s in slots.tolist()], found), digests=digest_of,
            )  # fmt: skip
        except ReferentEvictionError as exc:
            pinned_ids = self._names_of(slots[np.flatnonzero(closure(index, roots))])
            root_ids = self._names_of(slots[roots])
            raise ReferentEvictionError(
                f"{exc}; pinned block ids {listing(pinned_ids)} (live roots {listing(root_ids)})",
                pinned=exc.pinned, roots=exc.roots, pinned_cost=exc.pinned_cost, root_cost=exc.root_cost,
                table_cost=exc.table_cost, budget=exc.budget, pinned_ids=pinned_ids, root_ids=root_ids,
            ) from None  # fmt: skip
        result = outcome.result
        ids = self._names_of(slots)
        table = self._binding_table_block(result.binding_table, ids)
        cut = {int(slots[i]): _cut_block(active[int(slots[i])], t) for i, t in outcome.truncated.items()}
        cut.update((int(slots[i]), digested_block(active[int(slots[i])], d)) for i, d in outcome.digested.items())
        report = build_report(
            ids,
            result,
            costs=outcome.costs,
            graph=graph,
            referents=index,
            roots=roots,
            lambda_pi=p.effective_lambda,
            query=query_text,
            texts=_Texts({**active, **cut}, self._slot_of),
            table_block=table,
            over_budget=outcome.over_budget,
            truncated={ids[i]: t for i, t in outcome.truncated.items()},
            roles=BlockRoles(ids, lambda block_id: active[self._slot_of[block_id]]),
            digested={ids[i]: d.detached() for i, d in outcome.digested.items()},
        )
        gone = result.evicted
        evicted = dict(zip(slots[gone].tolist(), map(_LABELS.__getitem__, result.reasons[gone].tolist())))
        with self._archive.transaction():
            number = self._archive.log_compaction(
                query_text, result.budget, result.policy, len(report.kept), len(report.evicted), int(result.used)
            )
            for block in cut.values():
                self._archive.update_active(block)
            self._archive.archive_blocks(evicted, number)
            if table is not None:
                self._archive.insert_active([(table.block, None)])
        report.compaction = number
        for slot, block in cut.items():
            self._active_blocks[slot] = block
            self._cost.view()[slot] = block.cost
        self._active.view()[slots[gone]] = False
        self._drop_active(evicted)
        self._set_active_slots(slots[result.mask])
        if table is not None:
            self._append(table.block, table.block.embedding, active=True)
        return report

    def _drop_active(self, slots: Iterable[int]) -> None:
        """Remove these (active) slots from ``_active_blocks``; a dict left mostly empty is rebuilt.

        A dict keeps its table after deletions (CPython resizes it only when insertions fill
        it), and copying or scanning it reads every slot the table ever held: after one
        compaction of a 100,000-block history to 150, each turn's copy of the active blocks
        took 73 us instead of 2.
        """
        removed = 0
        for slot in slots:
            del self._active_blocks[slot]
            removed += 1
        if removed > len(self._active_blocks):
            self._active_blocks = dict(self._active_blocks)

    def _names_of(self, slots: np.ndarray) -> list[str]:
        """The ids of ``slots``."""
        return list(map(self._ids.__getitem__, slots.tolist()))

    def _local_ages(self, slots: np.ndarray, ages: Mapping[str, int]) -> np.ndarray:
        """Working ages by active position (blocks not named get 0)."""
        if not isinstance(ages, Mapping):
            raise DsgcTypeError(f"ages must be a mapping block id -> working age, got {type(ages).__name__}")
        out = np.zeros(slots.shape[0], dtype=np.int64)
        for block_id, age in ages.items():
            slot = self._slot(block_id)
            if slot not in self._active_blocks:
                raise DsgcValueError(f"ages names block {block_id!r}, which is {self._state(slot)}")
            if not is_integer_scalar(age) or not 0 <= int(age) <= slots.shape[0]:
                raise DsgcValueError(f"ages[{block_id!r}] must be an integer in [0, {slots.shape[0]}], got {age!r}")
            out[int(np.searchsorted(slots, slot))] = int(age)
        return out

    def _active_graph(self, slots: np.ndarray) -> DependencyGraph:
        """The prerequisite edges (declared and induced) among the active blocks ``slots``, in local indices
        (O(active edges))."""
        ptr, prerequisites, in_force = self._induced.csr(len(self._ids))
        csr = graph_kernels.active_csr(
            slots, self._active.view(), self._edge_ptr.view(), self._prerequisites.view(), ptr, prerequisites, in_force
        )
        return DependencyGraph.built(int(slots.shape[0]), *csr)

    def _query(self, query: Any) -> tuple[np.ndarray, str]:
        return query_embedding(query, self._encode)

    def _live_roots(self, slots: np.ndarray, live: Iterable[str]) -> np.ndarray:
        """The local indices of the pinned blocks and of the ids in ``live``, ascending."""
        chosen = set(np.flatnonzero(self._pinned.view()[slots]).tolist())
        for block_id in _id_list("live", live):
            slot = self._slot(block_id)
            if slot not in self._active_blocks:
                hint = "; recall it first" if self._state(slot) == "archived" else ""
                raise DsgcValueError(f"live root {block_id!r} is {self._state(slot)}{hint}")
            chosen.add(int(np.searchsorted(slots, slot)))
        return np.array(sorted(chosen), dtype=np.int64)

    def _binding_table_block(self, table: BindingTable | None, ids: list[str]) -> BindingTableBlock | None:
        """The escalation's binding table as a new active block (``compaction.table_block``), embedded."""
        made = table_block(table, ids, len(self._ids), self._slot_of, self._counter)
        if made is None:
            return None
        embedding = self._stored(self._encode([made.block.text], "encoder(binding table)")[0])
        return BindingTableBlock(dataclasses.replace(made.block, embedding=embedding), made.entries)

    # -- recall -------------------------------------------------------------------------
    @_serialized
    def recall(self, ids: str | Iterable[str]) -> list[Block]:
        """Bring archived blocks back to the active set; return them with their text.

        The referent closure of the requested blocks comes back with them (a recalled
        block never arrives with a referent whose binder stays archived), so a tool
        result and its call return together.  A block kept as its digest (``compact``'s
        ``digests``), active or archived, comes back whole.  Other ids that are already
        active are ignored.  Returns the blocks brought back, oldest first.
        """
        slots = [self._slot(i, deleted_ok=False) for i in _id_list("ids", ids)]
        archived = self._archived_closure(slots)
        restored = self._archive.restore_blocks(archived) if archived else []
        self._mark_active(restored)
        back = {block.seq: block for block in restored}
        for slot in sorted({*slots, *back}):
            whole = whole_block(self._active_blocks[slot]) if slot in self._active_blocks else None
            if whole is not None:
                self._archive.update_active(whole)
                self._active_blocks[slot] = whole
                self._cost.view()[slot] = whole.cost
                back[slot] = whole.detached(back[slot].embedding if slot in back else self._embeddings()[slot].copy())
        return [back[slot] for slot in sorted(back)]

    def _archived_closure(self, slots: list[int], binders: Mapping[str, int | None] | None = None) -> list[int]:
        """The archived blocks among ``slots`` and the archived part of their referent closure.

        The traversal (use -> newest binder over all blocks but deleted ones; ``binders``
        overrides some referents' binder, None for unbound) stops at active blocks: every
        operation keeps the active set closed, so nothing behind an active block is archived.
        Its cost is the size of what comes back, not the size of the store.
        """
        newest = self._newest_binder if binders is None else {**self._newest_binder, **binders}
        seen: set[int] = set()
        frontier = [s for s in slots if s not in self._active_blocks]
        while frontier:
            u = frontier.pop()
            if u in seen:
                continue
            seen.add(u)
            for x in self._uses[u]:
                b = newest.get(x)
                if b is not None and b not in seen and b not in self._active_blocks:
                    frontier.append(b)
        return sorted(seen)

    def _mark_active(self, restored: list[Block]) -> None:
        """Record restored blocks as active (keeping copies: the caller gets ``restored``)."""
        for block in restored:
            self._active.view()[block.seq] = True
            self._active_blocks[block.seq] = block.detached()
        if restored:
            self._set_active_slots(None)

    # -- search -------------------------------------------------------------------------
    @_serialized
    def search(self, query: str | Sequence[str] | Any, k: int, *, recall: bool = False) -> list[SearchHit]:
        """The ``k`` archived blocks most similar to ``query``, best first.

        Parameters
        ----------
        query : str, list of str, or array_like
            A text, several texts or an embedding (d,) / (m, d); with several, a block's
            similarity is its largest ``<q_k, e_i>``.
        k : int
            How many hits at most (a non-negative integer).
        recall : bool
            Also bring the hits back to the active set (with their referent closure, as
            ``recall``).

        Returns
        -------
        list of SearchHit
            Descending similarity; ties keep the older block first.
        """
        if not is_integer_scalar(k) or int(k) < 0:
            raise DsgcValueError(f"k must be a non-negative integer, got {k!r}")
        _check_flag("recall", recall)
        queries = np.atleast_2d(self._query(query)[0])
        if queries.ndim != 2 or queries.shape[0] == 0:
            raise DsgcValueError(
                f"query must be a text, a list of texts or a (d,)/(m, d) embedding, got shape {queries.shape}"
            )
        if self.dimension is not None and queries.shape[1] != self.dimension:
            raise DsgcValueError(f"query has d = {queries.shape[1]}, but the store's blocks have d = {self.dimension}")
        if not np.isfinite(queries).all():
            raise DsgcValueError("query must be finite")
        slots = self._archived_slots()
        if int(k) == 0 or slots.size == 0:
            return []
        similarity = similarity_rows(np.ascontiguousarray(queries), np.ascontiguousarray(self._embeddings()[slots]))
        best = similarity.max(axis=0)
        top = np.argsort(-best, kind="stable")[: int(k)]
        found = {a.block.seq: a for a in self._archive.archived(slots[top])}
        hits = [
            SearchHit(found[s].block, float(best[j]), found[s].compaction, found[s].reason)
            for j, s in zip(top, slots[top])
        ]
        if recall:
            self.recall([hit.block.id for hit in hits])
        return hits

    # -- deleting -----------------------------------------------------------------------
    @_serialized
    def delete(self, ids: str | Iterable[str]) -> list[str]:
        """Delete blocks, active or archived (see the module docstring); returns their ids, oldest first.

        Raises ``KeyError`` for an unknown id and ``ValueError`` for one already deleted
        (and deletes nothing).
        """
        slots = sorted({self._slot(i) for i in _id_list("ids", ids)})
        gone = [self._ids[s] for s in slots if self._deleted.view()[s]]
        if gone:
            raise DsgcValueError(f"block(s) {gone} are already deleted")
        return self._delete(slots, "delete")

    @_serialized
    def pop(self) -> Block:
        """Delete the newest block that is not deleted yet and return it (with its text).

        Raises ``IndexError`` when no block is left.
        """
        left = np.flatnonzero(~self._deleted.view())
        if left.size == 0:
            raise IndexError("pop from a store with no blocks left")
        block = self.get(self._ids[int(left[-1])])
        self._delete([int(left[-1])], "pop")
        return block

    @_serialized
    def truncate_after(self, block_id: str) -> list[str]:
        """Delete every block newer than ``block_id`` (active or archived); returns their ids, oldest first."""
        slot = self._slot(block_id, deleted_ok=False)
        newer = np.flatnonzero(~self._deleted.view())
        return self._delete([int(s) for s in newer[newer > slot]], "truncate_after")

    @_serialized
    def clear(self) -> list[str]:
        """Delete every block (the store starts over; the record keeps them); returns their ids."""
        return self._delete([int(s) for s in np.flatnonzero(~self._deleted.view())], "clear")

    def _delete(self, slots: list[int], operation: str) -> list[str]:
        """Move ``slots`` (not deleted, ascending) to the deleted table, keeping the active set closed.

        For every referent they bind, the newest remaining binder becomes live; one that is
        archived while an active block uses the referent comes back (with its closure) in
        the same transaction.
        """
        if not slots:
            return []
        gone = set(slots)
        binders: dict[str, int | None] = {}
        for slot in slots:
            for referent in self._binds[slot]:
                if referent not in binders:
                    left = [b for b in self._binder_slots.get(referent, ()) if b not in gone]
                    binders[referent] = left[-1] if left else None
        used = {x for s, block in self._active_blocks.items() if s not in gone for x in block.uses}
        wanted = [b for x, b in binders.items() if b is not None and x in used]
        missing = self._archived_closure(wanted, binders)
        with self._archive.transaction():
            restored = self._archive.restore_blocks(missing) if missing else []
            self._archive.delete_blocks(slots, operation)
        self._mark_active(restored)
        for slot in slots:
            self._active.view()[slot] = False
            self._deleted.view()[slot] = True
            self._binds[slot], self._uses[slot] = {}, ()  # erased, as in the database's tombstone
        self._drop_active([s for s in slots if s in self._active_blocks])
        self._set_active_slots(None)
        for referent, binder in binders.items():
            self._binder_slots[referent] = [b for b in self._binder_slots[referent] if b not in gone]
            if binder is None:
                del self._newest_binder[referent], self._binder_slots[referent]
            else:
                self._newest_binder[referent] = binder
        self._recent_rows.clear()  # a memo keyed by text: no deleted text stays in it
        forget_texts()  # nor in the process-wide memos of words and values (``_text_caches``)
        if self._induced.blocks:  # induction forgets deleted blocks: read the others again
            self._rebuild()
        return [self._ids[s] for s in slots]

    # -- whole store --------------------------------------------------------------------
    @_serialized
    def save(self, path: str | os.PathLike) -> None:
        """Write the whole store (active blocks, archive, compaction log) to a SQLite file.

        The file is a consistent snapshot in rollback-journal mode (it loads from read-only
        storage).  Refused: inside ``atomic()`` (``RuntimeError``), onto the store's own
        archive under any name (``ValueError``), onto another open store's archive
        (``ArchiveLockedError``).
        """
        self._archive.backup_to(path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        encoder: Encoder | None = None,
        tokenizer: Tokenizer = None,
        archive: str | os.PathLike = ":memory:",
        token_counter: Any = None,
    ) -> MemoryStore:
        """A store restored from a file written by ``save``, working on a copy in ``archive``.

        Pass the encoder and tokenizer the saved store was built with (a different named one
        is refused).  The file is
        only read: it may sit on read-only storage, or be the live archive of another store
        (the copy is its last commit).  It must hold exactly a store's schema objects: a
        file with a trigger, view, index or table the store does not create is refused
        (``ValueError``), so loading an untrusted file yields data, never code.
        """
        _refuse_token_counter(token_counter)
        store = cls(encoder=encoder, tokenizer=tokenizer, archive=archive)
        if store.total:
            store.close()
            raise DsgcValueError(f"archive {store.archive_path!r} already holds blocks; load into an empty one")
        try:
            store._archive.restore_from(path)
        except BaseException:
            store.close()
            raise
        store._resume()
        return store

    def close(self) -> None:
        """Close the database and release the archive file (idempotent; the store cannot be used afterwards)."""
        with self._lock:
            self._closed = True
            self._archive.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def checked_block(
    text: str,
    *,
    seq: int,
    id: str | None,
    depends_on: Iterable[str],
    binds: Mapping[str, str] | None,
    uses: Iterable[str],
    cost: Any,
    pinned: Any,
    meta: Mapping[str, Any] | None,
    known: Container[str],
    counter: TokenCounter,
    induced: bool = False,
    own_meta: bool = False,
) -> Block:
    """The block ``MemoryStore.add`` would append as number ``seq`` (no embedding), every argument checked.

    ``known`` holds the ids of the blocks before it; a missing ``cost`` is ``counter(text)``;
    ``induced`` marks the block as added with ``induce=True`` (``meta[INDUCED_KEY]``).
    ``own_meta``: ``meta`` is the caller's own fresh copy, shared with nobody, that passes
    ``_check_meta`` as it is (a dict of canonical JSON, ``_nesting.canonical_copy``, nested
    at most ``MAX_NESTING`` levels, without ``INDUCED_KEY``): the block keeps it uncopied.
    """
    if not isinstance(text, str):
        raise DsgcTypeError(f"text must be a str, got {type(text).__name__}")
    check_unicode("text", text)
    block_id = f"b{seq}" if id is None else id
    if not isinstance(block_id, str) or not block_id:
        raise DsgcTypeError(f"id must be a non-empty str, got {block_id!r}")
    check_unicode("id", block_id)
    if block_id in known:
        raise DsgcValueError(f"duplicate block id {block_id!r}")
    return Block(
        id=block_id,
        text=text,
        cost=_check_cost(cost, text, counter),
        seq=seq,
        depends_on=_check_depends_on(block_id, depends_on, known),
        binds=_check_binds(binds),
        uses=_check_uses(uses),
        pinned=_check_flag("pinned", pinned),
        meta=_block_meta(meta, own_meta, induced),
    )


def _block_meta(meta: Any, own: bool, induced: bool) -> dict[str, Any]:
    """The meta a block keeps: ``meta`` checked and copied (kept as it is if ``own``, see ``checked_block``)."""
    checked = meta if own else _check_meta(meta)
    return {**checked, INDUCED_KEY: True} if induced else checked


def _check_cost(cost: Any, text: str, counter: TokenCounter) -> int:
    name = "cost"
    if cost is None:
        cost, name = counter.count(text), f"tokenizer {counter.name}(text)"
    # a plain int (the common case) skips the numeric-tower checks of ``is_integer_scalar``
    if (type(cost) is not int and not is_integer_scalar(cost)) or not 0 <= int(cost) <= MAX_COST:
        raise DsgcValueError(f"{name} must be a non-negative integer <= {MAX_COST}, got {cost!r}")
    return int(cost)


def _check_depends_on(block_id: str, depends_on: Iterable[str], known: Container[str]) -> tuple[str, ...]:
    out = _names("depends_on", depends_on, "block ids")
    for prerequisite in out:
        if prerequisite == block_id:
            raise DsgcValueError(f"block {block_id!r} cannot depend on itself")
        if prerequisite not in known:
            raise DsgcValueError(f"unknown dependency id {prerequisite!r} (depends_on must name earlier blocks)")
    return out


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


def tool_messages(blocks: Sequence[Block], found: np.ndarray) -> dict[int, tuple[dict[str, Any], str]]:
    """``(message, text)`` of the tool-result blocks among ``blocks[i]`` for i in ``found``."""
    out = {}
    for i in found.tolist():
        block = blocks[i]
        if block.meta.get("role") == "tool":
            out[i] = (block.meta["message"], block.text)
    return out


def _cut_block(block: Block, cut: Truncation) -> Block:
    """The block with its cut text, message and cost; the original content and cost in ``meta["truncated"]``."""
    meta = block.detached().meta
    meta.setdefault("truncated", {"content": block.meta["message"].get("content"), "cost": block.cost})
    meta["message"] = json.loads(json.dumps(cut.message))
    return dataclasses.replace(block, text=cut.text, cost=cut.cost, meta=meta)


def token_counter_of(tokenizer: Tokenizer) -> TokenCounter:
    """``token_counts.token_counter(tokenizer)``, its errors naming the ``tokenizer`` argument."""
    try:
        return token_counts.token_counter(tokenizer)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"tokenizer: {exc}") from None


def _refuse_token_counter(token_counter: Any) -> None:
    if token_counter is not None:
        raise DsgcTypeError(
            "token_counter= was replaced by tokenizer=, which takes the same callables (str -> int), "
            "tokenizer names such as 'o200k_base' or 'whitespace' (the old default) and tokenizer objects; "
            "chat messages then cost their framing too"
        )


def _id_list(name: str, ids: str | Iterable[str]) -> list[str]:
    """One block id, or an iterable of them."""
    return [ids] if isinstance(ids, str) else list(_names(name, ids, "block ids"))


def _names(name: str, values: Any, what: str) -> tuple[str, ...]:
    """``values`` as distinct non-empty strs in first-seen order; ``TypeError`` naming ``name`` otherwise."""
    if isinstance(values, str):
        raise DsgcTypeError(f"{name} must be an iterable of {what}, not a single str")
    if type(values) is not list and type(values) is not tuple and not isinstance(values, Iterable):
        raise DsgcTypeError(f"{name} must be an iterable of {what}, got {type(values).__name__}")
    out = tuple(values)
    if not all(isinstance(v, str) and v for v in out):
        raise DsgcTypeError(f"{name} must hold non-empty str {what}, got {list(out)!r}")
    return tuple(dict.fromkeys(out))


def _check_stored(block: Block, seq: int, slot_of: Mapping[str, int], dimension: int | None) -> None:
    """A database row must continue the store: next seq, new id, known dependencies, same d."""
    if block.seq != seq:
        raise DsgcValueError(f"block seq {block.seq} out of order (expected {seq})")
    if block.id in slot_of:
        raise DsgcValueError(f"block seq {block.seq}: duplicate id {block.id!r}")
    unknown = [p for p in block.depends_on if p not in slot_of]
    if unknown:
        raise DsgcValueError(f"block seq {block.seq}: unknown dependency ids {unknown}")
    if dimension is not None and block.embedding is not None and block.embedding.shape[0] != dimension:
        raise DsgcValueError(
            f"block seq {block.seq}: embedding has d = {block.embedding.shape[0]}, expected {dimension}"
        )
    if block.cost > MAX_COST:
        raise DsgcValueError(f"block seq {block.seq}: cost {block.cost} exceeds {MAX_COST}")


def _check_binds(binds: Mapping[str, str] | None) -> dict[str, str]:
    if binds is None:
        return {}
    if not isinstance(binds, Mapping):
        raise DsgcTypeError(f"binds must be a mapping referent -> value, got {type(binds).__name__}")
    for referent, value in binds.items():
        if not isinstance(referent, str) or not referent or not isinstance(value, str):
            raise DsgcTypeError(f"binds must map non-empty str referents to str values, got {referent!r}: {value!r}")
        if not referent.isascii():  # (ASCII is valid Unicode: no error name to build for it)
            check_unicode(f"binds referent {referent!r}", referent)
        if not value.isascii():
            check_unicode(f"binds[{referent!r}]", value)
    return dict(binds)


def _check_uses(uses: Iterable[str]) -> tuple[str, ...]:
    out = _names("uses", uses, "referent names")
    for referent in out:
        if not referent.isascii():  # (as in ``_check_binds``)
            check_unicode(f"uses referent {referent!r}", referent)
    return out


def _embedding_dtype(value: Any) -> np.dtype | None:
    """``embedding_dtype`` checked: None, or float16 / float32 / float64 (as a name or a NumPy type)."""
    if value is None:
        return None
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or dtype.name not in EMBEDDING_DTYPES or not dtype.isnative:
        raise DsgcValueError(f"embedding_dtype must be one of {EMBEDDING_DTYPES} or None, got {value!r}")
    return dtype


def _check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DsgcTypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise DsgcTypeError(f"meta must be a mapping, got {type(meta).__name__}")
    if INDUCED_KEY in meta:
        raise DsgcValueError(
            f"meta key {INDUCED_KEY!r} is reserved: the store sets it on the blocks added with induce=True"
            " (drop it from a block's meta read back from a store, and pass induce=True to induce)"
        )
    if type(meta) is dict:
        try:
            return canonical_copy(meta)
        except NotCanonical:
            pass  # the round trip below converts it or names what is wrong
    try:
        decoded = json.loads(json.dumps(dict(meta), allow_nan=False))
    except RecursionError:
        raise DsgcValueError(f"meta is nested more than {MAX_NESTING} levels deep") from None
    except (TypeError, ValueError) as exc:
        raise DsgcTypeError(f"meta must be JSON-serializable: {exc}") from None
    check_nesting("meta", decoded)
    return decoded


class _Texts(Mapping[str, str]):
    """Active block id -> text at the compaction (the report's ``texts``).

    ``active`` is the compaction's own slot -> block dict (blocks are frozen; the store
    replaces a block, never edits it), so another thread's later ``add``, cut or eviction
    cannot change it (or break an iteration over it); ``slot_of`` is the store's id -> slot
    map, which only grows and never changes an entry.
    """

    def __init__(self, active: Mapping[int, Block], slot_of: Mapping[str, int]) -> None:
        self._active, self._slot_of = active, slot_of

    def __getitem__(self, block_id: str) -> str:
        block = self._active.get(self._slot_of.get(block_id, -1))
        if block is None:
            raise KeyError(block_id)
        return block.text

    def __iter__(self) -> Iterator[str]:
        return (block.id for block in self._active.values())

    def __len__(self) -> int:
        return len(self._active)


#: the archive's reason label of each ``Reason`` code
_LABELS = {int(reason): reason.label for reason in Reason}


class _Referents:
    """Every block's uses and binds as append-only arrays over referent ids (all blocks).

    ``use_ptr``/``use_refs``: CSR of slot -> referent ids it uses (the block's order, each
    once); ``bind_ptr``/``bind_refs``: CSR of slot -> referent ids it binds.  ``active_index``
    gathers the active blocks' part into a ``ReferentIndex`` in one kernel call
    (``kernels.referents.active_links``), in O(active blocks + their links) whatever the
    number of archived blocks.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.use_ptr = _Growable(np.int64)
        self.use_ptr.append(0)
        self.use_refs = _Growable(np.int64)
        self.bind_ptr = _Growable(np.int64)
        self.bind_ptr.append(0)
        self.bind_refs = _Growable(np.int64)

    def _id(self, referent: str) -> int:
        k = self.ids.get(referent)
        if k is None:
            k = self.ids[referent] = len(self.names)
            self.names.append(referent)
        return k

    def append(self, uses: Sequence[str], binds: Mapping[str, str]) -> None:
        for x in uses:
            self.use_refs.append(self._id(x))
        self.use_ptr.append(self.use_refs.n)
        for x in binds:
            self.bind_refs.append(self._id(x))
        self.bind_ptr.append(self.bind_refs.n)

    def active_index(self, slots: np.ndarray, binds: Sequence[Mapping[str, str]]) -> ReferentIndex:
        """The ``ReferentIndex`` of the active blocks ``slots`` (ascending; local index = position).

        The live binder of a referent is its newest active binder, as ``retain`` computes it
        from the active blocks' lists; referent ids are local (those the active blocks touch).
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
