"""One writer per archive file: a second store is refused, readers are not, no lock goes stale.

A second ``MemoryStore`` on an open archive file -- in the same process or another, under
the same path, a symbolic link or a ``file:`` URI -- raises ``ArchiveLockedError``; a file
with several hard links is refused.  ``MemoryStore.load`` of a live archive reads its last
commit.  The lock ends with its store (``close``, garbage collection) and with its process
(SIGKILL included); a forked child neither inherits it nor writes through its parent's store.

The campaign (``test_fuzz_*``): two processes hammer one archive file (open, add in groups,
compact, recall, close) while a third loads it over and over; every load sees whole groups,
and afterwards the archive opens with every block exactly once, text intact.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

from dsgc_fast import ArchiveLockedError
from dsgc_fast.memory.store import MemoryStore

from ._cases import examples

D = 4


def encoder(texts):
    return np.ones((len(texts), D))


def test_a_second_store_on_an_open_archive_file_is_refused(tmp_path):
    """Regression: two stores on one file both wrote, committing duplicate block sequence
    numbers; the archive then never opened again ("block seq 3 out of order")."""
    path = tmp_path / "store.db"
    first = MemoryStore(encoder=encoder, archive=path)
    first.add("one", id="a", embedding=np.ones(D))
    (tmp_path / "link.db").symlink_to(path)
    for name in (path, str(path), tmp_path / "link.db", f"file:{urllib.request.pathname2url(str(path))}"):
        with pytest.raises(ArchiveLockedError, match="one writer at a time"):
            MemoryStore(encoder=encoder, archive=name)
    assert MemoryStore.load(path, encoder=encoder).ids() == ["a"]  # a reader in the same process
    first.add("two", id="b", embedding=np.ones(D))
    first.compact(np.ones(D), budget=1)
    first.close()
    second = MemoryStore(encoder=encoder, archive=path)
    assert sorted(second.ids() + second.archived_ids()) == ["a", "b"] and len(second.archived_ids()) == 1
    second.add("three", id="c", embedding=np.ones(D))
    del second  # dropped without close: the lock goes with it
    third = MemoryStore(encoder=encoder, archive=path)
    assert third.total == 3 and third.ids()[-1] == "c"


def test_a_file_with_several_hard_links_is_refused(tmp_path):
    path = tmp_path / "store.db"
    MemoryStore(encoder=encoder, archive=path).close()
    os.link(path, tmp_path / "other-name.db")
    for name in (path, tmp_path / "other-name.db"):
        with pytest.raises(ValueError, match="2 hard links"):
            MemoryStore(encoder=encoder, archive=name)
    os.unlink(tmp_path / "other-name.db")
    MemoryStore(encoder=encoder, archive=path).close()


def test_save_onto_another_open_stores_archive_is_refused(tmp_path):
    live = MemoryStore(encoder=encoder, archive=tmp_path / "live.db")
    live.add("live block", embedding=np.ones(D))
    other = MemoryStore(encoder=encoder)
    other.add("other block", embedding=np.zeros(D) + 2)
    with pytest.raises(ArchiveLockedError, match="one writer at a time"):
        other.save(tmp_path / "live.db")
    live.close()
    other.save(tmp_path / "live.db")  # closed: an ordinary file to overwrite
    assert [b.text for b in MemoryStore.load(tmp_path / "live.db", encoder=encoder).blocks()] == ["other block"]


HOLDER = r"""
import sys
import numpy as np
from dsgc_fast.memory.store import MemoryStore

store = MemoryStore(encoder=lambda texts: np.ones((len(texts), 4)), archive=sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    command, _, arg = line.strip().partition(" ")
    if command == "add":
        store.add(arg, id=arg, embedding=np.ones(4))
    elif command == "close":
        store.close()
    print("done", flush=True)
"""


def test_another_process_is_refused_a_reader_is_not_and_a_killed_writer_leaves_no_lock(tmp_path):
    path = tmp_path / "store.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "ready"

        def tell(command: str) -> None:
            holder.stdin.write(command + "\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "done"

        tell("add x")
        with pytest.raises(ArchiveLockedError, match="in this process or another"):
            MemoryStore(encoder=encoder, archive=path)
        copy = MemoryStore.load(path, encoder=encoder)  # a reader of the live archive
        assert copy.ids() == ["x"]
        tell("add y")  # the writer goes on
        assert MemoryStore.load(path, encoder=encoder).ids() == ["x", "y"] and copy.ids() == ["x"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    store = MemoryStore(encoder=encoder, archive=path)  # no stale lock after SIGKILL
    assert store.ids() == ["x", "y"]
    store.close()


def test_a_forked_child_neither_inherits_the_lock_nor_writes_through_the_parents_store(tmp_path):
    """A prefork server: a store opened before the fork stays the parent's.  The child's
    writes through it are refused; once the parent closes, a child can open the archive."""
    path = tmp_path / "store.db"
    store = MemoryStore(encoder=encoder, archive=path)
    store.add("before the fork", id="a", embedding=np.ones(D))
    from_parent, to_child = os.pipe()
    from_child, to_parent = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report every outcome, then exit without running any cleanup
        outcomes = []
        try:
            os.close(to_child)
            os.close(from_child)
            for attempt in (lambda: store.add("child", embedding=np.ones(D)), lambda: MemoryStore(archive=path)):
                try:
                    attempt()
                    outcomes.append("ok")
                except (RuntimeError, ValueError) as exc:
                    outcomes.append(type(exc).__name__)
            os.write(to_parent, (json.dumps(outcomes) + "\n").encode())
            os.read(from_parent, 1)  # the parent has closed its store
            own = MemoryStore(encoder=encoder, archive=path)
            own.add("the child's own", id="c", embedding=np.ones(D))
            own.close()
            outcomes.append("opened")
        finally:
            os.write(to_parent, (json.dumps(outcomes) + "\n").encode())
            os._exit(0)
    os.close(from_parent)
    os.close(to_parent)
    reader = os.fdopen(from_child)
    assert json.loads(reader.readline()) == ["DsgcRuntimeError", "ArchiveLockedError"]
    store.close()
    os.write(to_child, b"x")
    assert json.loads(reader.readline())[-1] == "opened"
    os.waitpid(pid, 0)
    assert MemoryStore(encoder=encoder, archive=path).ids() == ["a", "c"]


WRITER = r"""
import random, sys, time
import numpy as np
from dsgc_fast import ArchiveLockedError
from dsgc_fast.memory.store import MemoryStore

path, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(name)
refused = 0
for r in range(rounds):
    while True:
        try:
            store = MemoryStore(encoder=lambda texts: np.ones((len(texts), 4)), archive=path)
            break
        except ArchiveLockedError:
            refused += 1
            time.sleep(rng.uniform(0, 0.004))
    with store.atomic():  # a group: readers see all of it or none
        for k in range(3):
            block_id = f"{name}-{r}-{k}"
            store.add(f"text of {block_id} é 雪", id=block_id, embedding=np.array([rng.random() for _ in range(4)]),
                      cost=rng.randint(1, 9), binds={f"{name}-ref": block_id} if k == 0 else None,
                      uses=[f"{name}-ref"] if k == 2 else [], depends_on=[f"{name}-{r}-0"] if k else [])
    if rng.random() < 0.5:
        store.compact(np.array([rng.random() for _ in range(4)]), budget=rng.randint(0, 60))
    if rng.random() < 0.3 and store.archived_ids():
        store.recall(rng.sample(store.archived_ids(), 1))
    store.close()
print(refused)
"""

READER = r"""
import os, sys, time
import numpy as np
from dsgc_fast.memory.store import MemoryStore

path, stop = sys.argv[1], sys.argv[2]
loads = 0
while not os.path.exists(stop) or loads == 0:
    try:
        store = MemoryStore.load(path, encoder=lambda texts: np.ones((len(texts), 4)))
    except FileNotFoundError:
        continue
    except ValueError as exc:  # the first writer has created the file, not yet the store
        if loads or "no table(s)" not in str(exc):
            raise
        continue
    ids = store.ids() + store.archived_ids()
    groups = {}
    for block_id in ids:
        groups.setdefault(block_id.rsplit("-", 1)[0], []).append(block_id)
    assert all(len(g) == 3 for g in groups.values()), groups
    assert len(ids) == len(set(ids)) == store.total
    store.close()
    loads += 1
    time.sleep(0.01)  # leave the two cores to the writers
print(loads)
"""


def test_fuzz_two_processes_hammering_one_archive_then_every_block_is_there_once(tmp_path):
    """Two writer processes take turns on one file (each round: open, add a group of three
    blocks, maybe compact and recall, close) while a reader loads it; ``examples(0.1)``
    rounds each (10 in ``make test``, 200 under the long profile)."""
    path = tmp_path / "shared.db"
    rounds = examples(0.1)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, str(rounds)], stdout=subprocess.PIPE, text=True
        )
        for name in ("p", "q")
    ]
    stop = tmp_path / "writers-done"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(stop)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    refusals = [int(w.communicate(timeout=600)[0]) for w in writers]
    stop.touch()
    loads, errors = reader.communicate(timeout=600)
    assert all(w.returncode == 0 for w in writers) and reader.returncode == 0, errors
    assert int(loads) > 0
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = MemoryStore(encoder=encoder, archive=path)
    want = {f"{name}-{r}-{k}" for name in ("p", "q") for r in range(rounds) for k in range(3)}
    ids = store.ids() + store.archived_ids()
    assert len(ids) == len(want) == store.total and set(ids) == want
    store.recall(store.archived_ids())
    assert all(store.get(i).text == f"text of {i} é 雪" for i in want)
    assert sorted(store.get(i).seq for i in want) == list(range(len(want)))
    print(f"refused opens: {refusals}, loads: {loads.strip()}")
