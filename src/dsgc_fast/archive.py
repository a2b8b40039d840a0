"""The SQLite record of a ``MemoryStore``: every block, active or archived, exactly once.

Two tables with the same block columns, ``active`` and ``archive``, keyed by the block's
insertion number ``seq`` (and unique on its ``id``).  A compaction moves rows from ``active``
to ``archive`` inside one transaction (``INSERT ... SELECT`` then ``DELETE``), so the text
that reaches the archive is copied by SQLite itself, byte for byte, and a process killed at
any instant leaves either the state before the move or the state after it, never a block in
both tables or in neither.  The in-memory store changes only after the commit.

File databases use write-ahead logging with ``synchronous=NORMAL``: a killed process loses
nothing committed; a power cut may lose the last commits but never leaves a torn state.
``":memory:"`` gives a private in-memory database (``save``/``backup_to`` copy it to a file).
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCHEMA_VERSION = 1

_BLOCK_COLUMNS = "seq, id, text, cost, embedding, depends_on, binds, uses, pinned, meta"
_BLOCK_SCHEMA = """
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    cost INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    depends_on TEXT NOT NULL,
    binds TEXT NOT NULL,
    uses TEXT NOT NULL,
    pinned INTEGER NOT NULL,
    meta TEXT NOT NULL
"""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS active ({_BLOCK_SCHEMA});
CREATE TABLE IF NOT EXISTS archive ({_BLOCK_SCHEMA},
    compaction INTEGER NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS compactions (
    number INTEGER PRIMARY KEY,
    query TEXT NOT NULL,
    budget INTEGER NOT NULL,
    policy TEXT NOT NULL,
    kept INTEGER NOT NULL,
    evicted INTEGER NOT NULL,
    used INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class Block:
    """One memory block as stored: its text, cost, embedding, structure and metadata.

    ``seq`` is the insertion number (larger is newer); ``depends_on`` names prerequisite
    block ids; ``binds`` maps referents this block binds to their values; ``uses`` names
    the referents it uses; ``pinned`` blocks are live roots at every compaction.
    """

    id: str
    text: str
    cost: int
    seq: int
    depends_on: tuple[str, ...] = ()
    binds: dict[str, str] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    pinned: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    embedding: np.ndarray = field(default=None, repr=False, compare=False)

    def to_row(self) -> tuple:
        """The block as a row of the ``active``/``archive`` tables."""
        return (
            self.seq,
            self.id,
            self.text,
            self.cost,
            np.ascontiguousarray(self.embedding, dtype="<f8").tobytes(),
            json.dumps(list(self.depends_on)),
            json.dumps(self.binds),
            json.dumps(list(self.uses)),
            int(self.pinned),
            json.dumps(self.meta),
        )

    @classmethod
    def from_row(cls, row: tuple) -> Block:
        """The block a table row holds; ``ValueError`` naming the field if the row is malformed."""
        seq, id_, text, cost, emb, depends_on, binds, uses, pinned, meta = row[:10]
        try:
            block = cls(
                id=id_,
                text=text,
                cost=int(cost),
                seq=int(seq),
                depends_on=tuple(_decoded(depends_on, list)),
                binds=_decoded(binds, dict),
                uses=tuple(_decoded(uses, list)),
                pinned=bool(pinned),
                meta=_decoded(meta, dict),
                embedding=np.frombuffer(emb, dtype="<f8").astype(np.float64),
            )
            _check_block(block, pinned)
        except (TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            raise ValueError(f"block seq {seq!r} is malformed: {exc}") from None
        return block


def _decoded(text: Any, kind: type) -> Any:
    """A JSON column's value, which must be of type ``kind``."""
    value = json.loads(text)
    if not isinstance(value, kind):
        raise ValueError(f"expected a JSON {kind.__name__}, got {text!r}")
    return value


def _check_block(block: Block, pinned: Any) -> None:
    """Raise ``ValueError`` unless every field of a decoded row has the type ``MemoryStore.add`` gives it."""
    checks = [
        (isinstance(block.id, str) and block.id != "", "id is not a non-empty text"),
        (isinstance(block.text, str), "text is not text"),
        (block.cost >= 0, "cost is negative"),
        (pinned in (0, 1), "pinned is not 0 or 1"),
        (block.embedding.size > 0 and bool(np.isfinite(block.embedding).all()), "embedding is empty or not finite"),
        (all(isinstance(x, str) for x in block.depends_on + block.uses), "depends_on/uses hold a non-text"),
        (all(isinstance(v, str) for v in block.binds.values()), "binds maps to a non-text"),
    ]
    for ok, problem in checks:
        if not ok:
            raise ValueError(problem)


@dataclass(frozen=True)
class ArchivedBlock:
    """An archived block with the compaction that evicted it and the reason given then."""

    block: Block
    compaction: int
    reason: str


class Archive:
    """The store's SQLite database (a file path or ``":memory:"``).

    Writes outside ``transaction()`` commit immediately; inside it they commit together
    or not at all.
    """

    def __init__(self, path: str | os.PathLike = ":memory:") -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"archive must be a file path or ':memory:', got {type(path).__name__}")
        self.path = os.fspath(path)
        #: the file the blocks came from (``path``, or the file given to ``restore_from``)
        self.origin = self.path
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.OperationalError as exc:  # a directory, a missing parent directory
            raise ValueError(f"cannot open the archive {self.path!r}: {exc}") from None
        self._depth = 0
        try:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            with self.transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                if self.setting("schema_version") is None:
                    self.set_setting("schema_version", str(SCHEMA_VERSION))
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema can garble the message
            self._conn.close()
            raise ValueError(f"{self.path!r} is not a dsgc store database: {exc}") from None
        self.check_schema()

    def check_schema(self) -> None:
        """Raise ``ValueError`` unless the database has this module's tables and schema version."""
        try:
            columns = {t: self._conn.execute(f"PRAGMA table_info({t})").fetchall() for t in _expected_columns()}
            version = self.setting("schema_version") if columns["settings"] else None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.origin!r} is not a dsgc store database: {exc}") from None
        missing = sorted(t for t, cols in columns.items() if not cols)
        if missing:
            raise ValueError(f"{self.origin!r} is not a dsgc store database: no table(s) {missing}")
        for table, want in _expected_columns().items():
            if columns[table] != want:
                raise ValueError(f"{self.origin!r} is not a dsgc store database: table {table!r} has other columns")
        if version != str(SCHEMA_VERSION):
            raise ValueError(f"archive {self.origin!r} has schema version {version}, expected {SCHEMA_VERSION}")

    # -- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic transaction (nested uses join the outer one)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._conn.execute("ROLLBACK")
            raise
        self._depth = 0
        self._conn.execute("COMMIT")

    # -- settings -----------------------------------------------------------------------
    def setting(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, value))

    # -- blocks -------------------------------------------------------------------------
    def insert_active(self, block: Block) -> None:
        """Write a new active block (raises ``sqlite3.IntegrityError`` on a duplicate id)."""
        self._conn.execute(f"INSERT INTO active ({_BLOCK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)", block.to_row())

    def archive_blocks(self, reasons: dict[int, str], compaction: int) -> None:
        """Move the active blocks with these ``seq`` keys into the archive (one transaction).

        Rows are copied by ``INSERT ... SELECT`` and only then deleted from ``active``.
        """
        if not reasons:
            return
        payload = json.dumps([[seq, reason] for seq, reason in reasons.items()])
        with self.transaction():
            self._conn.execute(
                f"INSERT INTO archive ({_BLOCK_COLUMNS}, compaction, reason) "
                f"SELECT {_prefixed('a')}, ?, json_extract(j.value, '$[1]') "
                "FROM json_each(?) AS j JOIN active AS a ON a.seq = json_extract(j.value, '$[0]')",
                (compaction, payload),
            )
            moved = self._conn.execute("SELECT changes()").fetchone()[0]
            if moved != len(reasons):
                raise RuntimeError(f"archive: {len(reasons) - moved} of the blocks to evict are not active")
            self._conn.execute(
                "DELETE FROM active WHERE seq IN (SELECT json_extract(value, '$[0]') FROM json_each(?))",
                (payload,),
            )

    def restore_blocks(self, seqs: Iterable[int]) -> list[Block]:
        """Move archived blocks back to ``active`` (one transaction); return them by seq.

        Raises ``ValueError`` (and moves nothing) if any of them is not in the archive table.
        """
        wanted = sorted({int(s) for s in seqs})
        payload = json.dumps(wanted)
        with self.transaction():
            rows = self._conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM archive WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (payload,),
            ).fetchall()
            if len(rows) != len(wanted):
                raise ValueError(f"archive {self.origin!r} is corrupt: {len(wanted) - len(rows)} archived block(s) are missing")
            self._conn.execute(
                f"INSERT INTO active ({_BLOCK_COLUMNS}) SELECT {_BLOCK_COLUMNS} FROM archive "
                "WHERE seq IN (SELECT value FROM json_each(?))",
                (payload,),
            )
            self._conn.execute("DELETE FROM archive WHERE seq IN (SELECT value FROM json_each(?))", (payload,))
        return [Block.from_row(r) for r in rows]

    def archived(self, seqs: Iterable[int]) -> list[ArchivedBlock]:
        """Read archived blocks (with text) without moving them, ordered by seq."""
        payload = json.dumps(sorted({int(s) for s in seqs}))
        rows = self._conn.execute(
            f"SELECT {_BLOCK_COLUMNS}, compaction, reason FROM archive "
            "WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (payload,),
        ).fetchall()
        return [ArchivedBlock(Block.from_row(r), int(r[10]), r[11]) for r in rows]

    def all_blocks(self) -> Iterator[tuple[Block, bool]]:
        """Every block with its state (True = active), ordered by seq."""
        rows = self._conn.execute(
            f"SELECT {_BLOCK_COLUMNS}, 1 FROM active UNION ALL SELECT {_BLOCK_COLUMNS}, 0 FROM archive ORDER BY seq"
        )
        for row in rows:
            yield Block.from_row(row), bool(row[10])

    # -- compaction log -----------------------------------------------------------------
    def log_compaction(self, query: str, budget: int, policy: str, kept: int, evicted: int, used: int) -> int:
        """Record one compaction; returns its number (1, 2, ...)."""
        cur = self._conn.execute(
            "INSERT INTO compactions (query, budget, policy, kept, evicted, used) VALUES (?,?,?,?,?,?)",
            (query, budget, policy, kept, evicted, used),
        )
        return int(cur.lastrowid)

    def next_compaction(self) -> int:
        row = self._conn.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM compactions").fetchone()
        return int(row[0])

    # -- whole database -----------------------------------------------------------------
    def backup_to(self, path: str | os.PathLike) -> None:
        """Write a consistent snapshot of the whole database to ``path`` (overwritten)."""
        target = os.fspath(path)
        if self.path != ":memory:" and os.path.abspath(target) == os.path.abspath(self.path):
            raise ValueError(f"cannot save the store onto its own archive file {target!r}")
        dest = sqlite3.connect(target)
        try:
            self._conn.backup(dest)
        finally:
            dest.close()

    def restore_from(self, path: str | os.PathLike) -> None:
        """Replace this (empty) database with a copy of the database at ``path``.

        The file is opened for writing (never created) so that SQLite can roll back the
        journal a save killed midway leaves behind: the copy is the last complete save.
        """
        source_path = os.fspath(path)
        if not os.path.isfile(source_path):
            raise FileNotFoundError(f"no saved store at {source_path!r}")
        self.origin = source_path
        uri = f"file:{urllib.request.pathname2url(os.path.abspath(source_path))}?mode=rw"
        source = sqlite3.connect(uri, uri=True)
        try:
            source.backup(self._conn)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise ValueError(f"{source_path!r} is not a dsgc store database: {exc}") from None
        finally:
            source.close()
        self.check_schema()

    def close(self) -> None:
        self._conn.close()


@functools.cache
def _expected_columns() -> dict[str, list[tuple]]:
    """``PRAGMA table_info`` of every table of the schema (from a scratch in-memory database)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in tables}
    finally:
        conn.close()


def _prefixed(alias: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in _BLOCK_COLUMNS.split(","))
