"""Fuzzing ``MemoryStore``: malformed ``add``/``compact``/``recall`` arguments and corrupt files.

Acceptable outcomes: a correct result, or a documented exception with a message --
``ValueError``/``TypeError`` for bad arguments, ``KeyError`` for an unknown block id,
``ReferentEvictionError`` for a budget below the pinned set -- after which the store is
exactly as it was.  A corrupt or truncated database gives ``ValueError`` naming the file, or
loads when the damage is in bytes nothing reads on opening (inside a text, say); then a later
operation may meet it and raise ``sqlite3.DatabaseError`` ("database disk image is
malformed") and change nothing.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dsgc_ref
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.block import MAX_COST
from dsgc_fast.memory.store import MemoryStore

from ._cases import examples
from .test_fuzz_core import anything, weird_floats, weird_ints

DOCUMENTED = (ValueError, TypeError, dsgc_ref.ReferentEvictionError)
D = 8
WORDS = ["account", "refund", "kyc", "ledger", "é", "雪", "🙂"]


def any_text():
    """Texts a caller might pass: any code points, lone surrogates included."""
    return st.text(max_size=12) | st.text(alphabet=st.characters(), max_size=6) | st.just("\ud800x")


def any_names():
    """Iterables of names, or not."""
    return st.one_of(st.lists(any_text(), max_size=3), any_text(), anything(), st.lists(anything(), max_size=2))


def state(store: MemoryStore) -> tuple:
    """What a failed call must leave unchanged (ids, states, costs, the compaction counter)."""
    return store.ids(), store.archived_ids(), store.used, store.total, store._archive.next_compaction()


def seeded_store(seed: int, n: int = 12) -> MemoryStore:
    """A small store with explicit d = 8 embeddings, dependencies, binds and uses."""
    rng = np.random.default_rng(seed)
    store = MemoryStore(encoder=lambda texts: np.ones((len(texts), D)))
    for i in range(n):
        store.add(
            " ".join(rng.choice(WORDS, size=4)),
            embedding=rng.normal(size=D),
            cost=int(rng.integers(0, 6)),
            depends_on=[f"b{i - 1}"] if i % 2 else [],
            binds={f"r{i % 3}": f"v{i}"} if i % 4 == 0 else None,
            uses=[f"r{(i + 1) % 3}"] if i % 3 == 0 else [],
        )
    return store


@given(
    text=st.one_of(any_text(), anything()),
    fields=st.fixed_dictionaries(
        {},
        optional={
            "id": st.one_of(any_text(), anything()),
            "depends_on": st.one_of(st.lists(st.sampled_from(["b0", "b3", "zz"]), max_size=3), any_names()),
            "binds": st.one_of(st.dictionaries(any_text(), any_text(), max_size=2), anything()),
            "uses": any_names(),
            "embedding": st.one_of(anything(), st.lists(weird_floats, min_size=D, max_size=D)),
            "cost": st.one_of(weird_ints, weird_floats, st.just(MAX_COST), st.just(MAX_COST + 1), anything()),
            "pinned": st.one_of(st.booleans(), anything()),
            "meta": st.one_of(st.dictionaries(st.text(max_size=3), weird_floats | any_text(), max_size=2), anything()),
        },
    ),
)
@settings(max_examples=examples(3))
def test_fuzz_store_add_with_garbage(text, fields):
    store = seeded_store(0)
    before = state(store)
    try:
        block_id = store.add(text, **fields)
    except DOCUMENTED as exc:
        assert str(exc)
        assert state(store) == before
        return
    block = store.get(block_id)
    assert block.text == text and block_id in store and store.total == before[3] + 1
    assert 0 <= block.cost <= MAX_COST and np.isfinite(block.embedding).all() and block.embedding.shape == (D,)
    store.compact(np.ones(D), budget=store.used)  # the store still works


@given(
    seed=st.integers(0, 2**16),
    query=st.one_of(any_text(), st.lists(any_text(), min_size=1, max_size=3), anything()),
    budget=st.one_of(weird_ints, weird_floats, st.just(2**63), st.none(), any_text()),
    live=any_names(),
    policy=st.sampled_from(["dsgc", "similarity", "no_graph", "recency", "lru", None]),
    tau=st.one_of(st.just(0.25), weird_floats),
    hops=st.one_of(st.just(1), weird_ints),
    query_weights=st.one_of(st.none(), anything()),
)
@settings(max_examples=examples(3))
def test_fuzz_store_compact_with_garbage(seed, query, budget, live, policy, tau, hops, query_weights):
    store = seeded_store(seed % 7)
    before = state(store)
    try:
        report = store.compact(query, budget, live=live, policy=policy, tau=tau, hops=hops, query_weights=query_weights)
    except (*DOCUMENTED, KeyError) as exc:
        assert str(exc)
        assert state(store) == before
        return
    kept, evicted = set(report.kept), set(report.evicted)
    assert not kept & evicted and kept | evicted == set(before[0])
    assert store.used <= int(budget)
    assert sorted(store.ids() + store.archived_ids()) == sorted(
        before[0] + before[1] + [b for b in store.ids() if b.startswith("binding-table")]
    )


@given(
    seed=st.integers(0, 100), ids=st.one_of(any_names(), st.lists(st.sampled_from(["b0", "b5", "nope"]), max_size=3))
)
@settings(max_examples=examples(2))
def test_fuzz_store_recall_get_archived_with_unknown_ids(seed, ids):
    store = seeded_store(seed)
    store.compact(np.ones(D), budget=3)
    before = state(store)
    for call in (store.recall, store.archived, lambda x: [store.get(i) for i in ([x] if isinstance(x, str) else x)]):
        try:
            call(ids)
        except (TypeError, KeyError) as exc:
            assert str(exc)
            assert state(store) == before
    assert set(store.ids()).isdisjoint(store.archived_ids())
    assert store.total == before[3]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved store file (active and archived blocks, a compaction log)."""
    path = tmp_path_factory.mktemp("fuzz-store") / "saved.db"
    store = seeded_store(3, n=60)
    store.compact(np.ones(D), budget=40)
    store.save(path)
    return path


@st.composite
def damage(draw, n: int) -> tuple:
    """How to damage an ``n``-byte file: truncate, overwrite bytes or a range, or append junk."""
    kind = draw(st.sampled_from(["truncate", "flip", "overwrite", "append"]))
    if kind == "truncate":
        return kind, draw(st.integers(0, n - 1))
    if kind == "flip":
        return kind, draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 255)), min_size=1, max_size=40))
    if kind == "overwrite":
        return kind, (draw(st.integers(0, n - 1)), draw(st.integers(1, 4096)), draw(st.binary(min_size=1, max_size=64)))
    return kind, draw(st.binary(min_size=1, max_size=5000))


def damaged(data: bytes, how: tuple) -> bytes:
    kind, arg = how
    if kind == "truncate":
        return data[:arg]
    if kind == "append":
        return data + arg
    out = bytearray(data)
    if kind == "flip":
        for at, value in arg:
            out[at] = value
    else:
        start, length, junk = arg
        out[start : start + length] = (junk * (length // len(junk) + 1))[:length]
    return bytes(out[: len(data)])


@given(how=damage(40_000))
@example(how=("flip", [(59, 4)]))  # the header's text encoding: UTF-16be (found by make fuzz)
@settings(max_examples=examples(2))
def test_fuzz_store_load_and_open_damaged_files(saved, tmp_path_factory, how):
    data = saved.read_bytes()
    assert len(data) > 40_000
    corrupted = damaged(data, how)
    path = tmp_path_factory.mktemp("damaged") / "store.db"
    for how in ("load", "open"):
        path.write_bytes(corrupted)
        try:
            store = MemoryStore.load(path) if how == "load" else MemoryStore(archive=path)
        except ValueError as exc:
            assert str(path) in str(exc)
            continue
        # the damage missed everything SQLite and the row checks read when opening
        ids = store.ids(), store.archived_ids()
        try:
            for block_id in ids[0] + ids[1]:
                assert isinstance(store.get(block_id).text, str)
            store.compact(np.ones(D), budget=10)
        except (ValueError, sqlite3.DatabaseError) as exc:
            # a damaged embedding overflowing a dot product, a row missing from a damaged table
            # (ValueError), or damage SQLite meets only now ("database disk image is malformed"):
            # the operation's transaction rolls back, the store's view stays as it was
            assert str(exc)
            assert (store.ids(), store.archived_ids()) == ids
        store.close()


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("UPDATE active SET embedding = x'00'", "buffer size"),
        ("UPDATE active SET embedding = x'000000000000f87f'", "embedding is empty or not finite"),
        ("UPDATE active SET depends_on = '[\"zz\"]' WHERE seq = (SELECT max(seq) FROM active)", "unknown dependency"),
        ("UPDATE active SET depends_on = 'not json'", "malformed"),
        ("UPDATE active SET binds = '[1]'", "expected a JSON dict"),
        ("UPDATE active SET uses = '{\"a\": 1}'", "expected a JSON list"),
        ("UPDATE active SET uses = '[5]'", "non-text"),
        ("UPDATE active SET binds = '{\"a\": 5}'", "non-text"),
        ("UPDATE active SET meta = '5'", "expected a JSON dict"),
        ("UPDATE active SET seq = seq + 1000", "out of order"),
        ("INSERT INTO archive SELECT *, 1, 'x' FROM active", "out of order"),
        ("UPDATE active SET cost = -5", "cost is negative"),
        ("UPDATE active SET cost = 'x'", "invalid literal"),
        ("UPDATE active SET cost = 9223372036854775807", "exceeds"),
        ("UPDATE active SET text = x'ff'", "text is not text"),
        ("UPDATE active SET pinned = 7", "pinned is not 0 or 1"),
        ("UPDATE active SET id = 'b0' WHERE seq = (SELECT max(seq) FROM active)", "duplicate id"),
        ("UPDATE archive SET embedding = x'0000000000000000'", "embedding has d = "),
        ("DROP TABLE compactions", "no table"),
        ("DELETE FROM settings", "schema version None"),
        ("DELETE FROM settings WHERE key = 'embedding_dtype'", "holds blocks but names no embedding_dtype"),
        ("UPDATE settings SET value = 'abc' WHERE key = 'schema_version'", "schema version abc"),
    ],
)
def test_corrupt_rows_give_a_clear_error_naming_the_file(saved, tmp_path, sql, match):
    """Regression: these used to raise KeyError/JSONDecodeError/OperationalError, load silently, or
    fail only at the next compaction."""
    path = tmp_path / "store.db"
    path.write_bytes(saved.read_bytes())
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.close()
    for opener in (MemoryStore.load, lambda p: MemoryStore(archive=p)):  # opening never repairs a damaged schema
        with pytest.raises(ValueError, match=match) as err:
            opener(path)
        assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "how",
    [
        ("overwrite", (24575, 1, b"\x00")),  # a table page: an archived row disappears
        ("overwrite", (24577, 4096, b"\x00")),
        ("flip", [(18, 3)]),  # header: file format write version 3 (read-only to SQLite)
        ("flip", [(20, 19)]),  # header: reserved bytes per page
    ],
)
@pytest.mark.parametrize("how_opened", ["load", "open"])
def test_damaged_files_found_by_the_long_campaign(saved, tmp_path, how, how_opened):
    """Regression (make fuzz): a damaged table page made ``get`` raise IndexError (the archived
    row was missing); a damaged header made ``load`` raise sqlite3 errors while recording the
    encoder.  Damage met after opening raises ``sqlite3.DatabaseError`` and changes nothing."""
    path = tmp_path / "store.db"
    path.write_bytes(damaged(saved.read_bytes(), how))
    try:
        store = MemoryStore.load(path) if how_opened == "load" else MemoryStore(archive=path)
    except ValueError as exc:
        assert str(path) in str(exc)
        return
    ids = store.ids(), store.archived_ids()
    for block_id in ids[0] + ids[1]:
        try:
            store.get(block_id)
            store.recall([block_id])
        except (ValueError, sqlite3.DatabaseError) as exc:
            assert "corrupt" in str(exc) or "malformed" in str(exc)
    store.close()


def test_load_recovers_from_a_hot_journal(saved, tmp_path):
    """Regression: a save killed midway leaves a hot journal; ``load`` used to open the file
    read-only and refuse it ("attempt to write a readonly database").  (The real kill is in
    tests/test_store_crash_save.py; here a committed-then-interrupted overwrite is staged.)"""
    path = tmp_path / "store.db"
    path.write_bytes(saved.read_bytes())
    want = MemoryStore.load(path).ids()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA cache_size=1")  # spill every change to the file during the transaction
    conn.execute("BEGIN")
    conn.execute("UPDATE active SET text = text || ' changed', embedding = embedding || x''")
    conn.execute("DELETE FROM archive")
    journal = (tmp_path / "store.db-journal").read_bytes()
    damaged_file = path.read_bytes()
    conn.rollback()
    conn.close()
    path.write_bytes(damaged_file)  # the state a SIGKILL leaves: file half new, journal hot
    (tmp_path / "store.db-journal").write_bytes(journal)
    store = MemoryStore.load(path)
    assert store.ids() == want and all(not store.get(i).text.endswith("changed") for i in want)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.add("x", cost=MAX_COST + 1), "cost must be a non-negative integer <="),
        (lambda s: s.add("x", cost=2**70), "cost must be a non-negative integer <="),
        (lambda s: s.compact("x", 2**70), "budget must be at most"),
        (lambda s: s.add("a\ud800b"), "text is not valid Unicode"),
        (lambda s: s.add("x", id="\udcff"), "id is not valid Unicode"),
        (lambda s: s.add("x", binds={"k": "\ud800"}), "not valid Unicode"),
        (lambda s: s.add("x", uses=["\ud800"]), "not valid Unicode"),
        (lambda s: s.compact("q\ud800", 5), "query is not valid Unicode"),
        (lambda s: s.add("x", depends_on=None), "depends_on must be an iterable"),
        (lambda s: s.add("x", uses=[["r"]]), "uses must hold non-empty str"),
        (lambda s: s.add("x", embedding=np.ones(256, dtype=complex)), "real numbers"),
        (lambda s: s.compact("x", 5, live=None), "live must be an iterable"),
        (lambda s: s.recall(None), "ids must be an iterable"),
        (lambda s: MemoryStore(archive="/nonexistent-dir/x.db"), "cannot open the archive"),
    ],
)
def test_bad_arguments_found_by_fuzzing_raise_named_errors(call, match):
    """Regression: these raised OverflowError from SQLite, UnicodeEncodeError after the work,
    "'NoneType' object is not iterable", or (complex) silently dropped the imaginary part."""
    store = MemoryStore(encoder=LexicalEncoder())
    store.add("first block", id="a")
    before = state(store)
    with pytest.raises((ValueError, TypeError), match=match):
        call(store)
    assert state(store) == before


class _GroupFails(Exception):
    """Raised at the end of a group that the program says fails."""


@st.composite
def group_programs(draw, depth: int = 0) -> list:
    """Steps: add, a refused add, compact, recall, or a nested group that commits or fails."""
    kinds = ["add", "add", "refused add", "compact", "recall"] + (["group"] * 2 if depth < 3 else [])
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "group":
            steps.append((kind, draw(group_programs(depth + 1)), draw(st.booleans())))
        else:
            steps.append((kind, draw(st.integers(0, 30))))
    return steps


def run_program(store: MemoryStore, steps: list, counter: list, *, skip_failing: bool) -> None:
    """Run ``steps``; with ``skip_failing`` the groups that fail and the refused adds are left out
    (what all-or-nothing at every level must leave behind)."""
    for step in steps:
        kind = step[0]
        if kind == "add":
            counter[0] += 1
            store.add(f"{WORDS[counter[0] % len(WORDS)]} kyc {counter[0]}", id=f"n{counter[0]}",
                      embedding=np.full(D, float(counter[0] % 5)), cost=step[1] % 7,
                      binds={"r": f"n{counter[0]}"} if counter[0] % 3 == 0 else None,
                      uses=["r"] if counter[0] % 4 == 0 else [])  # fmt: skip
        elif kind == "refused add" and not skip_failing:
            with pytest.raises(ValueError, match="duplicate"):
                store.add("again", id=store.ids()[0] if store.ids() else "seed")
        elif kind == "compact":
            try:
                store.compact(np.arange(D, dtype=float), budget=step[1])
            except dsgc_ref.ReferentEvictionError:
                pass
        elif kind == "recall":
            store.recall(store.archived_ids()[: step[1] % 4])
        elif kind == "group":
            _, body, fails = step
            if fails and skip_failing:
                counter[0] += _count_adds(body)  # the ids the failed group used stay unused
                continue
            try:
                with store.atomic():
                    run_program(store, body, counter, skip_failing=skip_failing)
                    if fails:
                        raise _GroupFails
            except _GroupFails:
                pass


def _count_adds(steps: list) -> int:
    return sum(1 if s[0] == "add" else _count_adds(s[1]) if s[0] == "group" else 0 for s in steps)


@given(program=group_programs(), outer=st.booleans())
@settings(max_examples=examples(0.5))
def test_fuzz_store_nested_atomic_groups_are_all_or_nothing(tmp_path_factory, program, outer):
    """Random programs of nested ``atomic()`` groups, some failing, with adds, refused adds,
    compactions and recalls inside: the store (and the database, reopened) equals the same
    program run without the failing groups and the refused adds."""
    path = tmp_path_factory.mktemp("nested") / "store.db"
    runs = []
    for skip_failing, archive in ((False, path), (True, ":memory:")):
        store = MemoryStore(encoder=lambda texts: np.ones((len(texts), D)), archive=archive)
        store.add("seed kyc", id="seed", embedding=np.ones(D), binds={"r": "seed"})
        if outer:
            with store.atomic():
                run_program(store, program, [0], skip_failing=skip_failing)
        else:
            run_program(store, program, [0], skip_failing=skip_failing)
        runs.append((full_state(store), store._archive.next_compaction()))
        store.close()
    assert runs[0] == runs[1]
    reopened = MemoryStore(encoder=lambda texts: np.ones((len(texts), D)), archive=path)
    assert (full_state(reopened), reopened._archive.next_compaction()) == runs[0]


def full_state(store: MemoryStore) -> dict:
    """Every block (active or archived) with its record, state and, if archived, why."""
    reasons = {a.block.id: (a.compaction, a.reason) for a in store.archived()}
    out = {}
    for block_id in store.ids() + store.archived_ids():
        b = store.get(block_id)
        out[block_id] = (b.text, b.cost, b.seq, b.binds, b.uses, b.embedding.tobytes(), reasons.get(block_id))
    return out
