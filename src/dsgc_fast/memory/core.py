"""``StoreCore``: what a ``MemoryStore`` holds and does, without its lock.

A ``MemoryStore`` is a locked facade over one core: the archive (the record, ``archive``),
the column store rebuilt from it (``columns.BlockColumns``), the token counter, the encoder
with the rows of the texts it encoded last, and the digests of its blocks (``BlockDigests``).  The
compaction run (``compact_run``), recall and search (``recall``) and deletion (``erasure``)
are functions of a core; the store calls them holding its lock.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcValueError

from .. import _validate
from ._access import database_error
from .archive import Archive
from .block import Block, check_flag, check_stored, checked_block, is_induced
from .columns import BlockColumns, check_vectors, encoded, in_width
from .digest_blocks import BlockDigests
from .schema import VALUE_TABLE_KEY
from .token_counts import TokenCounter
from .value_table import BlockValueLines, ValueTableBlock, from_stored, stored

#: how many recently encoded texts a store remembers the rows of (``StoreCore.encode``)
RECENT_TEXTS = 256


class StoreCore:
    """The archive, the columns rebuilt from it, the counter, the encoder and the digests of one store.

    Parameters
    ----------
    archive : Archive
        The database (the record).
    width : numpy.dtype
        The embeddings' dtype.
    counter : TokenCounter
        Gives block costs.
    encode_texts : callable
        ``texts -> (n, d)`` rows.
    lock : RLock
        The store's lock (``read_archived`` takes it).
    """

    def __init__(
        self, archive: Archive, width: np.dtype, counter: TokenCounter, encode_texts: Callable[[list[str]], Any],
        lock: Any,
    ) -> None:  # fmt: skip
        self.archive, self.width, self.counter, self.encode_texts = archive, width, counter, encode_texts
        self.lock = lock
        self.recent_rows: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self.digests = BlockDigests()
        self.value_lines = BlockValueLines(counter)
        #: the value table the last compaction sent (``value_table``), sent with the active blocks
        self.value_table: ValueTableBlock | None = None
        self.columns = BlockColumns(width)

    @classmethod
    def opened(
        cls, archive: Archive, width: np.dtype | None, counter: TokenCounter, encoder: tuple[Any, Callable], lock: Any
    ) -> StoreCore:
        """The core of ``archive``, rebuilt, with the encoder's and tokenizer's names recorded; the archive is closed on any error.

        ``width`` is the asked ``embedding_dtype`` (None: the archive's); ``encoder`` is
        ``encoders.encode_function``'s pair.  A database SQLite refuses to write (a damaged
        header, say) is a ``ValueError``; a locked one an ``ArchiveLockedError``.
        """
        try:
            try:
                core = cls(archive, archive.settle_width(width), counter, encoder[1], lock)
                core.rebuild()
                core.record_names(getattr(encoder[0], "name", None))
            except sqlite3.DatabaseError as exc:
                raise database_error(exc, archive.origin, f"archive {archive.origin!r} is corrupt") from None
        except BaseException:
            archive.close()
            raise
        return core

    def record_names(self, encoder_name: Any) -> None:
        """Remember the encoder's and tokenizer's names in the database; refuse different ones.

        An archive written before tokenizers were recorded has no tokenizer entry: it is
        recorded now, unchecked.
        """
        for key, name, what in (
            ("encoder", encoder_name, "embeddings come from the {stored!r} encoder, but encoder is {name!r}"),
            ("tokenizer", self.counter.name, "costs were counted with {stored!r}, but tokenizer is {name!r}"),
        ):
            if not isinstance(name, str):
                continue
            stored = self.archive.setting(key)
            if stored is None:
                self.archive.set_setting(key, name)
            elif stored != name:
                raise DsgcValueError("this store's " + what.format(stored=stored, name=name))

    def rebuild(self) -> None:
        """(Re)build the columns from every block in the database.

        Raises ``ValueError`` naming the database if a row is malformed or the rows do not
        form a store (seq gaps, duplicate ids, unknown dependencies, mixed dimensions).  The
        digests and value lines kept by slot learn of it (``rebuilt``), and the value table is the
        one the database holds (``VALUE_TABLE_KEY``: that of the last compaction committed).
        """

        columns = self.columns = BlockColumns(self.width)
        try:
            for block, table in self.archive.all_blocks():
                check_stored(block, columns.total, columns.slot_of, columns.dimension)
                if table != "deleted" and is_induced(block.meta):  # the reading of ``add``: its edges again
                    columns.induce(block)
                if block.embedding is None:
                    raise DsgcValueError(f"block {block.id!r} has no embedding")
                columns.append(block, block.embedding, active=table == "active", deleted=table == "deleted")
            text = self.archive.setting(VALUE_TABLE_KEY)
            self.value_table = None if text is None else from_stored(text)
        except (ValueError, sqlite3.DatabaseError) as exc:
            raise DsgcValueError(f"archive {self.archive.origin!r} is corrupt: {exc}") from None
        self.digests.rebuilt(columns.total)
        self.value_lines.rebuilt(columns.total)

    def write_value_table(self, table: ValueTableBlock | None) -> None:
        """Record ``table`` (None: no table) in the database, in the caller's transaction; ``value_table`` is
        set by the caller once it commits."""
        if table is None:
            self.archive.drop_setting(VALUE_TABLE_KEY)
        else:
            self.archive.set_setting(VALUE_TABLE_KEY, stored(table))

    # -- embeddings -------------------------------------------------------------------
    def encode(self, texts: list[str], name: str) -> np.ndarray:
        """The encoder's rows of ``texts`` (checked, float64), in one encoder call for the texts not encoded recently.

        The core remembers the rows of the ``RECENT_TEXTS`` texts it encoded last, so a batch
        encoded up front (``messages.add_records``) and a query that repeats a block's text
        cost no second call.
        """
        dimension = self.columns.dimension
        if not texts:
            return encoded(self.encode_texts, texts, name, dimension)
        recent = self.recent_rows
        new = [t for t in dict.fromkeys(texts) if t not in recent]
        if new:
            for text, row in zip(new, encoded(self.encode_texts, new, name, dimension)):
                row = row.copy()  # a row of its own: a view would keep the whole batch's array alive
                row.flags.writeable = False
                recent[text] = row
        for text in texts:
            recent.move_to_end(text)
        out = np.array([recent[t] for t in texts], dtype=np.float64).reshape(len(texts), -1)
        while len(recent) > RECENT_TEXTS:
            recent.popitem(last=False)
        return out

    def stored(self, vectors: np.ndarray) -> np.ndarray:
        """Checked float64 rows in the store's width (``columns.in_width``)."""
        return in_width(vectors, self.width)

    def embedding(self, embedding: Any) -> np.ndarray:
        """A given ``embedding`` checked: a finite (d,) vector, d the store's."""
        vec = _validate.numeric_array("embedding", embedding).astype(np.float64)
        if vec.ndim != 1:
            raise DsgcValueError(f"embedding must be 1-D (d,), got shape {vec.shape}")
        return check_vectors(vec[None, :], "embedding", self.columns.dimension)[0]

    # -- adding -----------------------------------------------------------------------
    def prepared(
        self, text: str, *, id: str | None = None, depends_on: Iterable[str] = (), binds: Mapping[str, str] | None = None,
        uses: Iterable[str] = (), embedding: Any = None, cost: int | None = None, pinned: bool = False,
        meta: Mapping[str, Any] | None = None, induce: bool = False, encoded: np.ndarray | None = None,
        own_meta: bool = False,
    ) -> tuple[Block, np.ndarray, list[int]]:  # fmt: skip
        """The block ``add`` appends next (every argument checked), its embedding, and the archived slots it brings back.

        ``encoded``: the row ``encode`` gave for ``text`` (checked there), used instead of
        ``embedding``; a row already in the store's width is kept as it is.  ``own_meta``:
        ``meta`` is the store's to keep uncopied (``checked_block``).  With ``induce`` the
        inducer reads the block last, once nothing can refuse it before it is written, and
        the block is marked as induced.
        """

        columns = self.columns
        induce = check_flag("induce", induce)
        block = checked_block(
            text, seq=columns.total, id=id, depends_on=depends_on, binds=binds, uses=uses, cost=cost, pinned=pinned,
            meta=meta, known=columns.slot_of, counter=self.counter, induced=induce, own_meta=own_meta,
        )  # fmt: skip
        for prerequisite in block.depends_on:
            if columns.deleted.view()[columns.slot_of[prerequisite]]:
                raise DsgcValueError(f"dependency {prerequisite!r} was deleted")
        if encoded is None:
            encoded = self.encode([text], "encoder(text)")[0] if embedding is None else self.embedding(embedding)
        vector = encoded if encoded.dtype == self.width else self.stored(encoded)
        binders = [columns.newest_binder[x] for x in block.uses if x in columns.newest_binder]
        missing = columns.archived_closure(binders)
        if induce:
            columns.induce(block)
        return block, vector, missing

    def add(self, kwargs: Mapping[str, Any]) -> str:
        """``MemoryStore.add(**kwargs)`` (the block, and the archived binders it uses back, in one transaction)."""
        block, vector, missing = self.prepared(**kwargs)
        restored = []
        try:
            if missing:
                with self.archive.transaction():
                    restored = self.archive.restore_blocks(missing)
                    self.archive.insert_active([(block, vector)])
            else:
                self.archive.insert_active([(block, vector)])  # one statement: atomic on its own
        except BaseException:
            if is_induced(block.meta):  # the inducer has read the block: rebuild it from the record
                self.rebuild()
            raise
        self.columns.mark_active(restored)
        self.columns.append(block, vector, active=True)
        return block.id

    def add_many(self, entries: Sequence[Mapping[str, Any]], error: Callable[[int, Exception], Exception]) -> list[str]:
        """``add(**entry)`` for each entry in order, the new rows in one statement (in the caller's transaction).

        A ``TypeError``/``ValueError`` raised for entry k is replaced by ``error(k, exc)``.
        """
        rows = []
        for k, entry in enumerate(entries):
            try:
                block, vector, missing = self.prepared(**entry)
            except (TypeError, ValueError) as exc:
                raise error(k, exc) from None
            if missing:
                self.columns.mark_active(self.archive.restore_blocks(missing))
            self.columns.append(block, vector, active=True)
            rows.append((block, vector))
        self.archive.insert_active(rows)
        return [block.id for block, _ in rows]

    # -- reading ----------------------------------------------------------------------
    def archived_block(self, slot: int) -> Block:
        """The archived block at ``slot``, read from the archive."""
        found = self.archive.archived([slot])
        if not found:
            raise DsgcValueError(
                f"archive {self.archive.origin!r} is corrupt: archived block {self.columns.ids[slot]!r} is missing"
            )
        return found[0].block

    def block(self, slot: int) -> Block:
        """The block at ``slot`` (not deleted): an active one with a copy of its embedding, an archived one read back."""
        return self.with_embedding(slot) if slot in self.columns.blocks else self.archived_block(slot)

    def read_archived(self, slot: int) -> Block:
        """The archived block at ``slot`` without its embedding, read holding ``lock``; ``KeyError`` if it was deleted
        or the archive closed since (a report's explanation reads blocks this way after its compaction)."""
        with self.lock:
            try:
                if not self.columns.deleted.view()[slot]:
                    return self.archived_block(slot).detached()
            except (sqlite3.Error, RuntimeError, ValueError):
                pass  # the archive was closed, or the block moved on
            raise KeyError(slot)

    def block_as_held(self, slot: int) -> Block:
        """The block at ``slot`` (not deleted) without its embedding: an active one as held, an archived one read back."""
        block = self.columns.blocks.get(slot)
        return block if block is not None else self.archived_block(slot).detached()

    def used(self) -> int:
        """Total cost of what is sent: the active blocks and the value table of the last compaction."""
        table = self.value_table
        active = int(self.columns.cost.view()[self.columns.active.view()].sum())
        return active + (table.block.cost if table is not None else 0)

    def sent_blocks(self) -> list[Block]:
        """The active blocks, oldest first, as held (no copies, no embeddings), then the value table if any."""
        held = list(map(self.columns.blocks.__getitem__, self.columns.active_slots().tolist()))
        return held if self.value_table is None else [*held, self.value_table.block]

    def active_copies(self, embeddings: bool) -> list[Block]:
        """Copies of the active blocks, oldest first, each with a copy of its embedding if ``embeddings``."""
        slots = self.columns.active_slots().tolist()
        if not embeddings:
            return [self.columns.blocks[s].detached() for s in slots]
        return [self.with_embedding(s) for s in slots]

    def with_embedding(self, slot: int) -> Block:
        """The active block at ``slot`` with a copy of its embedding."""
        return self.columns.blocks[slot].detached(self.columns.embeddings()[slot].copy())

    def slot(self, block_id: str, *, deleted_ok: bool = True) -> int:
        """The slot of ``block_id`` (``KeyError`` if unknown, or deleted unless ``deleted_ok``)."""
        columns = self.columns
        if block_id not in columns.slot_of:
            raise KeyError(f"unknown block id {block_id!r}")
        slot = columns.slot_of[block_id]
        if not deleted_ok and columns.deleted.view()[slot]:
            raise KeyError(f"block {block_id!r} was deleted")
        return slot
