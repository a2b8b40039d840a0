"""The in-memory archive: SQLite's ``memdb`` while small, a plain ``:memory:`` database past ``MEMDB_SPILL``."""

from __future__ import annotations

import os
import sqlite3

import pytest

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory import _access as _archive_access
from dsgc_fast.memory import archive
from dsgc_fast.memory.store import MemoryStore

from ._store_state import block_states

ENC = LexicalEncoder()

pytestmark = pytest.mark.skipif(
    not _archive_access.memory_connection()[1], reason="this SQLite has no memdb VFS (the store uses :memory:)"
)


def fill(store: MemoryStore, count: int, start: int = 0) -> None:
    """Blocks b<start> .. in one group (one transaction)."""
    with store.atomic():
        for i in range(start, start + count):
            store.add(f"block {i} holds the order {1000 + i} " + "x" * 300, id=f"b{i}")


def test_a_new_in_memory_store_is_in_memdb_private_to_its_store_and_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = MemoryStore(encoder=ENC), MemoryStore(encoder=ENC)
    assert first._archive._memdb_pages and second._archive._memdb_pages
    first.add("only the first store holds this", id="a")
    fill(first, 10)
    first.compact("order 1002", budget=first.get("b2").cost)
    assert first.has("a") and not second.has("a") and (first.total, second.total) == (11, 0)
    assert os.listdir(tmp_path) == []  # no database file, no journal
    first.close()
    second.close()


def test_the_archive_leaves_memdb_past_the_spill_size_and_keeps_every_block(monkeypatch):
    monkeypatch.setattr(archive, "MEMDB_SPILL", 64 << 10)
    monkeypatch.setattr(_archive_access, "MEMDB_SPILL", 64 << 10)
    store = MemoryStore(encoder=ENC)
    fill(store, 40)
    assert store._archive._memdb_pages  # measured at the commit: the next transaction moves it
    store.compact("order 1003", budget=store.get("b3").cost)
    assert not store._archive._memdb_pages
    before = block_states(store)
    fill(store, 40, start=40)  # the plain in-memory database goes on taking writes
    assert {k: v for k, v in block_states(store).items() if k in before} == before
    assert store.total == 80 and len(store.archived_ids()) == 39
    store.close()


def test_a_group_that_outgrows_memdb_is_rolled_back_and_can_be_repeated():
    store = MemoryStore(encoder=ENC)
    fill(store, 5)
    before = block_states(store)
    conn = store._archive._conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 4}")  # stands in for memdb's 1 GiB limit
    with pytest.raises(RuntimeError, match="outgrew the in-memory archive's first database.*repeat the operation"):
        fill(store, 200, start=5)
    assert block_states(store) == before and store.total == 5  # nothing was written
    assert not store._archive._memdb_pages
    fill(store, 200, start=5)
    assert store.total == 205
    store.close()


def test_a_full_disk_in_a_nested_group_or_a_file_archive_is_not_taken_for_memdb(tmp_path):
    with MemoryStore(encoder=ENC, archive=tmp_path / "store.db") as store:
        fill(store, 5)
        conn = store._archive._conn
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        with pytest.raises(sqlite3.OperationalError, match="full"):
            fill(store, 200, start=5)
        assert store.total == 5


def test_a_saved_store_larger_than_the_spill_size_loads_into_plain_memory(tmp_path, monkeypatch):
    path = tmp_path / "saved.db"
    with MemoryStore(encoder=ENC) as store:
        fill(store, 60)
        store.compact("order 1007", budget=store.get("b7").cost)
        store.save(path)
        saved = block_states(store)
    assert os.path.getsize(path) > 64 << 10
    monkeypatch.setattr(archive, "MEMDB_SPILL", 64 << 10)
    monkeypatch.setattr(_archive_access, "MEMDB_SPILL", 64 << 10)
    loaded = MemoryStore.load(path, encoder=ENC)
    assert not loaded._archive._memdb_pages and block_states(loaded) == saved
    loaded.close()
    monkeypatch.undo()
    small = MemoryStore.load(path, encoder=ENC)
    assert small._archive._memdb_pages and block_states(small) == saved
    small.close()


def test_without_memdb_an_in_memory_archive_is_plain_memory(monkeypatch):
    monkeypatch.setattr(_archive_access, "MEMDB_URI", "file:dsgc-archive?vfs=no-such-vfs")
    with MemoryStore(encoder=ENC) as store:
        assert not store._archive._memdb_pages
        fill(store, 3)
        assert store.total == 3


def test_a_live_archive_file_in_write_ahead_log_mode_loads_into_plain_memory(tmp_path):
    path = tmp_path / "live.db"
    with MemoryStore(encoder=ENC, archive=path) as live:
        fill(live, 8)
        states = block_states(live)
        assert _archive_access.in_write_ahead_log(str(path))
        loaded = MemoryStore.load(path, encoder=ENC)  # read while its writer is open
        assert not loaded._archive._memdb_pages and block_states(loaded) == states
        loaded.close()


def test_a_forked_child_works_on_its_own_copy_of_an_in_memory_archive():
    store = MemoryStore(encoder=ENC)
    fill(store, 6)
    before = block_states(store)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then exit without running any cleanup
        try:
            fill(store, 4, start=6)
            store.compact("order 1007", budget=store.get("b7").cost)
            report = f"{store.total} {len(store.archived_ids())}"
        except BaseException as exc:  # reported to the parent
            report = repr(exc)
        finally:
            os.write(write_end, report.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        report = reader.read()
    os.waitpid(pid, 0)
    assert report == "10 9"
    assert block_states(store) == before  # the parent's archive saw none of it
    fill(store, 2, start=6)
    assert store.total == 8
    store.close()
