"""The SQLite schema of a store's archive: its tables, its version, and the steps up to it.

This module owns what a store database is made of, and nothing that moves rows
(``archive.py``) or reads them as blocks (``block.py``):

* ``MIGRATIONS``: the SQL that makes the schema, one step per version.  ``MIGRATIONS[v]``
  takes a database at version ``v`` to version ``v + 1``; an empty database is at version
  0, so ``MIGRATIONS[0:]`` creates an archive and ``MIGRATIONS[v:]`` upgrades one written at
  version ``v`` (``migrate``, inside the caller's transaction).  ``SCHEMA_VERSION`` is the
  number of steps.  A step is added, never edited: a database of every older version must
  still reach the current one (``tests/test_store_files.py``);
* ``schema_version`` and ``check_schema``: a database is a store only if its schema objects
  are exactly those ``MIGRATIONS`` makes for the version it records (one of
  ``READABLE_VERSIONS``); no trigger, view, index or table of anyone else's comes along;
* ``VALUE_TABLE_KEY``, the setting that holds the value table sent with the active blocks;
* the embedding widths a store's rows may have (``WIDTH_KEY``, ``EMBEDDING_DTYPES``,
  ``DEFAULT_WIDTH``, ``LEGACY_WIDTH``) and ``BLOCK_COLUMNS``, the columns of a block's row in
  the order of ``Block.to_row``.

The versions: 1, the tables ``settings``, ``active``, ``archive`` and ``compactions``;
2, the ``deleted`` blocks and the log of ``deletions``; 3, no new table: every archive that
holds rows names their width (one written before widths were recorded names float64).
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcValueError

#: the width an archive's embeddings had before widths were recorded: float64, little-endian
LEGACY_WIDTH = np.dtype("<f8")
#: the setting that names the width (``Archive.width``), and the widths a store may keep
WIDTH_KEY = "embedding_dtype"
EMBEDDING_DTYPES = ("float16", "float32", "float64")
#: the width of a new archive unless another is asked for (an encoder's rows hold no more)
DEFAULT_WIDTH = np.dtype(np.float32)

#: the setting that holds the value table the last compaction sent (``value_table.stored``; none without one),
#: so a store opened again, loaded, or rolled back sends what it sent then
VALUE_TABLE_KEY = "value_table"
#: the columns of a block's row in ``active``, ``archive`` and ``deleted``, in ``Block.to_row`` order
BLOCK_COLUMNS = "seq, id, text, cost, embedding, depends_on, binds, uses, pinned, meta"
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

#: ``MIGRATIONS[v]``: the ``;``-separated statements that take a database at version ``v`` to ``v + 1``
MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: settings, the active blocks, the archived ones and the compaction log
    f"""
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE active ({_BLOCK_SCHEMA});
CREATE TABLE archive ({_BLOCK_SCHEMA},
    compaction INTEGER NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE compactions (
    number INTEGER PRIMARY KEY,
    query TEXT NOT NULL,
    budget INTEGER NOT NULL,
    policy TEXT NOT NULL,
    kept INTEGER NOT NULL,
    evicted INTEGER NOT NULL,
    used INTEGER NOT NULL
);
""",
    # 1 -> 2: deleted blocks (with the compaction and reason that had archived them, if any)
    # and the log of deletions
    f"""
CREATE TABLE deleted ({_BLOCK_SCHEMA},
    deletion INTEGER NOT NULL,
    compaction INTEGER,
    reason TEXT
);
CREATE TABLE deletions (
    number INTEGER PRIMARY KEY,
    operation TEXT NOT NULL,
    blocks INTEGER NOT NULL
);
""",
    # 2 -> 3: an archive that holds rows but names no width was written before widths were
    # recorded, in float64; an empty one gets the width its first store asks for
    f"""
INSERT INTO settings (key, value) SELECT '{WIDTH_KEY}', '{LEGACY_WIDTH.name}'
WHERE NOT EXISTS (SELECT 1 FROM settings WHERE key = '{WIDTH_KEY}')
AND (EXISTS (SELECT 1 FROM active) OR EXISTS (SELECT 1 FROM archive) OR EXISTS (SELECT 1 FROM deleted));
""",
)
SCHEMA_VERSION = len(MIGRATIONS)
#: the schema versions a store reads (older ones are upgraded when opened for writing)
READABLE_VERSIONS = tuple(range(1, SCHEMA_VERSION + 1))


def migrate(conn: sqlite3.Connection, version: int, target: int = SCHEMA_VERSION) -> None:
    """Take a database at schema ``version`` (0: empty) to ``target``, and record ``target``.

    Runs ``MIGRATIONS[version:target]`` in order, inside the caller's transaction, so that
    a database is upgraded all the way or not at all.
    """
    if not 0 <= version <= target <= SCHEMA_VERSION:
        raise DsgcValueError(f"no migration from schema version {version} to {target} (current: {SCHEMA_VERSION})")
    for script in MIGRATIONS[version:target]:
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('schema_version', ?)", (str(target),))


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The schema version a store database records, if it is one of ``READABLE_VERSIONS``."""
    recorded = _recorded_version(conn)
    readable = {str(v): v for v in READABLE_VERSIONS}
    return readable.get(recorded) if isinstance(recorded, str) else None


def _recorded_version(conn: sqlite3.Connection) -> Any:
    """The raw ``schema_version`` setting (None without one, or without a settings table)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'").fetchone():
        return None
    row = conn.execute("SELECT value FROM settings WHERE key = 'schema_version'").fetchone()
    return None if row is None else row[0]


def schema_objects(conn: sqlite3.Connection) -> set[tuple]:
    """Every schema object of the database: ``(type, name, table, sql)`` rows of ``sqlite_master``."""
    return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


@functools.cache
def _expected_objects(version: int = SCHEMA_VERSION) -> frozenset[tuple]:
    """The schema objects ``migrate`` makes for ``version`` (tables and their automatic indexes)."""
    conn = sqlite3.connect(":memory:")
    try:
        migrate(conn, 0, version)
        return frozenset(schema_objects(conn))
    finally:
        conn.close()


def check_schema(conn: sqlite3.Connection, origin: str) -> None:
    """Raise ``ValueError`` unless the database holds exactly a store's schema objects and version.

    Exactly: a trigger, view, index or table the store does not create would run or be kept
    with the data (a trigger runs on every write), so any of them refuses the database.  The
    objects expected are those of the version the database records (one of
    ``READABLE_VERSIONS``; any other version is refused).
    """
    version = schema_version(conn)
    found, expected = schema_objects(conn), _expected_objects(version or SCHEMA_VERSION)
    ours = {(kind, name) for kind, name, _, _ in expected}
    foreign = sorted(
        f"{kind} {name!r} on {table!r}" for kind, name, table, _ in found - expected if (kind, name) not in ours
    )
    if foreign:
        raise DsgcValueError(
            f"{origin!r} is not a dsgc store database: it holds schema objects the store does not create: {foreign}"
        )
    present = {(kind, name) for kind, name, _, _ in found}
    missing = sorted(name for kind, name, _, _ in expected if kind == "table" and (kind, name) not in present)
    if missing:
        raise DsgcValueError(f"{origin!r} is not a dsgc store database: no table(s) {missing}")
    altered = sorted(f"{kind} {name!r}" for kind, name, _, _ in found - expected)
    if altered:
        raise DsgcValueError(
            f"{origin!r} is not a dsgc store database: {altered} defined otherwise than the store does"
        )
    if version is None:
        recorded = _recorded_version(conn)
        raise DsgcValueError(
            f"archive {origin!r} has schema version {recorded}, expected one of {list(READABLE_VERSIONS)}"
        )
