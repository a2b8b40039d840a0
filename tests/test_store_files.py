"""Which files a store opens, loads and saves onto, and what it refuses.

A database is an archive or a loadable snapshot only if its schema objects are exactly the
store's (no trigger, view, index or table of anyone else's: loading an untrusted file yields
data, never code) with the store's schema version; another program's database is refused
untouched, byte for byte.  Snapshots load from read-only storage.  ``save`` never writes
onto the store's own archive, whatever name reaches it.  Errors name their cause: locked,
permission, not a database, another schema.

The campaigns (``test_fuzz_*``): random foreign schema objects on a saved store, and every
kind of snapshot file on read-only storage.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast import ArchiveLockedError
from dsgc_fast.memory import _access as _archive_access
from dsgc_fast.memory.schema import SCHEMA_VERSION, WIDTH_KEY, check_schema, migrate, schema_objects, schema_version
from dsgc_fast.memory.store import MemoryStore

from ._cases import examples
from ._store_state import block_states

D = 4
DATA = Path(__file__).parent / "data"


def encoder(texts):
    return np.ones((len(texts), D))


def build(archive, n: int = 12) -> MemoryStore:
    """A store with binds, uses, dependencies, meta and one compaction (explicit embeddings)."""
    rng = np.random.default_rng(n)
    store = MemoryStore(encoder=encoder, archive=archive)
    for i in range(n):
        store.add(
            f"block {i} kyc é 雪",
            embedding=rng.normal(size=D),
            cost=int(rng.integers(1, 6)),
            depends_on=[f"b{i - 1}"] if i % 2 else [],
            binds={f"r{i % 3}": f"v{i}"} if i % 4 == 0 else None,
            uses=[f"r{(i + 1) % 3}"] if i % 3 == 0 else [],
            meta={"i": i},
        )
    store.compact(rng.normal(size=D), budget=store.used // 2)
    return store


def files(folder) -> dict[str, bytes]:
    """Every file in ``folder`` with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A save of a file-backed store, and what it holds."""
    root = tmp_path_factory.mktemp("files")
    store = build(root / "archive.db")
    store.save(root / "saved.db")
    want = block_states(store)
    store.close()
    return root / "saved.db", want


def open_both(path):
    """Open ``path`` both ways: load it, and use it as an archive."""
    yield "load", lambda: MemoryStore.load(path, encoder=encoder)
    yield "open", lambda: MemoryStore(encoder=encoder, archive=path)


# -- foreign schema objects and other programs' databases ------------------------------------
def test_a_snapshot_with_a_trigger_is_refused(saved, tmp_path):
    """Regression: ``load`` accepted a file with an SQL trigger (the schema check compared
    table columns only), which then ran on every write: here it empties the archive table."""
    path = tmp_path / "store.db"
    shutil.copy(saved[0], path)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TRIGGER wipe AFTER INSERT ON active BEGIN DELETE FROM archive; END")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for how, opener in open_both(path):
        with pytest.raises(ValueError, match=r"schema objects the store does not create: \[\"trigger 'wipe'") as err:
            opener()
        assert str(path) in str(err.value), how
    assert path.read_bytes() == before


def test_another_programs_database_is_refused_untouched(tmp_path):
    """Regression: ``MemoryStore(archive=...)`` on another program's SQLite database added
    the store's four tables and switched the file to write-ahead logging."""
    path = tmp_path / "notes.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {i}",) for i in range(50)])
    conn.commit()
    conn.close()
    before = files(tmp_path)
    for how, opener in reversed(list(open_both(path))):
        with pytest.raises(ValueError, match="is not a dsgc store database") as err:
            opener()
        assert files(tmp_path) == before, how  # byte-identical, nothing left beside it (no -wal, -shm, -lock)
        assert str(path) in str(err.value) and "table 'notes'" in str(err.value), how


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",  # a partial store
        "PRAGMA journal_mode=WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)",
        "CREATE TABLE t (x); CREATE VIEW v AS SELECT * FROM t",
    ],
)
def test_other_databases_are_refused_byte_for_byte(tmp_path, sql):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.close()
    before = files(tmp_path)
    for _, opener in open_both(path):
        with pytest.raises(ValueError, match="is not a dsgc store database"):
            opener()
        assert files(tmp_path) == before


def test_an_empty_file_becomes_an_archive(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    store = MemoryStore(encoder=encoder, archive=path)
    store.add("x", embedding=np.ones(D))
    store.close()
    assert MemoryStore(encoder=encoder, archive=path).ids() == ["b0"]


def test_a_store_written_by_the_first_schema_version_still_opens_and_loads(tmp_path):
    """``tests/data/store-v1.db``: an archive written (and closed, in WAL mode) before the
    schema check became exact; nothing already archived may become unreadable."""
    for how in ("open", "load"):
        path = tmp_path / how / "store-v1.db"
        path.parent.mkdir()
        shutil.copy(DATA / "store-v1.db", path)
        store = MemoryStore.load(path, encoder=encoder) if how == "load" else MemoryStore(encoder=encoder, archive=path)
        assert store.ids() == ["sys", "t1", "q"] and store.archived_ids() == ["n0", "n1", "n2", "n3"]
        assert store.get("t1").binds == {"that account": "8841-C"} and store.get("n2").text == "kyc note 2 é 雪"
        store.recall(["n1"])
        store.add("a new turn", id="t2", depends_on=["n1"], embedding=np.ones(D))
        store.close()


#: the first schema version at which every archive that holds rows names their width
WIDTH_RECORDED = 3


def at_version(source: Path, path: Path, version: int) -> None:
    """Write at ``path`` the database schema ``version`` would hold ``source``'s rows in.

    The tables are those ``MIGRATIONS[:version]`` makes; every table of ``source`` that
    exists at ``version`` is copied row for row, and the settings without the schema
    version (and, before ``WIDTH_RECORDED``, without the width, which was float64 then).
    """
    conn = sqlite3.connect(path)
    migrate(conn, 0, version)
    conn.execute("ATTACH DATABASE ? AS source", (str(source),))
    tables = [r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")]
    for table in tables:
        if table != "settings":
            conn.execute(f"INSERT INTO main.{table} SELECT * FROM source.{table}")
    left_out = ["schema_version"] + ([WIDTH_KEY] if version < WIDTH_RECORDED else [])
    conn.execute(
        f"INSERT INTO main.settings SELECT * FROM source.settings WHERE key NOT IN ({', '.join('?' * len(left_out))})",
        left_out,
    )
    conn.commit()
    conn.execute("DETACH DATABASE source")
    conn.close()


def schema_of(path: Path) -> tuple[int | None, str | None, set[tuple]]:
    """The schema version, width setting and schema objects of the database at ``path`` (checked)."""
    conn = sqlite3.connect(path)
    try:
        check_schema(conn, str(path))
        width = conn.execute("SELECT value FROM settings WHERE key = ?", (WIDTH_KEY,)).fetchone()
        return schema_version(conn), None if width is None else width[0], schema_objects(conn)
    finally:
        conn.close()


def compactions(path: Path) -> list[tuple]:
    """The compaction log of the database at ``path``."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM compactions ORDER BY number").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_every_migration_from_every_version(tmp_path, version):
    """A store written at every older schema version opens and loads with every block, log
    entry and deletion it holds, its embeddings read in the width they were written in; the
    archive opened is at the current version with exactly the current schema objects, and
    goes on being written.  An empty database of that version gets the width asked for."""
    # float64 rows: the only width before WIDTH_RECORDED
    source = MemoryStore(encoder=encoder, archive=tmp_path / "fresh.db", embedding_dtype="float64")
    for i in range(12):
        source.add(f"turn {i} kyc", id=f"t{i}", embedding=np.full(D, i + 1.0), binds={"acct": f"a{i}"}, meta={"i": i})
    source.compact(np.ones(D), budget=source.used // 3, live=["t11"])
    if version >= 2:  # deletions arrived with version 2
        source.delete(["t0", source.archived_ids()[1]])
    want = block_states(source), source.archived(), source.deleted()
    source.close()
    current = schema_of(tmp_path / "fresh.db")
    assert current[:2] == (SCHEMA_VERSION, "float64")

    old = tmp_path / f"v{version}.db"
    at_version(tmp_path / "fresh.db", old, version)
    assert schema_of(old)[0] == version
    with MemoryStore.load(old, encoder=encoder) as loaded:
        assert (block_states(loaded), loaded.archived(), loaded.deleted()) == want
        assert loaded.embedding_dtype == np.float64
    assert schema_of(old)[0] == version  # load only reads the file
    with MemoryStore(encoder=encoder, archive=old) as store:
        assert (block_states(store), store.archived(), store.deleted()) == want
        store.add("after the upgrade", id="new", depends_on=["t11"], embedding=np.ones(D))
    assert schema_of(old) == current and compactions(old) == compactions(tmp_path / "fresh.db")
    with MemoryStore(encoder=encoder, archive=old) as reopened:
        assert reopened.get("new").depends_on == ("t11",) and reopened.embedding_dtype == np.float64

    empty = tmp_path / f"empty-v{version}.db"
    conn = sqlite3.connect(empty)
    migrate(conn, 0, version)
    conn.commit()
    conn.close()
    with MemoryStore(encoder=encoder, archive=empty, embedding_dtype="float16") as store:
        assert store.embedding_dtype == np.float16 and store.total == 0
    assert schema_of(empty)[:2] == (SCHEMA_VERSION, "float16")


FOREIGN = {
    "trigger": "CREATE TRIGGER {name} {when} {event} ON {table} BEGIN DELETE FROM archive; END",
    "view": "CREATE VIEW {name} AS SELECT * FROM {table}",
    "index": "CREATE INDEX {name} ON {table} ({column})",
    "unique index": "CREATE UNIQUE INDEX {name} ON {table} ({column}, seq)",
    "partial index": "CREATE INDEX {name} ON {table} ({column}) WHERE {column} IS NOT NULL",
    "table": "CREATE TABLE {name} (x)",
    "virtual table": "CREATE VIRTUAL TABLE {name} USING fts5(body)",
    "statistics": "ANALYZE",
    "added column": "ALTER TABLE {table} ADD COLUMN {name} TEXT",
    "recreated table": "DROP TABLE compactions; CREATE TABLE compactions (number INTEGER PRIMARY KEY, query TEXT, "
    "budget INTEGER, policy TEXT, kept INTEGER, evicted INTEGER, used INTEGER CHECK (used >= 0))",
    "schema version": "UPDATE settings SET value = '{version}' WHERE key = 'schema_version'",
}
TABLES = {"active": "text", "archive": "reason", "settings": "value", "compactions": "query"}


@st.composite
def foreign_objects(draw) -> list[str]:
    """One to three statements adding schema objects the store does not create."""
    out = []
    for kind in draw(st.lists(st.sampled_from(sorted(FOREIGN)), min_size=1, max_size=3, unique=True)):
        table = draw(st.sampled_from(sorted(TABLES) if kind not in ("unique index",) else ["active", "archive"]))
        name = draw(st.sampled_from(["x", "wipe", "active_text", "Ünïcode", "two words", "select"]))
        out.append(
            FOREIGN[kind].format(
                name=f'"{name}{len(out)}"',
                table=table,
                column=TABLES[table],
                when=draw(st.sampled_from(["BEFORE", "AFTER"])),
                event=draw(st.sampled_from(["INSERT", "DELETE", "UPDATE"])),
                version=draw(st.sampled_from(["0", "1", str(SCHEMA_VERSION + 1), "2.0", " 2", "abc"])),
            )
        )
    return out


@given(statements=foreign_objects())
@settings(max_examples=examples(0.5))
def test_fuzz_store_foreign_schema_objects_are_refused_untouched(saved, tmp_path_factory, statements):
    """Any trigger, view, index, table, virtual table, statistics table, altered table or
    other schema version on a saved store: both ways of opening refuse it with a ValueError
    naming the file, and leave the folder byte-identical."""
    folder = tmp_path_factory.mktemp("foreign")
    path = folder / "store.db"
    shutil.copy(saved[0], path)
    conn = sqlite3.connect(path)
    conn.executescript(";\n".join(statements))
    conn.close()
    before = files(folder)
    for how, opener in open_both(path):
        with pytest.raises(ValueError) as err:
            opener()
        assert str(path) in str(err.value), (how, statements)
        assert "dsgc store database" in str(err.value) or "schema version" in str(err.value), err.value
        assert files(folder) == before, (how, statements)


# -- read-only storage -------------------------------------------------------------------
@contextlib.contextmanager
def read_only_folder(sources: dict[str, Path], file_mode: int = 0o444):
    """A folder holding copies of ``sources`` (name -> file) that this process cannot write.

    As root (which may write anything) the process takes the effective user id of
    ``nobody`` inside the block; otherwise the folder and files are simply made read-only.
    """
    folder = Path(tempfile.mkdtemp(prefix="dsgc-ro-"))
    try:
        for name, source in sources.items():
            shutil.copy(source, folder / name)
            os.chmod(folder / name, file_mode)
        os.chmod(folder, 0o555)
        if os.geteuid() == 0:
            os.seteuid(65534)
        try:
            yield folder
        finally:
            if os.getuid() == 0:
                os.seteuid(0)
    finally:
        os.chmod(folder, 0o700)
        shutil.rmtree(folder)


def test_a_snapshot_of_a_file_backed_store_loads_from_read_only_storage(saved, tmp_path):
    """Regression: a file-backed store's snapshot was a write-ahead-log file, which SQLite
    cannot read where it cannot create the log's index: ``load`` failed on read-only storage
    and said the file "is not a dsgc store database"."""
    path, want = saved
    assert path.read_bytes()[18:20] == b"\x01\x01"  # rollback-journal mode
    wal = tmp_path / "wal.db"  # the same store as an earlier version saved it: a WAL-mode file
    shutil.copy(path, wal)
    sqlite3.connect(wal).execute("PRAGMA journal_mode=WAL").connection.close()
    assert wal.read_bytes()[18:20] == b"\x02\x02"
    with read_only_folder({"saved.db": path, "wal.db": wal}) as folder:
        before = files(folder)
        loaded = [block_states(MemoryStore.load(folder / name, encoder=encoder)) for name in ("saved.db", "wal.db")]
        assert files(folder) == before
    assert loaded == [want, want]


def test_unreadable_and_unwritable_files_say_so(saved, tmp_path):
    with read_only_folder({"saved.db": saved[0]}) as folder:
        with pytest.raises(PermissionError, match="read-only storage or no write permission"):
            MemoryStore(encoder=encoder, archive=folder / "saved.db")
        with pytest.raises(PermissionError, match="read-only storage or no write permission"):
            MemoryStore(encoder=encoder, archive=folder / "new.db")
    with read_only_folder({"saved.db": saved[0]}, file_mode=0) as folder:
        with pytest.raises(PermissionError, match="no permission to read"):
            MemoryStore.load(folder / "saved.db", encoder=encoder)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    shutil.copy(saved[0], hidden / "saved.db")
    os.chmod(hidden, 0)
    try:
        with read_only_folder({}):
            with pytest.raises(PermissionError):  # not "no saved store": a folder on the way is closed
                MemoryStore.load(hidden / "saved.db", encoder=encoder)
    finally:
        os.chmod(hidden, 0o700)


def test_a_locked_database_is_reported_as_locked(saved, tmp_path, monkeypatch):
    """A database another connection holds locked is "locked", never "not a dsgc store
    database" or "corrupt"."""
    monkeypatch.setattr(_archive_access, "LOCK_TIMEOUT", 0.1)
    path = tmp_path / "store.db"
    shutil.copy(saved[0], path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    for how, opener in open_both(path):
        with pytest.raises(ArchiveLockedError, match="locked by another connection") as err:
            opener()
        assert str(path) in str(err.value), how
    holder.rollback()
    holder.close()
    assert block_states(MemoryStore.load(path, encoder=encoder)) == saved[1]


def live_archive_copy(folder: Path, name: str) -> dict:
    """``folder/name`` and its ``-wal``: a copy of an open archive whose commits are still in the log."""
    store = build(folder / f"src-{name}", n=9)
    shutil.copy(folder / f"src-{name}", folder / name)
    shutil.copy(folder / f"src-{name}-wal", folder / f"{name}-wal")
    want = block_states(store)
    store.close()
    return want


def hot_journal(folder: Path, name: str) -> None:
    """``folder/name`` and its ``-journal``: the state a save killed midway leaves (the file
    half overwritten, the journal hot)."""
    path = folder / name
    build(":memory:", n=80).save(path)
    original = path.read_bytes()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA cache_size=1")  # spill every change to the file during the transaction
    conn.execute("BEGIN")
    conn.execute("UPDATE active SET text = text || ' changed', embedding = embedding || x''")
    conn.execute("DELETE FROM archive")
    journal, half = (folder / f"{name}-journal").read_bytes(), path.read_bytes()
    conn.rollback()
    conn.close()
    assert half != original and journal[:8] == bytes.fromhex("d9d505f920a163d7")  # written, journal finalized
    path.write_bytes(half)
    (folder / f"{name}-journal").write_bytes(journal)


@given(
    kinds=st.lists(
        st.sampled_from(["saved", "wal", "archive", "v1", "live-wal", "hot-journal"]), min_size=1, max_size=3
    )
)
@settings(max_examples=examples(0.1))
def test_fuzz_store_snapshots_on_read_only_storage(saved, tmp_path_factory, kinds):
    """Every kind of snapshot file on read-only storage: a save, a WAL-mode save, a closed
    archive, the first schema version's file, a WAL database with its log, a half-written
    save with its hot journal.  Each loads exactly, or (log or journal beside it) raises a
    PermissionError that names the files and the read-only storage; nothing changes."""
    path, want = saved
    scratch = tmp_path_factory.mktemp("ro-sources")
    sources: dict[str, Path] = {}
    expected: dict[str, object] = {}
    for k, kind in enumerate(kinds):
        name = f"{k}-{kind}.db"
        if kind in ("saved", "wal"):
            shutil.copy(path, scratch / name)
            if kind == "wal":
                sqlite3.connect(scratch / name).execute("PRAGMA journal_mode=WAL").connection.close()
            expected[name] = want
        elif kind == "archive":
            store = build(scratch / name, n=7)
            expected[name] = block_states(store)
            store.close()
        elif kind == "v1":
            shutil.copy(DATA / "store-v1.db", scratch / name)
            expected[name] = ["sys", "t1", "q"]
        elif kind == "live-wal":
            live_archive_copy(scratch, name)
            sources[f"{name}-wal"] = scratch / f"{name}-wal"
            expected[name] = "-wal"
        else:
            hot_journal(scratch, name)
            sources[f"{name}-journal"] = scratch / f"{name}-journal"
            expected[name] = "-journal"
        sources[name] = scratch / name
    with read_only_folder(sources) as folder:
        before = files(folder)
        for name, want_here in expected.items():
            if isinstance(want_here, str):
                with pytest.raises(PermissionError, match=f"read-only storage with .*{want_here}"):
                    MemoryStore.load(folder / name, encoder=encoder)
                continue
            store = MemoryStore.load(folder / name, encoder=encoder)
            assert (store.ids() if isinstance(want_here, list) else block_states(store)) == want_here, name
            store.close()
        assert files(folder) == before


# -- save never writes onto its own archive ---------------------------------------------
def test_save_onto_the_own_archive_under_another_name_is_refused(tmp_path, monkeypatch):
    """Regression: a symbolic link, a hard link or a ``file:`` URI naming the store's own
    archive passed the check (it compared absolute paths) and the store was backed up onto
    itself."""
    path = tmp_path / "store.db"
    store = build(path)
    want = block_states(store)
    (tmp_path / "link.db").symlink_to(path)
    os.link(path, tmp_path / "hard.db")
    monkeypatch.chdir(tmp_path)
    names = [
        tmp_path / "link.db",
        tmp_path / "hard.db",
        "file:store.db",
        f"file:{urllib.request.pathname2url(str(path))}",
        f"file://localhost{urllib.request.pathname2url(str(path))}",
        f"file:{urllib.request.pathname2url(str(tmp_path / 'sub' / '..' / 'store.db'))}",
        "./store.db",
    ]
    (tmp_path / "sub").mkdir()
    for name in names:
        with pytest.raises(ValueError, match="onto its own archive file"):
            store.save(name)
    os.unlink(tmp_path / "hard.db")
    store.add("still writable", embedding=np.ones(D))
    store.close()
    reopened = MemoryStore(encoder=encoder, archive=path)
    assert {k: v for k, v in block_states(reopened).items() if k in want} == want


def test_file_uris_name_files_and_parameters_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = MemoryStore(encoder=encoder, archive="file:uri%20store.db")
    store.add("x", embedding=np.ones(D))
    store.save("file:copy%3F.db")  # '?' quoted: a file name, not a query
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["copy?.db", "uri store.db"]
    for uri in ("file:x.db?mode=memory", "file://otherhost/x.db", "file:x.db#f"):
        with pytest.raises(ValueError, match="only plain file: URIs"):
            MemoryStore(encoder=encoder, archive=uri)
    assert MemoryStore(encoder=encoder, archive="file::memory:").archive_path == ":memory:"
