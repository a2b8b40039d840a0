"""The SQLite record of a ``MemoryStore``: every block, active, archived or deleted, exactly once.

This module owns ``Archive``: the connection, its transactions and the moves of rows between
tables.  What the tables are and how an older database reaches the current schema is
``schema.py``'s; what a row holds is a ``block.Block`` (``block.py``).

Three tables with the same block columns, ``active``, ``archive`` and ``deleted``, keyed by
the block's insertion number ``seq`` (and unique on its ``id``).  A compaction moves rows from ``active``
to ``archive`` inside one transaction (``INSERT ... SELECT`` then ``DELETE``), so the text
that reaches the archive is copied by SQLite itself, byte for byte, and a process killed at
any instant leaves either the state before the move or the state after it, never a block in
both tables or in neither.  The in-memory store changes only after the commit.  A deletion
(``MemoryStore.delete``, ``pop``, ``truncate_after``, ``clear``) moves rows the same way into
``deleted``, logged in ``deletions``: a deleted block leaves the conversation and its content
is erased; a tombstone stays in the record (its seq, id, cost, dependencies and the deletion),
and SQLite zeroes the freed bytes (``secure_delete``), so once the write-ahead log is
checkpointed (at the latest when the store closes) no byte of the removed text is on disk.

File databases use write-ahead logging with ``synchronous=NORMAL``: a killed process loses
nothing committed; a power cut may lose the last commits but never leaves a torn state.
``":memory:"`` gives a private in-memory database (``save``/``backup_to`` copy it to a file):
SQLite's ``memdb`` while it is below ``MEMDB_SPILL`` bytes, whose commits cost the same at
any size, then a plain ``:memory:`` database (``_access.memory_connection``).

A file archive has one writer at a time (``WriterLock``); a database is used as an archive
or loaded only if its schema objects are exactly a store's (``schema.check_schema``), with
one of its schema versions: no trigger, view, index or table of anyone else's comes along,
and another program's database is refused untouched.  A store of an older schema version is
upgraded (``upgrade``: ``schema.MIGRATIONS[v:]`` in one transaction) when it is opened for
writing, and ``load`` upgrades its copy.  A saved file is in rollback-journal mode, so it
loads from read-only storage (see ``_access``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import cast

import numpy as np

from dsgc_ref.contract import DsgcRuntimeError, DsgcValueError

from ._access import (
    MEMDB_SPILL,
    WriterLock,
    access_error,
    backup,
    check_single_name,
    connect,
    database_error,
    database_path,
    image_size,
    in_write_ahead_log,
    is_full,
    is_locked,
    memory_connection,
    open_snapshot,
)
from .block import ArchivedBlock, Block, DeletedBlock
from .schema import (
    BLOCK_COLUMNS,
    DEFAULT_WIDTH,
    EMBEDDING_DTYPES,
    LEGACY_WIDTH,
    SCHEMA_VERSION,
    WIDTH_KEY,
    check_schema,
    migrate,
    schema_objects,
    schema_version,
)

#: what a deleted row keeps of its block (``BLOCK_COLUMNS`` order): seq, id, cost, its
#: dependencies' ids, pinned; the text, bindings, uses and meta are erased and the embedding zeroed
_TOMBSTONE = "seq, id, '', cost, zeroblob(length(embedding)), depends_on, '{}', '[]', pinned, '{}'"


class Archive:
    """The store's SQLite database (a file path, a ``file:`` URI or ``":memory:"``).

    Opening a file first reads it without writing: a file with several hard links, or a
    database with anything but a store's schema (``schema.check_schema``), is refused
    (``ValueError``, the file untouched).  Then it takes the writer lock
    (``ArchiveLockedError`` if another store holds it), makes an empty database an archive
    and upgrades an older one (``upgrade``).  Writes outside ``transaction()`` commit
    immediately; inside it they commit together or not at all.
    """

    def __init__(self, path: str | os.PathLike = ":memory:") -> None:
        self._writer: WriterLock | None = None
        self._connection: sqlite3.Connection | None = None
        #: the page count at which an in-memory archive leaves SQLite's size-limited ``memdb``
        #: (``memory_connection``; 0: not in memdb), and whether the last commit reached it
        self._memdb_pages = 0
        self._outgrown = False
        self._depth = 0
        #: the little-endian dtype the embedding bytes of every row have (``settle_width``)
        self.width: np.dtype = LEGACY_WIDTH
        self.path = database_path(path)
        #: the file the blocks came from (``path``, or the file given to ``restore_from``)
        self.origin = self.path
        try:
            if self.path == ":memory:":
                self._use_memory(*memory_connection())
                self._create()
                return
            self._open_file()
        except BaseException:
            self.close()
            raise
        _OPEN_FILE_ARCHIVES.add(self)

    @property
    def _conn(self) -> sqlite3.Connection:
        """The database connection (absent only while opening fails)."""
        if self._connection is None:
            raise DsgcRuntimeError("the archive's database is not open")
        return self._connection

    def _open_file(self) -> None:
        try:
            self._connection = connect(self.path)
        except sqlite3.Error as exc:  # a directory, a missing parent directory
            raise database_error(exc, self.path, f"cannot open the archive {self.path!r}") from None
        try:
            check_single_name(self.path)
            self._is_store()  # another program's database is refused before anything is made beside it
            self._writer = WriterLock(self.path)
            if self._is_store():  # read again under the lock
                self._use_write_ahead_log()
                self.upgrade()
            else:
                self._use_write_ahead_log()
                self._create()
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged schema can garble the message
            raise database_error(exc, self.path, f"{self.path!r} is not a dsgc store database") from None

    def _is_store(self) -> bool:
        """False for an empty database; True for a store; ``ValueError`` for anything else."""
        if not schema_objects(self._conn):
            return False
        check_schema(self._conn, self.path)
        return True

    def upgrade(self) -> None:
        """Bring a store of an older schema version to ``SCHEMA_VERSION``: ``MIGRATIONS[v:]``, one transaction."""
        version = schema_version(self._conn)
        if version is not None and version < SCHEMA_VERSION:
            with self.transaction():
                migrate(self._conn, version)

    def _use_write_ahead_log(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA secure_delete=ON")  # freed content is zeroed: an erased text leaves no bytes behind

    def _create(self) -> None:
        with self.transaction():
            migrate(self._conn, 0)

    # -- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic transaction; a nested group is a savepoint within it.

        If a group raises, its writes roll back (a nested group's alone: the enclosing
        group goes on if it handles the error) and the error propagates.
        """
        undo: tuple[str, ...]
        if self._depth:
            name = f"level{self._depth}"
            begin, end, undo = f"SAVEPOINT {name}", f"RELEASE {name}", (f"ROLLBACK TO {name}", f"RELEASE {name}")
        else:
            begin, end, undo = "BEGIN IMMEDIATE", "COMMIT", ("ROLLBACK",)
            if self._outgrown:
                self._leave_memdb()
        self._conn.execute(begin)
        self._depth += 1
        try:
            yield
            if self._depth == 1 and self._memdb_pages:  # measured in the transaction: no read transaction of its own
                self._outgrown = self._conn.execute("PRAGMA page_count").fetchone()[0] >= self._memdb_pages
            self._conn.execute(end)
        except BaseException as exc:
            if self._conn.in_transaction:  # SQLite may already have rolled back (a full disk, say)
                for statement in undo:
                    self._conn.execute(statement)
            if self._depth == 1 and self._memdb_pages and is_full(exc):
                self._leave_memdb()
                raise DsgcRuntimeError(
                    "one group of writes outgrew the in-memory archive's first database (SQLite's memdb, "
                    f"at most 1 GiB; the archive leaves it at {MEMDB_SPILL >> 20} MiB); nothing was written, "
                    "and the archive now has no such limit: repeat the operation"
                ) from exc
            raise
        finally:
            self._depth -= 1

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One growing write: in the open transaction, or in a ``transaction()`` of its own.

        Every write that can grow the database goes through ``transaction()``, where an
        in-memory archive measures itself and leaves ``memdb`` before it is full.
        """
        if self._depth:
            yield
        else:
            with self.transaction():
                yield

    def _leave_memdb(self) -> None:
        """Move an in-memory archive from ``memdb`` into a plain ``:memory:`` database (no size limit).

        Between transactions only: the copy is of the committed database.
        """
        target, _ = memory_connection(MEMDB_SPILL)
        try:
            backup(self._conn, target, "the in-memory archive")
        except BaseException:
            target.close()
            raise
        self._conn.close()
        self._use_memory(target, False)

    def _use_memory(self, conn: sqlite3.Connection, memdb: bool) -> None:
        """Make ``conn`` (an in-memory database, in ``memdb`` or not) this archive's database."""
        self._connection = conn
        conn.execute("PRAGMA secure_delete=ON")  # as for a file: erased content is zeroed in memory too
        self._memdb_pages = MEMDB_SPILL // conn.execute("PRAGMA page_size").fetchone()[0] if memdb else 0
        self._outgrown = False

    # -- settings -----------------------------------------------------------------------
    def setting(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, value))

    def drop_setting(self, key: str) -> None:
        self._conn.execute("DELETE FROM settings WHERE key = ?", (key,))

    def settle_width(self, asked: np.dtype | None) -> np.dtype:
        """Fix ``width`` from the settings, recording ``asked`` (default ``DEFAULT_WIDTH``) in a new archive.

        Every archive that holds rows names their width (``MIGRATIONS[2]`` recorded float64 in
        those written before widths were recorded): one that does not is corrupt.  Asking for
        another width than the one recorded is a ``ValueError``.
        """
        stored = self.setting(WIDTH_KEY)
        if stored is None:
            if self._conn.execute(
                "SELECT 1 FROM active UNION ALL SELECT 1 FROM archive UNION ALL SELECT 1 FROM deleted LIMIT 1"
            ).fetchone():
                raise DsgcValueError(f"archive {self.origin!r} is corrupt: it holds blocks but names no {WIDTH_KEY}")
            width = (DEFAULT_WIDTH if asked is None else asked).newbyteorder("<")
            self.set_setting(WIDTH_KEY, width.name)
        else:
            try:
                width = np.dtype(stored).newbyteorder("<")
            except TypeError:
                raise DsgcValueError(
                    f"archive {self.origin!r} is corrupt: {WIDTH_KEY} {stored!r} is no dtype"
                ) from None
            if width.name not in EMBEDDING_DTYPES:
                raise DsgcValueError(
                    f"archive {self.origin!r} is corrupt: {WIDTH_KEY} {stored!r} is not one of {EMBEDDING_DTYPES}"
                )
        if asked is not None and np.dtype(asked) != width.newbyteorder("="):
            raise DsgcValueError(
                f"this store's embeddings are stored as {width.name}, but embedding_dtype is {np.dtype(asked).name}"
            )
        self.width = width
        return width.newbyteorder("=")

    # -- blocks -------------------------------------------------------------------------
    def insert_active(self, blocks: Iterable[tuple[Block, np.ndarray | None]]) -> None:
        """Write new active ``(block, embedding)`` pairs in one statement (None: the block's own embedding).

        Raises ``sqlite3.IntegrityError`` on a duplicate id.  Inside ``transaction()`` the rows
        join it; outside, the statement is a transaction of its own.
        """
        rows = [b.to_row(e, self.width) for b, e in blocks]
        with self._write():
            self._conn.executemany(f"INSERT INTO active ({BLOCK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)

    def update_active(self, block: Block) -> None:
        """Rewrite the text, cost and meta of an active block (the rest of its row stays)."""
        with self._write():
            cur = self._conn.execute(
                "UPDATE active SET text = ?, cost = ?, meta = ? WHERE seq = ? AND id = ?",
                (block.text, block.cost, json.dumps(block.meta), block.seq, block.id),
            )
        if cur.rowcount != 1:
            raise DsgcRuntimeError(f"archive: block {block.id!r} is not active")

    def archive_blocks(self, reasons: dict[int, str], compaction: int) -> None:
        """Move the active blocks with these ``seq`` keys into the archive (one transaction).

        Rows are copied by one ``INSERT ... SELECT`` (the seqs and reasons passed as one JSON
        object) and only then deleted from ``active``.
        """
        if not reasons:
            return
        payload = json.dumps({str(int(seq)): reason for seq, reason in reasons.items()})
        with self.transaction():
            moved = self._conn.execute(
                f"INSERT INTO archive ({BLOCK_COLUMNS}, compaction, reason) "
                f"SELECT {_prefixed('a')}, ?, j.value FROM json_each(?) AS j JOIN active AS a "
                "ON a.seq = CAST(j.key AS INTEGER)",
                (compaction, payload),
            ).rowcount
            if moved != len(reasons):
                raise DsgcRuntimeError(f"archive: {len(reasons) - moved} of the blocks to evict are not active")
            self._conn.execute(
                "DELETE FROM active WHERE seq IN (SELECT CAST(key AS INTEGER) FROM json_each(?))", (payload,)
            )

    def restore_blocks(self, seqs: Iterable[int]) -> list[Block]:
        """Move archived blocks back to ``active`` (one transaction); return them by seq, without
        their embeddings (the store's columns hold every block's row).

        Raises ``ValueError`` (and moves nothing) if any of them is not in the archive table.
        """
        wanted = sorted({int(s) for s in seqs})
        payload = json.dumps(wanted)
        with self.transaction():
            rows = self._conn.execute(
                f"SELECT {BLOCK_COLUMNS.replace('embedding', 'NULL')} FROM archive "
                "WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (payload,),
            ).fetchall()
            if len(rows) != len(wanted):
                raise DsgcValueError(
                    f"archive {self.origin!r} is corrupt: {len(wanted) - len(rows)} archived block(s) are missing"
                )
            self._conn.execute(
                f"INSERT INTO active ({BLOCK_COLUMNS}) SELECT {BLOCK_COLUMNS} FROM archive "
                "WHERE seq IN (SELECT value FROM json_each(?))",
                (payload,),
            )
            self._conn.execute("DELETE FROM archive WHERE seq IN (SELECT value FROM json_each(?))", (payload,))
        return [Block.from_row(r, self.width, embedding=False) for r in rows]

    def archived(self, seqs: Iterable[int]) -> list[ArchivedBlock]:
        """Read archived blocks (with text) without moving them, ordered by seq."""
        payload = json.dumps(sorted({int(s) for s in seqs}))
        rows = self._conn.execute(
            f"SELECT {BLOCK_COLUMNS}, compaction, reason FROM archive "
            "WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (payload,),
        ).fetchall()
        return [ArchivedBlock(Block.from_row(r, self.width), int(r[10]), r[11]) for r in rows]

    def delete_blocks(self, seqs: Iterable[int], operation: str) -> int:
        """Move these blocks (active or archived) into ``deleted`` (one transaction); returns the deletion's number.

        Rows are copied by ``INSERT ... SELECT`` and only then deleted from their table; an
        archived row keeps the compaction and reason that archived it.  Raises
        ``RuntimeError`` (and moves nothing) if one of them is in neither table.
        """
        payload = json.dumps(sorted({int(s) for s in seqs}))
        wanted = len(json.loads(payload))
        with self.transaction():
            number = _row_id(
                self._conn.execute("INSERT INTO deletions (operation, blocks) VALUES (?, ?)", (operation, wanted))
            )
            moved = 0
            for table, origin in (("active", "NULL, NULL"), ("archive", "compaction, reason")):
                self._conn.execute(
                    f"INSERT INTO deleted ({BLOCK_COLUMNS}, deletion, compaction, reason) "
                    f"SELECT {_TOMBSTONE}, ?, {origin} FROM {table} WHERE seq IN (SELECT value FROM json_each(?))",
                    (number, payload),
                )
                moved += self._conn.execute("SELECT changes()").fetchone()[0]
            if moved != wanted:
                raise DsgcRuntimeError(
                    f"archive: {wanted - moved} of the blocks to delete are neither active nor archived"
                )
            for table in ("active", "archive"):
                self._conn.execute(f"DELETE FROM {table} WHERE seq IN (SELECT value FROM json_each(?))", (payload,))
        return number

    def deleted(self, seqs: Iterable[int] | None = None) -> list[DeletedBlock]:
        """Deleted blocks (all, or these seqs) with their deletion, ordered by seq."""
        where, args = "", cast(tuple[str, ...], ())
        if seqs is not None:
            where, args = (
                "WHERE d.seq IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted({int(s) for s in seqs})),),
            )
        rows = self._conn.execute(
            f"SELECT {_prefixed('d')}, d.deletion, x.operation, d.compaction, d.reason FROM deleted AS d "
            f"JOIN deletions AS x ON x.number = d.deletion {where} ORDER BY d.seq",
            args,
        ).fetchall()
        return [DeletedBlock(Block.from_row(r, self.width), int(r[10]), r[11], r[12], r[13]) for r in rows]

    def all_blocks(self) -> Iterator[tuple[Block, str]]:
        """Every block with its table (``"active"``, ``"archive"`` or ``"deleted"``), ordered by seq.

        A locked or unreadable database raises ``ArchiveLockedError``/``PermissionError``;
        other database errors (damage) propagate as ``sqlite3.DatabaseError``.
        """
        try:
            union = " UNION ALL ".join(
                f"SELECT {BLOCK_COLUMNS}, '{t}' FROM {t}" for t in ("active", "archive", "deleted")
            )
            for row in self._conn.execute(f"{union} ORDER BY seq"):
                yield Block.from_row(row, self.width), row[10]
        except sqlite3.DatabaseError as exc:
            error = access_error(exc, self.origin)
            if error is None:
                raise
            raise error from None

    # -- compaction log -----------------------------------------------------------------
    def log_compaction(self, query: str, budget: int, policy: str, kept: int, evicted: int, used: int) -> int:
        """Record one compaction; returns its number (1, 2, ...)."""
        cur = self._conn.execute(
            "INSERT INTO compactions (query, budget, policy, kept, evicted, used) VALUES (?,?,?,?,?,?)",
            (query, budget, policy, kept, evicted, used),
        )
        return _row_id(cur)

    def next_compaction(self) -> int:
        row = self._conn.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM compactions").fetchone()
        return int(row[0])

    # -- whole database -----------------------------------------------------------------
    def backup_to(self, path: str | os.PathLike) -> None:
        """Write a consistent snapshot of the whole database to ``path`` (overwritten).

        Refused inside ``transaction()`` (the group is not committed yet), onto this
        database's own file under any name (a symbolic link, a hard link, a ``file:`` URI),
        and onto the archive of an open store.  The file is left in rollback-journal mode
        (unless a reader holds it open then; it loads either way).
        """
        if self._depth:
            raise DsgcRuntimeError("cannot save inside atomic(): the group is not committed yet; save after the block")
        target = database_path(path)
        if target == ":memory:" or os.path.isdir(target):
            raise DsgcValueError(f"save needs a file path, got {target!r}")
        if os.path.exists(target):
            if self.path != ":memory:" and os.path.samefile(target, self.path):
                raise DsgcValueError(f"cannot save the store onto its own archive file {target!r}")
            check_single_name(target)
        writer = WriterLock(target, create=False)  # an archive's lock file exists: refuse a live one
        try:
            dest = connect(target)
            try:
                backup(self._conn, dest, repr(target))
                _leave_write_ahead_log(dest)
            finally:
                dest.close()
        except sqlite3.Error as exc:
            raise database_error(exc, target, f"cannot save to {target!r}") from None
        finally:
            writer.release()

    def restore_from(self, path: str | os.PathLike) -> None:
        """Replace this (empty) database with a copy of the saved store at ``path``.

        The file is checked and copied in one read transaction (``open_snapshot`` opens it),
        so the schema checked is the schema copied; a file that is not a store, has another
        schema version or holds schema objects a store does not have is refused
        before anything is copied.
        """
        source_path = database_path(path)
        try:
            regular = stat.S_ISREG(os.stat(source_path).st_mode)  # PermissionError: a folder on the way
        except FileNotFoundError:
            regular = False
        if not regular:
            raise FileNotFoundError(f"no saved store at {source_path!r}")
        self.origin = source_path
        not_a_store = f"{source_path!r} is not a dsgc store database"
        try:
            source = open_snapshot(source_path)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise database_error(exc, source_path, not_a_store) from None
        try:
            source.execute("BEGIN")
            check_schema(source, source_path)
            if self._memdb_pages and (image_size(source) >= MEMDB_SPILL or in_write_ahead_log(source_path)):
                self._leave_memdb()
            backup(source, self._conn, repr(source_path))
            if self._memdb_pages:  # the copy brings the saved file's page size
                self._use_memory(self._conn, True)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise database_error(exc, source_path, not_a_store) from None
        finally:
            source.close()
        try:
            self.upgrade()  # on the copy: a damaged header can pass the source's checks and fail here
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise database_error(exc, source_path, not_a_store) from None

    def close(self) -> None:
        """Close the database and release the writer lock (idempotent)."""
        if self._connection is not None:
            self._connection.close()
        if self._writer is not None:
            self._writer.release()

    def __del__(self) -> None:
        # A store dropped without ``close`` releases its archive at once: an ``sqlite3``
        # connection sits in a reference cycle (its statement cache) and would otherwise
        # hold the writer lock until the cyclic garbage collector runs.
        self.close()


#: the file archives open in this process (closed in a forked child, see below)
_OPEN_FILE_ARCHIVES: weakref.WeakSet[Archive] = weakref.WeakSet()


def _close_inherited_archives() -> None:
    """In a forked child, close the connections inherited from the parent's open archives.

    SQLite keeps its lock state per process in memory: an inherited connection would make a
    store the child opens on the same file look locked by the child itself, and it must
    never be used (SQLite forbids carrying a connection across ``fork``).  Closing it in the
    child touches neither the parent's locks (POSIX locks are not inherited) nor the data
    (the parent still holds the database, so the child does not checkpoint it).
    """
    for archive in list(_OPEN_FILE_ARCHIVES):
        archive.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_archives)


def _leave_write_ahead_log(conn: sqlite3.Connection) -> None:
    """Switch a saved file to rollback-journal mode, which read-only storage can read.

    The backup copies the source's header, so a file-backed store's snapshot starts in
    write-ahead-log mode.  The switch needs the file to itself: while a reader holds it
    open the file stays as it is (``open_snapshot`` reads both modes).
    """
    conn.execute("PRAGMA busy_timeout=0")
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            raise


def _row_id(cursor: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made."""
    if cursor.lastrowid is None:
        raise DsgcRuntimeError("the INSERT made no row")
    return int(cursor.lastrowid)


def _prefixed(alias: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in BLOCK_COLUMNS.split(","))
