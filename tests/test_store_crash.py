"""A process killed with SIGKILL in the middle of ``compact`` leaves a consistent archive.

A child process opens a file-backed store and loops compact -> recall-all with one query and
budget, so from the all-active state every compaction evicts the same set E.  It is killed
(a real SIGKILL, no cleanup) either by itself at a chosen SQL statement (deterministic: in
the middle of the archive transaction, or of a recall) or by the parent after a seeded
random delay (a compact/recall cycle takes ~70 ms here, ~44% of it inside the archive
transactions, so most of the five random kills land inside one).  Afterwards the database must pass SQLite's integrity check, hold every block
exactly once (active or archived) with byte-identical text, be in one of the two states a
committed transaction can leave (all active, or exactly E archived), and reopen as a store.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import MemoryStore

pytestmark = pytest.mark.slow  # make test-fast skips it; make test runs it

N_BLOCKS = 600
QUERY = "did the flagged account clear kyc before the refund"
BUDGET = 20000
WORDS = [
    "account",
    "refund",
    "kyc",
    "charge",
    "payout",
    "merchant",
    "invoice",
    "ledger",
    "fraud",
    "clear",
    "flagged",
    "review",
    "é",
    "ü",
    "雪",
]

#: child-side: open the store at ``path`` and SIGKILL the process at the ``occurrence``-th SQL
#: statement starting with ``marker`` (no marker: never); then print "ready"
OPEN_AND_ARM = r"""
import os, signal, sys
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import MemoryStore

store = MemoryStore(encoder=LexicalEncoder(), archive=path)
seen = 0

def trace(sql):
    global seen
    if marker and sql.lstrip().startswith(marker):
        seen += 1
        if seen == occurrence:
            os.kill(os.getpid(), signal.SIGKILL)

store._archive._conn.set_trace_callback(trace)
print("ready", flush=True)
"""

CHILD = (
    r"""
import sys
path, marker, occurrence, query, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
"""
    + OPEN_AND_ARM
    + r"""
while True:
    store.compact(query, budget, live=[store.ids()[-1]])
    store.recall(store.archived_ids())
"""
)


def block_text(i: int) -> str:
    rng = np.random.default_rng(i)
    words = rng.choice(WORDS, size=40 + i % 90)
    return f"block {i}: " + " ".join(words.tolist()) + ("\n\ttrailing  " if i % 7 == 0 else "")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A closed store file with N_BLOCKS blocks, and the set E one compaction evicts."""
    path = tmp_path_factory.mktemp("crash") / "template.db"
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    for i in range(N_BLOCKS):
        binds = {f"ref{i % 11}": f"value {i}"} if i % 4 == 0 else None
        uses = [f"ref{(i + 3) % 11}"] if i % 5 == 0 else []
        store.add(block_text(i), id=f"b{i}", depends_on=[f"b{i - 1}"] if i % 3 else [], binds=binds, uses=uses)
    store.close()
    replica = MemoryStore.load(path, encoder=LexicalEncoder())
    evicted = replica.compact(QUERY, BUDGET, live=[replica.ids()[-1]]).evicted
    assert 50 < len(evicted) < N_BLOCKS - 50
    return path, set(evicted)


def run_child(path, marker="", occurrence=1, kill_after=None):
    run_killed(CHILD, [str(path), marker, str(occurrence), QUERY, str(BUDGET)], kill_after)


def run_killed(child: str, args: list[str], kill_after: float | None = None) -> None:
    """Run ``child`` (a script that prints "ready"), kill it after ``kill_after`` s if given; it must die by SIGKILL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", child, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    if kill_after is not None:
        time.sleep(kill_after)
        proc.kill()
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()


def check_consistent(path, evicted):
    """The invariants after a crash; returns the archived id set."""
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    active = [r[0] for r in conn.execute("SELECT id FROM active")]
    archived = [r[0] for r in conn.execute("SELECT id FROM archive")]
    assert len(active) + len(archived) == N_BLOCKS
    assert sorted(active + archived) == sorted(f"b{i}" for i in range(N_BLOCKS))
    for table in ("active", "archive"):
        for block_id, text in conn.execute(f"SELECT id, text FROM {table}"):
            assert text.encode() == block_text(int(block_id[1:])).encode()
    conn.close()
    assert set(archived) in (set(), evicted)
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    assert set(store.archived_ids()) == set(archived) and len(store) == len(active)
    store.recall(store.archived_ids())
    assert len(store) == N_BLOCKS
    store.close()
    return set(archived)


@pytest.mark.parametrize(
    ("marker", "occurrence", "archived_after"),
    [
        ("INSERT INTO compactions", 1, "none"),  # first statement of the archive transaction
        ("INSERT INTO archive", 1, "none"),  # before the copy
        ("DELETE FROM active", 1, "none"),  # after the copy, before the delete
        ("COMMIT", 1, "none"),  # copied and deleted, not committed
        ("DELETE FROM archive", 1, "evicted"),  # compaction committed; killed inside the recall
        ("INSERT INTO compactions", 3, "none"),  # third compaction, after two full cycles
    ],
)
def test_kill_at_a_statement_inside_compact(template, tmp_path, marker, occurrence, archived_after):
    src, evicted = template
    path = tmp_path / "store.db"
    shutil.copy(src, path)
    run_child(path, marker, occurrence)
    assert os.path.exists(str(path) + "-wal")  # the crash left the write-ahead log behind
    archived = check_consistent(path, evicted)
    assert archived == (evicted if archived_after == "evicted" else set())


def test_kill_from_outside_at_random_moments(template, tmp_path):
    src, evicted = template
    rng = np.random.default_rng(20261130)
    for k, delay in enumerate(rng.uniform(0.05, 1.0, size=5)):
        path = tmp_path / f"store{k}.db"
        shutil.copy(src, path)
        run_child(path, kill_after=float(delay))
        check_consistent(path, evicted)
