"""Archive files: which file a path names, who may write it, how a snapshot is read, what an error means.

* ``database_path``: the file SQLite opens for a path or a ``file:`` URI, so that checks on a
  file's identity see that file.
* ``WriterLock``: at most one ``MemoryStore`` writes an archive file at a time, in any process.
  The writer holds an exclusive SQLite lock on the side file ``<real path>-lock`` from opening
  to ``close``; a second writer is refused at once with ``ArchiveLockedError``.  The lock is an
  operating-system file lock taken through SQLite (which keeps the POSIX lock rules straight
  for several connections in one process): it ends when the store closes or is
  garbage-collected and when its process dies, SIGKILL included, so it never goes stale, and a
  forked process does not inherit it.  The side file itself carries nothing and stays
  (deleting it while a store is open would let a second writer in).  Readers do not take the
  lock: SQLite's write-ahead log lets ``MemoryStore.load`` or the ``sqlite3`` shell read a live
  archive while its writer works.
* ``open_snapshot``: a saved store opened for reading, on writable or read-only storage.
* ``backup``: SQLite's online backup that gives up on a lock after ``LOCK_TIMEOUT`` seconds
  (the ``sqlite3`` module's own loop retries a locked database forever).
* ``database_error``: an SQLite error as the exception that names its cause:
  ``ArchiveLockedError`` (locked), ``PermissionError`` (the storage refuses), else ``ValueError``.
* ``memory_connection``: a private in-memory database, in SQLite's ``memdb`` VFS while it is
  small (see there: a commit there costs the same at any size) and a plain ``:memory:`` one
  beyond ``MEMDB_SPILL`` bytes.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
import urllib.request

from dsgc_ref.contract import DsgcRuntimeError, DsgcTypeError, DsgcValueError

#: seconds to wait for a database that another connection holds locked
LOCK_TIMEOUT = 5.0

# SQLite's primary result codes met here, and their messages (``sqlite3_errstr``) for Python
# versions whose exceptions carry no ``sqlite_errorcode``
_PERM, _BUSY, _LOCKED, _READONLY, _FULL, _CANTOPEN = 3, 5, 6, 8, 13, 14
_CODE_OF_MESSAGE = {
    "access permission denied": _PERM,
    "database is locked": _BUSY,
    "database table is locked": _LOCKED,
    "attempt to write a readonly database": _READONLY,
    "database or disk is full": _FULL,
    "unable to open database file": _CANTOPEN,
}


class ArchiveLockedError(DsgcRuntimeError):
    """The archive is in use: another ``MemoryStore`` writes it, or a connection holds it locked."""


def database_path(path: str | os.PathLike) -> str:
    """The database file SQLite opens for ``path``: the path itself, or the file a ``file:`` URI names.

    ``":memory:"`` (and ``file::memory:``) stays ``":memory:"``.  URIs with parameters or a
    host other than ``localhost`` are refused: pass a file path.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise DsgcTypeError(f"archive must be a file path or ':memory:', got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise DsgcTypeError(f"archive must be a str path, got {type(text).__name__}")
    if not text.startswith("file:"):
        return text
    uri = urllib.parse.urlsplit(text)
    if uri.query or uri.fragment or uri.netloc not in ("", "localhost"):
        raise DsgcValueError(f"{text!r}: only plain file: URIs are accepted (no parameters, no host); pass a file path")
    return urllib.request.url2pathname(uri.path)


def connect(path: str, **params: str) -> sqlite3.Connection:
    """A connection to the database file ``path`` (or ``":memory:"``) with URI ``params``.

    Usable from any thread (callers serialize), autocommit outside explicit transactions,
    waiting up to ``LOCK_TIMEOUT`` seconds for a lock.  The path is URI-quoted, so that no
    character of a file name is read as URI syntax.
    """
    target = path
    if path != ":memory:":
        query = urllib.parse.urlencode(params)
        target = f"file:{urllib.request.pathname2url(os.path.abspath(path))}" + (f"?{query}" if query else "")
    return _connection(target)


def _connection(target: str) -> sqlite3.Connection:
    return sqlite3.connect(target, uri=True, timeout=LOCK_TIMEOUT, isolation_level=None, check_same_thread=False)


#: the private in-memory database of SQLite's ``memdb`` VFS (no leading "/": not shared)
MEMDB_URI = "file:dsgc-archive?vfs=memdb"
#: image size (bytes) past which an in-memory archive moves from ``memdb`` to ``:memory:``:
#: ``memdb`` refuses to grow past 1 GiB (SQLite's default ``SQLITE_MEMDB_DEFAULT_MAXSIZE``),
#: so this leaves 512 MiB for the writes of one transaction
MEMDB_SPILL = 512 << 20


def memory_connection(size: int = 0) -> tuple[sqlite3.Connection, bool]:
    """A new private in-memory database for an image of ``size`` bytes, and whether it is ``memdb``.

    ``memdb`` (SQLite >= 3.36) while ``size < MEMDB_SPILL``: its page cache is bounded like
    a file's, so a commit costs the same at any size, where a ``:memory:`` database's commit
    scans a page-cache hash as large as the database (measured: 0.4-0.7 ms per commit at
    100,000 archived blocks against 17 us in ``memdb``).  ``memdb`` cannot grow past 1 GiB,
    so a larger image, or an SQLite without ``memdb``, gets a plain ``:memory:`` database.
    Either way the database lives in this process alone (a forked child has its own copy).
    """
    if size < MEMDB_SPILL:
        try:
            return _connection(MEMDB_URI), True
        except sqlite3.OperationalError:  # "no such vfs: memdb"
            pass
    return _connection(":memory:"), False


def image_size(conn: sqlite3.Connection) -> int:
    """The bytes of the database image of ``conn`` (pages times page size)."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    return int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])


def in_write_ahead_log(path: str) -> bool:
    """True if the database file at ``path`` is in write-ahead-log mode (its header's format bytes).

    A copy of such a file in ``memdb`` keeps that header and then looks for a log file it
    cannot open, so it goes into a plain ``:memory:`` database instead.
    """
    with open(path, "rb") as file:
        header = file.read(20)
    return len(header) == 20 and header[18] == 2


def is_full(exc: BaseException) -> bool:
    """True if ``exc`` is SQLite's "database or disk is full"."""
    return _primary_code(exc) == _FULL


def database_error(exc: BaseException, path: str, problem: str) -> Exception:
    """The exception naming the cause of ``exc``, an error met on the database file ``path``.

    ``access_error`` if the database is locked or the storage refuses it, otherwise (not a
    database, damaged, wrong schema) ``ValueError(f"{problem}: {exc}")``.
    """
    return access_error(exc, path) or ValueError(f"{problem}: {exc}")


def access_error(exc: BaseException, path: str) -> Exception | None:
    """``ArchiveLockedError`` if ``exc`` says the database is locked (past ``LOCK_TIMEOUT``),
    ``PermissionError`` if it is a read-only or open failure and the storage does refuse
    ``path`` to this process, else None."""
    if is_locked(exc):
        return ArchiveLockedError(f"{path!r} is locked by another connection (waited {LOCK_TIMEOUT:g} s): {exc}")
    refusal = _storage_refusal(path) if _primary_code(exc) in (_PERM, _READONLY, _CANTOPEN) else None
    if refusal is not None:
        return PermissionError(f"{path!r}: {refusal} ({exc})")
    return None


def is_locked(exc: BaseException) -> bool:
    """True if ``exc`` is SQLite's "database is locked" (busy) or "table is locked"."""
    return _primary_code(exc) in (_BUSY, _LOCKED)


def _primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return _CODE_OF_MESSAGE.get(str(exc))
    return int(code) & 0xFF


def _storage_refusal(path: str) -> str | None:
    """Why the file system refuses ``path`` or its folder to this process, if it does."""
    if path == ":memory:":
        return None
    effective = os.access in os.supports_effective_ids
    folder = os.path.dirname(os.path.abspath(path))
    exists = os.path.exists(path)
    if exists and not os.access(path, os.R_OK, effective_ids=effective):
        return "no permission to read the file"
    if (exists and not os.access(path, os.W_OK, effective_ids=effective)) or (
        os.path.isdir(folder) and not os.access(folder, os.W_OK, effective_ids=effective)
    ):
        return "read-only storage or no write permission (the file or its folder)"
    return None


def check_single_name(path: str) -> None:
    """Refuse a database file with several hard links: SQLite names its log and journal after the path."""
    links = os.stat(path).st_nlink
    if links > 1:
        raise DsgcValueError(
            f"{path!r} has {links} hard links: SQLite keeps a database consistent under one name only "
            "(its log and journal are named after the path)"
        )


class WriterLock:
    """The exclusive writer lock of the archive file ``database`` (see the module docstring).

    ``create=False`` takes the lock only if the side file exists (returns an unlocked object
    otherwise), for a file that may or may not be an archive: nothing is left beside it.
    """

    def __init__(self, database: str, *, create: bool = True) -> None:
        self.path = os.path.realpath(database) + "-lock"
        self._conn: sqlite3.Connection | None = None
        if not create and not os.path.exists(self.path):
            return
        try:
            conn = connect(self.path, **({} if create else {"mode": "rw"}))
        except sqlite3.Error as exc:  # a missing folder, a read-only one
            raise database_error(exc, database, f"cannot open the archive {database!r}") from None
        try:
            conn.execute("PRAGMA busy_timeout=0")  # a held lock refuses at once
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # keep the lock after the first transaction
            conn.execute("PRAGMA journal_mode=OFF")  # the file holds no data: no journal beside it
            conn.execute("BEGIN EXCLUSIVE")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.close()
            if is_locked(exc):
                raise ArchiveLockedError(
                    f"archive {database!r} is in use by another MemoryStore (open, or saving onto it), in this "
                    "process or another; one writer at a time: close that store first, or read a copy with "
                    "MemoryStore.load"
                ) from None
            raise database_error(exc, self.path, f"cannot lock {self.path!r}") from None
        self._conn = conn

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def open_snapshot(path: str) -> sqlite3.Connection:
    """A connection reading the saved store at ``path`` (which exists); SQLite errors propagate.

    Opened for writing where the storage allows (never created), so that SQLite rolls back
    the journal a save killed midway leaves behind.  On read-only storage SQLite opens it
    read-only, which is enough for a rollback-journal file; a write-ahead-log file there
    needs a shared-memory index SQLite cannot create, so one with no log or journal beside it
    (nothing to recover) is opened as immutable.  One with such files beside it is refused:
    SQLite cannot apply them on read-only storage.
    """
    conn = connect(path, mode="rw")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if _primary_code(exc) not in (_READONLY, _CANTOPEN) or _storage_refusal(path) is None:
            raise
        leftovers = [path + suffix for suffix in ("-wal", "-journal") if os.path.exists(path + suffix)]
        if leftovers:
            raise PermissionError(
                f"{path!r} is on read-only storage with {leftovers} beside it (an interrupted write SQLite "
                "cannot apply there): copy the files to writable storage and load the copy"
            ) from None
    conn = connect(path, mode="ro", immutable="1")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def backup(source: sqlite3.Connection, target: sqlite3.Connection, what: str) -> None:
    """Copy the whole database of ``source`` onto ``target``.

    Raises ``ArchiveLockedError`` when a lock has blocked the copy for ``LOCK_TIMEOUT``
    seconds (the ``sqlite3`` module would retry forever).
    """
    deadline = time.monotonic() + LOCK_TIMEOUT

    def give_up_when_locked(status: int, remaining: int, total: int) -> None:
        if status in (_BUSY, _LOCKED) and time.monotonic() > deadline:
            raise ArchiveLockedError(f"{what} is locked by another connection (waited {LOCK_TIMEOUT:g} s)")

    source.backup(target, progress=give_up_when_locked)
