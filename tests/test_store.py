"""MemoryStore: add/compact/recall/save/load lose nothing; compaction equals retain; validation.

The stores here count costs with the paper's whitespace tokens (``tokenizer="whitespace"``), so
the budget arithmetic stays visible; ``test_tokenizers.py`` covers the tokenizer option.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import SessionError, add_messages
from dsgc_fast.memory.store import MemoryStore
from dsgc_ref.contract import Reason

from ._store_state import block_states

WORDS = ["account", "billing", "kyc", "charge", "refund", "payout", "merchant", "invoice", "fraud", "clear"]


def assert_partition(store: MemoryStore, texts: dict[str, str]) -> None:
    """Every block added is active or archived, exactly once, with byte-identical text."""
    active, archived = store.ids(), store.archived_ids()
    assert not set(active) & set(archived)
    assert sorted(active + archived) == sorted(texts)
    for block_id, text in texts.items():
        assert store.get(block_id).text.encode("utf-8", "surrogatepass") == text.encode("utf-8", "surrogatepass")


def assert_closed(store: MemoryStore) -> None:
    """No active block uses a referent whose newest binder (over all blocks) is archived."""
    active = set(store.ids())
    for block_id in active:
        for referent in store.get(block_id).uses:
            binder = store.binder_of(referent)
            assert binder is None or binder in active, (block_id, referent, binder)


texts_st = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30) | st.lists(
    st.sampled_from(WORDS), max_size=8
).map(" ".join)


@st.composite
def sessions(draw):
    n = draw(st.integers(1, 25))
    blocks = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), max_size=2, unique=True)) if i else []
        binds = {f"r{draw(st.integers(0, 3))}": f"v{i}"} if draw(st.booleans()) else None
        uses = draw(st.lists(st.sampled_from(["r0", "r1", "r2", "r3"]), max_size=2, unique=True))
        blocks.append((draw(texts_st), deps, binds, uses, draw(st.booleans()) and i == n - 1))
    return blocks


@given(
    sessions(),
    st.lists(st.tuples(st.integers(0, 80), st.sampled_from(dsgc_fast.POLICIES), st.booleans()), min_size=1, max_size=4),
)
def test_add_compact_recall_lose_nothing(session, steps):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    texts = {}
    for k, (text, deps, binds, uses, pinned) in enumerate(session):
        texts[
            store.add(text, id=f"k{k}", depends_on=[f"k{d}" for d in deps], binds=binds, uses=uses, pinned=pinned)
        ] = text
        assert_closed(store)
        if k % 7 == 6:  # compact in the middle of the session too
            try:
                store.compact("refund payout", 10)
            except dsgc_fast.ReferentEvictionError:
                pass
            assert_closed(store)
    for budget, policy, recall_some in steps:
        history_before = set(store.ids()) | set(store.archived_ids())  # compaction decides over the whole history
        try:
            report = store.compact("kyc account billing", budget, policy=policy)
        except dsgc_fast.ReferentEvictionError:
            assert_partition(store, texts)
            continue
        table = [] if report.binding_table is None else [report.binding_table.block.id]
        texts.update({t: store.get(t).text for t in table})
        assert set(report.kept) | set(report.evicted) == history_before
        assert not set(report.kept) & set(report.evicted)
        assert set(report.evicted) <= set(store.archived_ids())
        assert set(report.kept) | set(table) == set(store.ids())
        assert store.used <= budget
        assert_partition(store, texts)
        assert_closed(store)
        if recall_some:
            back = store.recall(store.archived_ids()[::2])
            assert all(b.text == texts[b.id] for b in back)
            assert_partition(store, texts)
            assert_closed(store)
    store.recall(store.archived_ids())
    assert store.archived_ids() == [] and sorted(store.ids()) == sorted(texts)


@pytest.mark.parametrize("width", [None, "float64", "float16"])
def test_compaction_equals_retain_on_the_active_blocks(width):
    """The store scores the embeddings it keeps, in its width (float32 unless told), exactly."""
    rng = np.random.default_rng(7)
    n, d = 40, 8
    given = rng.normal(size=(n, d))
    embs = given.astype(width or np.float32)
    costs = rng.integers(1, 9, size=n)
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", embedding_dtype=width)
    edges = []
    for i in range(n):
        deps = sorted({int(j) for j in rng.integers(0, i, size=2)}) if i > 1 else []
        edges += [(i, j) for j in deps]
        store.add(f"block {i}", id=f"x{i}", depends_on=[f"x{j}" for j in deps], embedding=given[i], cost=int(costs[i]))
    query = rng.normal(size=d)
    report = store.compact(query, 60, policy="dsgc", lambda_pi=1.5)
    want = dsgc_fast.retain(query, embs, costs, 60, edges=np.array(edges), lambda_pi=1.5)
    assert report.kept == [f"x{i}" for i in want.retained]
    for i in range(n):
        d_i = report.decisions[f"x{i}"]
        assert (
            d_i.reason == want.reason(i)
            and d_i.score == want.scores[i]
            and d_i.rank == int(np.flatnonzero(want.rank == i)[0]) + 1
        )
        assert d_i.relevance == want.relevance[i] and d_i.propagated == want.propagated[i]


def test_support_from_names_the_dependents():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("alpha prerequisite", id="p")
    store.add("kyc account question", id="a", depends_on=["p"])
    store.add("kyc account follow up", id="b", depends_on=["p"])
    report = store.compact("kyc account", 100)
    d = report.decisions["p"]
    assert [j for j, _ in d.support_from] == ["a", "b"] or [j for j, _ in d.support_from] == ["b", "a"]
    assert sum(r for _, r in d.support_from) == pytest.approx(d.propagated)
    assert "support from dependents" in report.explain("p")


def test_save_load_and_reopen_round_trip(tmp_path):
    path = tmp_path / "store.db"
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
    store.add("system rules for the agent", id="sys", pinned=True, meta={"role": "system", "n": [1, 2]})
    store.add("account 8841-C disputes a charge", id="t12", binds={"that account": "8841-C"})
    for k in range(6):
        store.add(f"kyc batch {k} cleared today", id=f"d{k}", depends_on=["sys"] if k % 2 else ())
    store.add("did that account clear kyc", id="t19", uses=["that account"])
    store.compact("did that account clear kyc", 20, live=["t19"])
    before = block_states(store)
    assert any(not s[-1] for s in before.values()) and any(s[-1] for s in before.values())

    store.save(tmp_path / "copy.db")
    loaded = MemoryStore.load(tmp_path / "copy.db", encoder=LexicalEncoder(), tokenizer="whitespace")
    assert block_states(loaded) == before
    store.close()
    reopened = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
    assert block_states(reopened) == before
    # both continue to work: recall, add, compact
    for s in (loaded, reopened):
        s.recall(s.archived_ids())
        s.add("a new turn about refunds", id="t20", depends_on=["t12"])
        s.compact("refunds", 30, live=["t20"])
        assert "t12" in s.ids()
    assert block_states(loaded) == block_states(reopened)


def test_load_refuses_non_store_files_and_other_encoders(tmp_path):
    bad = tmp_path / "not-a-store.db"
    sqlite3.connect(bad).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ValueError, match="not a dsgc store"):
        MemoryStore.load(bad, encoder=LexicalEncoder())
    with pytest.raises(FileNotFoundError):
        MemoryStore.load(tmp_path / "missing.db", encoder=LexicalEncoder())
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a database, just some text that is long enough to be read " * 20)
    with pytest.raises(ValueError, match="not a dsgc store"):
        MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=text_file)

    class Other:
        name = "other"

        def encode(self, texts):
            return np.ones((len(texts), 4))

    path = tmp_path / "s.db"
    MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path).add("x")
    with pytest.raises(ValueError, match="'lexical' encoder"):
        MemoryStore(encoder=Other(), archive=path)


def test_growth_keeps_order_and_edges_across_many_adds_and_recalls():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    for i in range(100):  # several capacity doublings (16 -> 128)
        store.add(f"w{i % 7} kyc" if i % 3 else f"note {i}", id=f"n{i}", depends_on=[f"n{i - 1}"] if i else ())
    store.compact("kyc", 50)
    store.recall(store.archived_ids()[::3])
    seqs = [store.get(i).seq for i in store.ids()]
    assert seqs == sorted(seqs)
    assert store.get("n57").depends_on == ("n56",)
    report = store.compact("kyc", 50)
    assert store.used <= 50 and set(report.kept) == set(store.ids())


def test_custom_tokenizer_and_callable_encoder():
    def encoder(texts):
        return np.array([[len(t), 1.0 + t.count("kyc")] for t in texts], dtype=float)

    store = MemoryStore(encoder=encoder, tokenizer=len)
    store.add("kyc kyc", id="a")
    store.add("hello", id="b")
    assert store.get("a").cost == 7 and store.get("b").cost == 5
    assert store.compact("kyc", 7).kept == ["a"]


def test_binding_table_becomes_an_active_block_that_binds_the_referents():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("system prompt for triage", id="sys", pinned=True)
    store.add(
        "account 8841-C, the one flagged last week, disputes a billing charge",
        id="t12",
        binds={"that account": "8841-C"},
    )
    store.add("did that account clear KYC?", id="t19", uses=["that account"])
    report = store.compact("did that account clear KYC?", 4 + 5 + 5, live=["t19"])
    table = report.binding_table
    assert table is not None and table.entries == [("that account", "8841-C", "t12")]
    assert table.block.text == "that account: 8841-C (block t12)" and table.block.cost == 5
    assert report.decisions["t12"].reason == Reason.TABLED and "that account" in report.decisions["t12"].why()
    assert store.ids() == ["sys", "t19", table.block.id] and store.archived_ids() == ["t12"]
    assert store.used <= 14
    assert store.binder_of("that account") == table.block.id
    # next compaction: the table is pinned through t19's use
    again = store.compact("did that account clear KYC?", 14, live=["t19"])
    assert again.decisions[table.block.id].reason == Reason.KEPT_PINNED and again.binding_table is None


def test_referent_eviction_error_changes_nothing_and_names_ids():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("system prompt for triage", id="sys", pinned=True)
    store.add("account 8841-C disputes a billing charge", id="t12", binds={"that account": "8841-C"})
    store.add("did that account clear KYC?", id="t19", uses=["that account"])
    before = block_states(store)
    with pytest.raises(dsgc_fast.ReferentEvictionError, match=r"pinned block ids \['sys', 't12', 't19'\]"):
        store.compact("kyc", 10, live=["t19"])
    assert block_states(store) == before


def test_turn_12_survives_through_the_store_only_with_referents():
    turns = [
        ("sys", "system: you are a support triage assistant for the billing team", None, ()),
        ("t11", "kyc reviews are run by the compliance team every monday", None, ()),
        ("t12", "account 8841-C, the one flagged last week, disputes a billing charge", {"that account": "8841-C"}, ()),
        ("t13", "the compliance team publishes kyc clearance results on the portal", None, ()),
        ("t14", "did the kyc clearance results for the batch clear", None, ()),
        ("t19", "did that account clear KYC?", None, ("that account",)),
    ]
    kept = {}
    for with_referents in (False, True):
        store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
        for block_id, text, binds, uses in turns:
            store.add(
                text,
                id=block_id,
                binds=binds if with_referents else None,
                uses=uses if with_referents else (),
                pinned=block_id == "sys",
            )
        kept[with_referents] = store.compact("did that account clear KYC?", 40, policy="similarity", live=["t19"])
    assert "t12" in kept[False].evicted
    assert "t12" in kept[True].kept and kept[True].decisions["t12"].chain == (("t19", "that account"),)


def test_adding_a_use_recalls_the_archived_binder_chain():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("the config file is settings.toml", id="a", binds={"the config file": "settings.toml"})
    store.add("its port constant is 8080", id="b", uses=["the config file"], binds={"the port": "8080"})
    store.add("unrelated words here", id="c")
    store.compact("unrelated words", 3)
    assert store.archived_ids() == ["a", "b"]
    store.add("which port do we use", id="q", uses=["the port"])
    assert store.ids() == ["a", "b", "c", "q"] and store.archived_ids() == []


def test_recall_brings_back_the_referent_closure():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("the config file is settings.toml", id="a", binds={"the config file": "settings.toml"})
    store.add("it sets the port constant", id="b", uses=["the config file"], binds={"the port": "8080"})
    store.add("unrelated words here", id="c")
    store.add("what port do we use", id="q", uses=[])
    store.compact("unrelated words", 3)
    assert store.archived_ids() == ["a", "b", "q"]
    back = store.recall(["b"])
    assert [x.id for x in back] == ["a", "b"] and store.ids() == ["a", "b", "c"]
    assert store.recall(["b", "c"]) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"id": "a"}, ValueError, "duplicate block id 'a'"),
        ({"depends_on": ["zz"]}, ValueError, "unknown dependency id 'zz'"),
        ({"id": "s", "depends_on": ["s"]}, ValueError, "cannot depend on itself"),
        ({"depends_on": "a"}, TypeError, "not a single str"),
        ({"cost": -1}, ValueError, "cost must be a non-negative integer"),
        ({"cost": 1.5}, ValueError, "cost must be a non-negative integer"),
        ({"meta": {"x": object()}}, TypeError, "JSON-serializable"),
        ({"binds": {"x": 1}}, TypeError, "binds must map"),
        ({"uses": "x"}, TypeError, "not a single str"),
        ({"pinned": 1}, TypeError, "pinned must be a bool"),
        ({"embedding": np.ones(3)}, ValueError, "d = 3"),
        ({"embedding": [np.nan] * 256}, ValueError, "finite"),
        ({"id": ""}, TypeError, "non-empty str"),
    ],
)
def test_add_rejects_bad_arguments_and_stays_unchanged(kwargs, error, match):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("first", id="a")
    with pytest.raises(error, match=match):
        store.add("second", **kwargs)
    assert store.ids() == ["a"] and store.total == 1


def test_compact_keeps_archived_live_roots_and_rejects_unknown_or_deleted_ones_and_bad_queries():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("one two", id="a")
    store.add("three", id="b")
    store.add("four", id="c")
    with pytest.raises(KeyError, match="'zz'"):
        store.compact("x", 10, live=["zz"])
    store.compact("three", 1)
    assert store.ids() == ["b"]
    report = store.compact("x", 3, live=["a"])  # an archived root is kept: it returns in the same transaction
    assert "a" in report.kept and "a" in store.ids() and "a" not in store.archived_ids()
    store.delete("c")
    with pytest.raises(ValueError, match="live root 'c' is deleted"):
        store.compact("x", 10, live=["c"])
    with pytest.raises(ValueError, match="query must be"):
        store.compact(np.ones((2, 2, 2)), 10)
    with pytest.raises(TypeError, match="budget"):
        store.compact("x", 1.5)


def test_query_distribution_and_empty_store():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    report = store.compact("anything", 10)
    assert report.kept == [] and report.evicted == []
    store.add("kyc account", id="a")
    store.add("billing refund", id="b")
    report = store.compact(["kyc", "refund"], 2, query_weights=[3, 1])
    assert report.kept == ["a"]


def test_report_table_and_json_name_every_block():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    for k in range(5):
        store.add(f"kyc item {k} " * (k + 1), id=f"i{k}")
    report = store.compact("kyc item", 12)
    table = report.table()
    assert table.splitlines()[0] == report.summary()
    for k in range(5):
        assert any(line.startswith(f"i{k} ") for line in table.splitlines())
    data = report.to_dict()
    assert [d["id"] for d in data["decisions"]] == [f"i{k}" for k in range(5)]
    assert data["kept"] == report.kept and data["used"] == report.used <= 12
    with pytest.raises(KeyError):
        report.explain("nope")


def test_skipped_block_names_the_unused_tokens():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("kyc kyc kyc kyc kyc", id="a")
    store.add("kyc refund one two three", id="b")
    report = store.compact("kyc", 7)
    assert report.kept == ["a"]
    assert report.decisions["b"].why() == "evicted: did not fit the budget (rank 2, cost 5; 2 tokens left unused)"


# -- atomic groups, save inside them, independent returned blocks ------------------------
def test_a_failing_group_nested_in_another_rolls_back_alone(tmp_path):
    """Regression: a refused ``add_messages`` batch inside an outer ``atomic()`` committed its
    valid records (the nested group joined the outer transaction and undid nothing)."""
    path = tmp_path / "store.db"
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
    with store.atomic():
        store.add("outer first", id="a")
        with pytest.raises(SessionError, match="message 1"):
            add_messages(store, [{"role": "user", "content": "a valid message"}, {"text": "bad", "cost": -1}])
        assert store.ids() == ["a"]
        store.add("outer second", id="c")
    assert store.ids() == ["a", "c"] and store.total == 2
    store.close()
    assert MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path).ids() == ["a", "c"]


def test_groups_nested_three_deep_are_all_or_nothing_at_every_level():
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    store.add("kyc account billing", id="base")
    with store.atomic():
        store.add("level one kyc", id="l1")
        with pytest.raises(KeyError), store.atomic():
            store.add("level two", id="l2")
            with store.atomic():
                store.add("level three", id="l3")
            store.compact("kyc", 1)  # evicts; rolled back with the group
            store.recall(["nope"])
        assert store.ids() == ["base", "l1"] and store.archived_ids() == []
        assert store._archive.next_compaction() == 1
        with store.atomic():
            store.add("level two again", id="l2b")
    with pytest.raises(RuntimeError, match="boom"), store.atomic():
        store.add("doomed", id="d")
        with store.atomic():
            store.add("doomed too", id="d2")
        raise RuntimeError("boom")
    assert store.ids() == ["base", "l1", "l2b"] and store.total == 3


def test_save_inside_atomic_is_refused_at_once(tmp_path):
    """Regression: ``save()`` inside ``atomic()`` hung forever (the backup retried its own
    locked source).  Also: a save onto, or a load from, a file another connection holds locked
    gives up after ``LOCK_TIMEOUT`` instead of retrying forever.  (A subprocess, so a
    regression fails the test instead of hanging the run.)"""
    script = f"""
import sqlite3
from dsgc_fast.memory import _access as _archive_access
from dsgc_fast.memory.store import MemoryStore
_archive_access.LOCK_TIMEOUT = 0.2
root = {str(tmp_path)!r}
for archive in (":memory:", root + "/live.db"):
    store = MemoryStore(archive=archive)
    store.add("one")
    with store.atomic():
        store.add("two")
        try:
            store.save(root + "/copy.db")
        except RuntimeError as exc:
            print("refused:", exc)
    store.save(root + "/copy.db")
    print("saved", MemoryStore.load(root + "/copy.db").total)
    store.close()
holder = sqlite3.connect(root + "/copy.db", isolation_level=None)
holder.execute("PRAGMA locking_mode=EXCLUSIVE")
holder.execute("BEGIN EXCLUSIVE")
for attempt in (lambda: MemoryStore(archive=":memory:").save(root + "/copy.db"), lambda: MemoryStore.load(root + "/copy.db")):
    try:
        attempt()
    except Exception as exc:
        print(type(exc).__name__, exc)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in lines[:4]] == ["refused", "saved 2", "refused", "saved 2"]
    assert all("inside atomic()" in line for line in lines[0:4:2])
    assert [line.split()[0] for line in lines[4:]] == ["ArchiveLockedError", "ArchiveLockedError"]
    assert all("locked" in line for line in lines[4:])


def test_returned_blocks_and_reports_share_nothing_with_the_store():
    """Regression: blocks from ``get``/``blocks``/``recall`` shared their ``binds``/``meta``
    dicts with the store, so editing them changed later compactions (and ``get``) but not the
    database; so did the binding-table block of a compaction report."""

    def build() -> MemoryStore:
        store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
        store.add("system prompt for triage", id="sys", pinned=True, meta={"role": "system", "n": [1, {"k": "v"}]})
        store.add("account 8841-C disputes a billing charge", id="t12", binds={"that account": "8841-C"})
        store.add("kyc batch notes for the week", id="k1", meta={"tags": ["kyc"]})
        store.add("did that account clear KYC?", id="t19", uses=["that account"])
        return store

    edited, untouched = build(), build()
    outcomes = []
    for store, edit in ((edited, True), (untouched, False)):
        blocks = [store.get("t12"), *store.blocks(), *store.blocks(embeddings=False)]
        report = store.compact("did that account clear KYC?", 4 + 5 + 5, live=["t19"])
        table = report.binding_table.block
        back = store.recall(["k1"]) + store.recall(["t12"])
        if edit:
            for block in blocks + back + [table]:
                block.binds.clear()
                block.meta.clear()
                if block.embedding is not None:
                    block.embedding[:] = 0.0
            blocks[0].binds["that account"] = "0000-X"
            report.binding_table.entries.clear()
        again = store.compact("did that account clear KYC?", 4 + 5 + 5, live=["t19"])
        outcomes.append(
            (
                block_states(store),
                again.kept,
                again.evicted,
                {k: d.why() for k, d in again.decisions.items()},
                store.binder_of("that account"),
            )
        )
    assert outcomes[0] == outcomes[1]
    assert edited.get("sys").meta == {"role": "system", "n": [1, {"k": "v"}]}


def test_a_closed_store_says_so(tmp_path):
    """After ``close`` every method raises ``ValueError("the store is closed")`` (reads used to
    answer from stale memory, writes raised sqlite3.ProgrammingError); ``close`` is idempotent."""
    for archive in (":memory:", tmp_path / "store.db"):
        store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=archive)
        store.add("kyc account", id="a")
        store.close()
        store.close()
        calls = [lambda s: s.ids(), len, lambda s: s.get("a"), lambda s: s.add("x"), lambda s: s.compact("kyc", 1),
                 lambda s: s.save(tmp_path / "copy.db")]  # fmt: skip
        for call in calls:
            with pytest.raises(ValueError, match="the store is closed"):
                call(store)
        with pytest.raises(ValueError, match="the store is closed"), store.atomic():
            pass


def test_a_report_is_not_changed_by_later_store_operations():
    """Regression (found while closing the aliasing class): ``report.texts`` iterated the
    store's live id map, so an ``add`` (from another thread, say) during an iteration over
    it raised "dictionary changed size during iteration"."""
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
    for k in range(4):
        store.add(f"kyc item {k}", id=f"i{k}")
    report = store.compact("kyc item", 6)
    texts = iter(report.texts)
    first = next(texts)
    store.add("a later block", id="later")
    store.recall(store.archived_ids())
    assert [first, *texts] == ["i0", "i1", "i2", "i3"] and "later" not in report.texts


def test_a_commit_that_fails_rolls_back_and_the_next_transaction_works(tmp_path):
    """A COMMIT SQLite refuses (here: a rollback-journal database a reader holds) used to leave
    the transaction open, so the next one failed with "cannot start a transaction within a
    transaction"; now the group rolls back and raises, and the archive goes on."""
    from dsgc_fast.memory.archive import Archive

    archive = Archive(tmp_path / "store.db")
    archive._conn.execute("PRAGMA journal_mode=DELETE")
    archive._conn.execute("PRAGMA busy_timeout=50")
    reader = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM settings").fetchall()  # holds a shared lock: COMMIT cannot write
    with pytest.raises(sqlite3.OperationalError, match="locked"), archive.transaction():
        archive.set_setting("k", "refused")
    reader.rollback()
    with archive.transaction():
        archive.set_setting("k", "written")
    assert archive.setting("k") == "written" and not archive._conn.in_transaction
    archive.close()
    reader.close()


def test_a_bulk_eviction_leaves_no_oversized_table_behind():
    """After a compaction keeps a few of thousands of blocks (and after a bulk delete), the
    store's map of active blocks is the size of what is left: copying or scanning it each
    turn would otherwise read every slot the old table held."""
    small = sys.getsizeof({k: None for k in range(16)})
    for shrink in ("compact", "delete"):
        store = MemoryStore(encoder=LexicalEncoder())
        with store.atomic():
            for i in range(3000):
                store.add(f"note {i} about the order {1000 + i}", id=f"n{i}")
        if shrink == "compact":
            store.compact("order 1005", budget=store.get("n5").cost * 4)
        else:
            store.delete([f"n{i}" for i in range(2990)])
        assert 0 < len(store) <= 10
        assert sys.getsizeof(store.columns.blocks) <= small
        store.close()
