"""A process killed with SIGKILL in the middle of a deletion leaves a consistent record.

The pattern of ``test_store_crash.py``: a child opens a copy of a store file and runs a
deletion; it is killed by itself at a chosen SQL statement inside the deletion's
transaction, or by the parent at seeded random moments of a loop that adds blocks and
truncates them again.  Afterwards the database passes SQLite's integrity check, holds every
block exactly once (active, archived or deleted) with byte-identical text, is in a state a
committed transaction leaves (before or after the whole deletion, the binders it recalls
included), and reopens as a store.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pytest

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import MemoryStore
from tests.test_store_crash import OPEN_AND_ARM, block_text, run_killed

N_BLOCKS = 240
QUERY = "did the flagged account clear kyc before the refund"
BUDGET = 6000
#: the deletion each deterministic kill interrupts: (operation, argument)
OPERATIONS = {
    # the newer binders of every referent: older, archived binders become live and return
    "delete": ("delete", [f"b{i}" for i in range(N_BLOCKS // 2, N_BLOCKS - 1, 4)]),
    "truncate_after": ("truncate_after", f"b{N_BLOCKS // 2}"),
    "clear": ("clear", None),
}

CHILD = (
    r"""
import json, os, signal, sys
path, marker, occurrence, operation, argument = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
"""
    + OPEN_AND_ARM
    + r"""
if operation == "loop":
    k = 0
    while True:
        for _ in range(5):
            store.add(f"extra block {k}: payout refund", id=f"x{k}")
            k += 1
        store.truncate_after(argument)
getattr(store, operation)(*([] if argument is None else [argument]))
os.kill(os.getpid(), signal.SIGKILL)
"""
)


def states(path) -> dict[str, str]:
    """Block id -> table, for every block in the database."""
    conn = sqlite3.connect(path)
    try:
        return {i: t for t in ("active", "archive", "deleted") for (i,) in conn.execute(f"SELECT id FROM {t}")}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A closed store file (one compaction archived part of it) and the state each deletion leaves."""
    folder = tmp_path_factory.mktemp("crash-delete")
    path = folder / "template.db"
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    for i in range(N_BLOCKS):
        binds = {f"ref{i % 11}": f"value {i}"} if i % 4 == 0 else None
        uses = [f"ref{(i + 3) % 11}"] if i % 5 == 0 else []
        store.add(block_text(i), id=f"b{i}", depends_on=[f"b{i - 1}"] if i % 3 else [], binds=binds, uses=uses)
    store.compact(QUERY, BUDGET, live=[store.ids()[-1]])
    store.close()
    before = states(path)
    assert 20 < list(before.values()).count("archive") < N_BLOCKS - 20
    after = {}
    for name, (operation, argument) in OPERATIONS.items():
        replica = folder / f"{name}.db"
        shutil.copy(path, replica)
        store = MemoryStore(encoder=LexicalEncoder(), archive=replica)
        getattr(store, operation)(*([] if argument is None else [argument]))
        store.close()
        after[name] = states(replica)
    restored = [i for i, t in after["delete"].items() if before[i] == "archive" and t == "active"]
    assert restored  # the deletion under test brings binders back from the archive
    return path, before, after


def run_child(path, operation, argument, marker="", occurrence=1, kill_after=None):
    run_killed(CHILD, [str(path), marker, str(occurrence), operation, json.dumps(argument)], kill_after)


def check_record(path, extra_prefix="x"):
    """Integrity, every template block exactly once with its text (a deleted one erased), logged
    deletions whole; returns the states."""
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = [
        (i, text, t) for t in ("active", "archive", "deleted") for i, text in conn.execute(f"SELECT id, text FROM {t}")
    ]
    ids = [i for i, _, _ in rows]
    assert len(ids) == len(set(ids))
    template = [(i, text, t) for i, text, t in rows if not i.startswith(extra_prefix)]
    assert sorted(i for i, _, _ in template) == sorted(f"b{i}" for i in range(N_BLOCKS))
    for block_id, text, table in template:
        assert text.encode() == (b"" if table == "deleted" else block_text(int(block_id[1:])).encode())
    logged = dict(conn.execute("SELECT number, blocks FROM deletions"))
    counted = dict(conn.execute("SELECT deletion, count(*) FROM deleted GROUP BY deletion"))
    assert logged == counted  # every logged deletion holds all its rows, and no row is unlogged
    conn.close()
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    found = states(path)
    assert set(store.ids()) == {i for i, t in found.items() if t == "active"}
    assert set(store.archived_ids()) == {i for i, t in found.items() if t == "archive"}
    store.recall(store.archived_ids())
    store.close()
    return found


@pytest.mark.parametrize(
    ("name", "marker", "occurrence", "survives"),
    [
        ("delete", "INSERT INTO active", 1, False),  # recalling the binders, before the deletion proper
        ("delete", "INSERT INTO deletions", 1, False),
        ("delete", "INSERT INTO deleted", 2, False),  # active rows copied, archived ones not yet
        ("delete", "DELETE FROM archive", 2, False),  # copied, half removed
        ("delete", "COMMIT", 1, False),
        ("truncate_after", "DELETE FROM active", 1, False),
        ("clear", "DELETE FROM archive", 1, False),
    ],
)
def test_kill_at_a_statement_inside_a_deletion(template, tmp_path, name, marker, occurrence, survives):
    src, before, after = template
    path = tmp_path / "store.db"
    shutil.copy(src, path)
    operation, argument = OPERATIONS[name]
    run_child(path, operation, argument, marker, occurrence)
    assert check_record(path) == (after[name] if survives else before)


def test_a_deletion_that_commits_survives_the_kill_after_it(template, tmp_path):
    src, _before, after = template
    path = tmp_path / "store.db"
    shutil.copy(src, path)
    run_child(path, *OPERATIONS["delete"])  # the child kills itself right after the deletion
    assert check_record(path) == after["delete"]


def test_kill_from_outside_while_adding_and_truncating(template, tmp_path):
    src, before, _ = template
    rng = np.random.default_rng(20261201)
    for k, delay in enumerate(rng.uniform(0.3, 1.5, size=4)):
        path = tmp_path / f"store{k}.db"
        shutil.copy(src, path)
        run_child(path, "loop", f"b{N_BLOCKS - 1}", kill_after=float(delay))
        found = check_record(path)
        assert {i: t for i, t in found.items() if not i.startswith("x")} == before
        extra = sorted((i for i, t in found.items() if i.startswith("x") and t != "deleted"), key=lambda i: int(i[1:]))
        deleted = [i for i, t in found.items() if i.startswith("x") and t == "deleted"]
        assert len(extra) <= 5 and len(deleted) % 5 == 0  # whole truncations, and at most one cycle's adds
