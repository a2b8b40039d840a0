"""``MemoryStore``: an agent's memory as blocks, compacted to a token budget, never lost.

An agent loop appends blocks (``add``) and, before each model call, compacts the store to its
budget (``compact``): ``retain`` ranks every block not deleted against the query (the whole
history, ``compact_run``), the live roots and their referent closure are pinned, and the
outcome is written in one transaction *before* the in-memory state changes.  ``recall`` moves
archived blocks back early; ``save``/``load`` copy the whole store.  The database is the
record: opening a store on an existing archive file resumes it.

Sessions (``erasure``).  ``delete``, ``pop``, ``truncate_after`` and ``clear`` take blocks out
for good: a deleted block is never decided on, recalled, found by ``search`` or used as a
binder, its id is never reused, and its content is erased from the store and the database in
one transaction (a tombstone stays in ``deleted``).  When it was the live binder of a referent
an active block uses, the next newest binder becomes live, back from the archive if need be.

Options.  ``encoder``: a name (``"lexical"``, ``"sentence"``), an object with
``encode(list[str]) -> (n, d)`` or such a callable (default: the lexical hashing encoder).
``tokenizer``: anything ``token_counts.token_counter`` takes (a name such as ``"o200k_base"``,
``"approx"``, ``"whitespace"``, a tokenizer object, a callable ``str -> int``); a block added
from a chat message costs what the chat API charges for it, framing included.  ``archive``:
the SQLite database, a file path or ``file:`` URI (resumed if it exists) or ``":memory:"``;
it records the encoder's and the tokenizer's names and refuses different ones when resumed.
``params``: the knobs ``compact`` uses unless told otherwise (``AGENT_PARAMS``).
``embedding_dtype``: the width of the embeddings in memory and in the archive, ``"float32"``
(a new archive's default), ``"float16"`` or ``"float64"``; a resumed archive keeps its width
(float64 if written before widths were recorded) and refuses another.  Scoring reads the
stored values exactly (float16 and float32 widen to float64 without rounding).

Per-block data lives in ``columns.BlockColumns`` (arrays that grow by doubling: ``add`` is
amortized O(1)); ``compact`` costs O(blocks not deleted + their links), vectorized, reading
archived rows only when needed.  The last ``core.RECENT_TEXTS`` texts' rows are remembered.

Any thread may use a store (its methods hold its lock; ``atomic()`` holds it to the group's end).
A file archive has one writer: a second store on it, in any process, gets ``ArchiveLockedError``
until the first closes or its process dies; ``load`` may copy it; a forked process opens its own.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Unpack

import numpy as np

from dsgc_ref.contract import DsgcRuntimeError, DsgcTypeError, DsgcValueError, ParamOverrides, Params

from ..encoders import encode_function
from . import compact_run, erasure, token_counts
from . import recall as recalling
from .archive import Archive
from .block import MAX_COST, ArchivedBlock, Block, DeletedBlock, check_flag, checked_block, id_list
from .columns import BlockColumns
from .compact_run import Options
from .compaction import AGENT_PARAMS
from .core import RECENT_TEXTS, StoreCore
from .explain import CompactionReport
from .recall import SearchHit
from .schema import EMBEDDING_DTYPES
from .token_counts import TokenCounter, Tokenizer

__all__ = ["AGENT_PARAMS", "MAX_COST", "RECENT_TEXTS", "MemoryStore", "SearchHit", "checked_block", "default_encoder"]

Encoder = Any  # a name, an object with ``encode(list[str]) -> (n, d)`` (``dsgc_fast.encoders``) or such a callable


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


def default_encoder() -> Encoder:
    """The offline, deterministic lexical hashing encoder of the paper."""
    from ..encoders import LexicalEncoder

    return LexicalEncoder()


class MemoryStore:
    """Blocks of agent memory with budgeted, explained, lossless compaction (the module docstring lists the options).

    A locked facade over a ``core.StoreCore``: ``compact_run``, ``recall`` and ``erasure`` do the work.
    """

    def __init__(
        self, encoder: Encoder | None = None, tokenizer: Tokenizer = None, archive: str | os.PathLike = ":memory:", *,
        params: Params | None = None, embedding_dtype: Any = None, token_counter: Any = None,
    ) -> None:  # fmt: skip
        _refuse_token_counter(token_counter)
        self.params = Params.of(AGENT_PARAMS if params is None else params)
        self._asked_width = _embedding_dtype(embedding_dtype)
        self._encoder = encode_function(encoder if encoder is not None else default_encoder())
        self._counter = token_counter_of(tokenizer)
        self._lock = threading.RLock()
        self._pid, self._forks, self._closed = os.getpid(), _Forks.count, False
        self._archive = Archive(archive)
        self._core = StoreCore.opened(self._archive, self._asked_width, self._counter, self._encoder, self._lock)

    @property
    def tokenizer(self) -> TokenCounter:
        """The ``TokenCounter`` that gives block costs (the ``tokenizer`` option, resolved)."""
        return self._counter

    @property
    def columns(self) -> BlockColumns:
        """The store's ``columns.BlockColumns``, read-only (hold ``held()`` for a consistent read)."""
        return self._core.columns

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

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Group operations: all or none (one transaction, a savepoint when nested), holding the lock; a group that raises
        rolls back its writes and the columns are rebuilt from the database.  ``save`` inside a group is refused."""
        with self.held():
            try:
                with self._archive.transaction():
                    yield
            except BaseException:
                self._core.rebuild()
                raise

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the store's lock for the whole block: a read-check-write of several calls (``messages.add_records``
        plans against the store's blocks, then adds) sees no other thread's change in between."""
        self._enter()
        try:
            yield
        finally:
            self._lock.release()

    @_serialized
    def add(
        self, text: str, *, id: str | None = None, depends_on: Iterable[str] = (), binds: Mapping[str, str] | None = None,
        uses: Iterable[str] = (), embedding: Any = None, cost: int | None = None, pinned: bool = False,
        meta: Mapping[str, Any] | None = None, induce: bool = False,
    ) -> str:  # fmt: skip
        """Append a block; returns its id (default ``"b<seq>"``).

        ``depends_on``: earlier block ids it depends on; ``binds``: referent -> value it binds; ``uses``: referents
        it uses; ``embedding``: (d,) (default ``encoder([text])``); ``cost``: tokens (default the tokenizer's count);
        ``pinned``: a live root at every compaction; ``meta``: JSON data (``"induced"`` reserved); ``induce``: also
        the edges induction finds to earlier induced blocks (``induced_edges()``).  An archived live binder of a
        referent it uses returns to the active set, with its referent closure, in the same transaction.
        """
        kwargs = {"depends_on": depends_on, "binds": binds, "uses": uses, "embedding": embedding, "cost": cost}
        return self._core.add({"text": text, "id": id, "pinned": pinned, "meta": meta, "induce": induce, **kwargs})

    @_serialized
    def add_many(self, entries: Sequence[Mapping[str, Any]], error: Callable[[int, Exception], Exception]) -> list[str]:
        """``add(**entry)`` for each entry, all or none, in one statement (an entry may carry ``encoded``, the row
        ``encode`` gave, and ``own_meta``); a ``TypeError``/``ValueError`` for entry k becomes ``error(k, exc)``."""
        with self.atomic():
            return self._core.add_many(entries, error)

    @_serialized
    def encode(self, texts: list[str], name: str = "encoder(text)") -> np.ndarray:
        """The encoder's float64 rows of ``texts``, checked (``name`` in errors); recently encoded texts cost no call."""
        return self._core.encode(texts, name)

    def in_store_width(self, rows: np.ndarray) -> np.ndarray:
        """Checked float64 rows in ``embedding_dtype`` (``ValueError`` if a row overflows it)."""
        return self._core.stored(rows)

    @_serialized
    def induced_edges(self) -> list[tuple[str, str]]:
        """The induced edges in force, ``(dependent id, prerequisite id)``, oldest dependent first (apart from ``depends_on``)."""
        return [(self._core.columns.ids[j], self._core.columns.ids[i]) for j, i in self._core.columns.induced.pairs()]

    @property
    def embedding_dtype(self) -> np.dtype:
        """The width the store keeps embeddings in, in memory and in the archive."""
        return self._core.width

    @_serialized
    def __len__(self) -> int:
        """Number of active blocks."""
        return len(self._core.columns.blocks)

    @_serialized
    def __contains__(self, block_id: object) -> bool:
        """True if ``block_id`` is an active block."""
        slot = self._core.columns.slot_of.get(block_id) if isinstance(block_id, str) else None
        return slot is not None and slot in self._core.columns.blocks

    @property
    @_serialized
    def total(self) -> int:
        """Number of blocks ever added (active, archived and deleted)."""
        return self._core.columns.total

    @property
    @_serialized
    def dimension(self) -> int | None:
        """Embedding dimension d (None before the first block)."""
        return self._core.columns.dimension

    @property
    @_serialized
    def used(self) -> int:
        """Total cost of what is sent: the active blocks and the value table (``active_blocks``)."""
        return self._core.used()

    @property
    def archive_path(self) -> str:
        return self._archive.path

    @_serialized
    def ids(self) -> list[str]:
        """Active block ids, oldest first."""
        return self._core.columns.names_of(self._core.columns.active_slots())

    @_serialized
    def archived_ids(self) -> list[str]:
        """Archived block ids, oldest first."""
        return self._core.columns.names_of(self._core.columns.archived_slots())

    @_serialized
    def blocks(self, *, embeddings: bool = True) -> list[Block]:
        """Active blocks, oldest first (``embeddings=False`` leaves ``Block.embedding`` None)."""
        return self._core.active_copies(embeddings)

    @_serialized
    def active_blocks(self) -> list[Block]:
        """The active blocks, oldest first, as held (no copies, no embeddings; never change them), then the value table
        the last compaction made, if any (``chat_messages`` sends it after the leading system messages)."""
        return self._core.sent_blocks()

    @_serialized
    def history(self) -> list[Block]:
        """Every block not deleted, oldest first (active ones as held, archived ones read back): what ``compact`` decides over."""
        return [self._core.block_as_held(s) for s in self._core.columns.live_slots().tolist()]

    @_serialized
    def older_blocks(self, end: int, count: int) -> tuple[list[Block], int]:
        """Up to ``count`` of the newest blocks older than seq ``end``, not deleted, newest first, and the seq to go on from (``recall.older_blocks``)."""
        return recalling.older_blocks(self._core, end, count)

    @_serialized
    def has(self, block_id: str) -> bool:
        """True if ``block_id`` names a block, active, archived or deleted (ids are never reused)."""
        return block_id in self._core.columns.slot_of

    @_serialized
    def get(self, block_id: str) -> Block:
        """An active or archived block by id (``KeyError`` for an unknown or a deleted id; ``deleted()`` reads those)."""
        return self._core.block(self._core.slot(block_id, deleted_ok=False))

    @_serialized
    def archived(self, ids: Iterable[str] | None = None) -> list[ArchivedBlock]:
        """Archived blocks (all, or these ids) with the compaction and reason that evicted them."""
        named = None if ids is None else [self._core.slot(i) for i in id_list("ids", ids)]
        return self._archive.archived(self._core.columns.archived_slots() if named is None else named)

    @_serialized
    def deleted(self, ids: Iterable[str] | None = None) -> list[DeletedBlock]:
        """Deleted blocks (all, or these ids) with the deletion that removed them, oldest first."""
        return self._archive.deleted(None if ids is None else [self._core.slot(i) for i in id_list("ids", ids)])

    @_serialized
    def binder_of(self, referent: str) -> str | None:
        """The id of the newest block (active or archived) binding ``referent``, if any."""
        slot = self._core.columns.newest_binder.get(referent)
        return None if slot is None else self._core.columns.ids[slot]

    @_serialized
    def compact(
        self, query: str | Sequence[str] | Any, budget: int, *, params: Params | None = None, live: Iterable[str] = (),
        query_weights: Any = None, ages: Mapping[str, int] | None = None, mode: str = "exact",
        on_over_budget: str = "raise", digests: bool = True, values: bool = True,
        **overrides: Unpack[ParamOverrides],
    ) -> CompactionReport:  # fmt: skip
        """Keep what fits ``budget`` for ``query`` over the whole history; archive the rest; explain every decision.

        ``query``: text(s) (weighted by ``query_weights``) or a (d,)/(m, d) embedding; ``live``: further roots (the
        pinned blocks always are); ``ages``: working ages by id; ``on_over_budget``: ``"raise"``, ``"roots_only"``
        or ``"truncate"``; ``digests`` (default True): tool results may stay as digests; ``values`` (default True,
        with ``digests``): the values of what is left out are sent in a value table (``value_table``).  Details:
        ``compact_run``, docs/memory.md.
        """
        options = Options.of(self.params, params, overrides, query_weights, mode, on_over_budget, digests, values)
        return compact_run.compact(self._core, query, budget, live, ages, options)

    @_serialized
    def compact_turn(
        self, budget: int, *, query: Any = None, live: Iterable[str] = (), params: Params | None = None,
        query_weights: Any = None, mode: str = "exact", on_over_budget: str = "raise", digests: bool = True,
        values: bool = True, **overrides: Unpack[ParamOverrides],
    ) -> CompactionReport | None:  # fmt: skip
        """``compact`` of a chat session on the store's chat facts (``compact_run.compact_turn``); None, changing
        nothing, when they are ambiguous (``messages.compact_messages`` then applies the chat rules itself)."""
        options = Options.of(self.params, params, overrides, query_weights, mode, on_over_budget, digests, values)
        return compact_run.compact_turn(self._core, budget, query, live, options)

    @_serialized
    def recall(self, ids: str | Iterable[str]) -> list[Block]:
        """Bring archived blocks back, with their referent closure, and digests back whole; returns them, oldest first."""
        return recalling.recall(self._core, [self._core.slot(i, deleted_ok=False) for i in id_list("ids", ids)])

    @_serialized
    def search(self, query: str | Sequence[str] | Any, k: int, *, recall: bool = False) -> list[SearchHit]:
        """The ``k`` archived blocks most similar to ``query``, best first (``recall.search``); ``recall``: bring them back."""
        check_flag("recall", recall)
        hits = recalling.search(self._core, query, k)
        if recall:
            self.recall([hit.block.id for hit in hits])
        return hits

    @_serialized
    def delete(self, ids: str | Iterable[str]) -> list[str]:
        """Delete blocks, active or archived (module docstring); their ids, oldest first (``KeyError``: unknown; ``ValueError``: deleted)."""
        return erasure.delete_named(self._core, sorted({self._core.slot(i) for i in id_list("ids", ids)}))

    @_serialized
    def pop(self) -> Block:
        """Delete the newest block not deleted yet and return it, with its text (``IndexError`` when none is left)."""
        return erasure.pop(self._core)

    @_serialized
    def truncate_after(self, block_id: str) -> list[str]:
        """Delete every block newer than ``block_id`` (active or archived); returns their ids, oldest first."""
        slot = self._core.slot(block_id, deleted_ok=False)
        newer = self._core.columns.live_slots()
        return erasure.delete(self._core, newer[newer > slot].tolist(), "truncate_after")

    @_serialized
    def clear(self) -> list[str]:
        """Delete every block (the store starts over; the record keeps them); returns their ids."""
        return erasure.delete(self._core, self._core.columns.live_slots().tolist(), "clear")

    @_serialized
    def save(self, path: str | os.PathLike) -> None:
        """Write the whole store to a SQLite file, a consistent snapshot (``Archive.backup_to``; refused inside
        ``atomic()``, onto the store's own archive, or onto another open store's archive)."""
        self._archive.backup_to(path)

    @classmethod
    def load(
        cls, path: str | os.PathLike, *, encoder: Encoder | None = None, tokenizer: Tokenizer = None,
        archive: str | os.PathLike = ":memory:", token_counter: Any = None,
    ) -> MemoryStore:  # fmt: skip
        """A store restored from a ``save`` file (only read; with the encoder and tokenizer it was built with), working
        on a copy in ``archive``; a file with schema objects the store does not create is refused (``ValueError``)."""
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
        store._core = StoreCore.opened(store._archive, store._asked_width, store._counter, store._encoder, store._lock)
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
