"""A store is usable from any thread: sequentially, and from several threads at once.

Every method holds the store's lock, so concurrent calls run one at a time and each sees
the state the previous one left; an ``atomic()`` group holds the lock to its end.

The campaign (``test_fuzz_*``): random operations from four threads at once on one
file-backed store; afterwards every block added is active or archived exactly once with its
text, the active set is closed under referents, and the reopened archive equals the store.
"""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import MemoryStore
from dsgc_ref import ReferentEvictionError

from ._cases import examples
from ._store_state import block_states
from .test_store import assert_closed, assert_partition


def run_in_thread(function):
    """``function()`` in a new thread; its result, or the exception it raised."""
    out = {}

    def target():
        try:
            out["value"] = function()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=120)
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_store_works_from_another_thread(tmp_path):
    """Regression: a store made in one thread raised ``sqlite3.ProgrammingError`` ("SQLite
    objects created in a thread can only be used in that same thread") in any other."""
    for archive in (":memory:", tmp_path / "store.db"):
        store = MemoryStore(encoder=LexicalEncoder(), archive=archive)
        store.add("the config file is settings.toml", id="a", binds={"the config file": "settings.toml"})

        def work(store=store):
            store.add("which port does the config file set", id="b", uses=["the config file"])
            store.add("unrelated words here", id="c")
            report = store.compact("unrelated words", 5)
            back = store.recall(store.archived_ids())
            with store.atomic():
                store.add("one more", id="d")
            store.save(tmp_path / "copy.db")
            return report.evicted, [b.id for b in back], store.get("b").uses

        assert run_in_thread(work) == (["a", "b"], ["a", "b"], ("the config file",))
        assert store.ids() == ["a", "b", "c", "d"]
        loaded = run_in_thread(lambda: MemoryStore.load(tmp_path / "copy.db", encoder=LexicalEncoder()))
        assert loaded.ids() == ["a", "b", "c", "d"]
        run_in_thread(store.close)
        run_in_thread(loaded.close)


def test_a_group_holds_the_store_until_it_ends():
    store = MemoryStore(encoder=LexicalEncoder())
    inside, release = threading.Event(), threading.Event()
    seen = []

    def group():
        with store.atomic():
            store.add("first of the group", id="g1")
            inside.set()
            release.wait(timeout=60)
            store.add("second of the group", id="g2")

    thread = threading.Thread(target=group)
    thread.start()
    inside.wait(timeout=60)
    other = threading.Thread(target=lambda: seen.append(store.ids()))
    other.start()
    other.join(timeout=0.2)
    assert other.is_alive() and not seen  # waits for the group
    release.set()
    thread.join(timeout=60)
    other.join(timeout=60)
    assert seen == [["g1", "g2"]]


WORDS = ["account", "refund", "kyc", "ledger", "charge", "clear"]


@st.composite
def thread_programs(draw):
    """Four lists of operations, one per thread."""
    op = st.one_of(
        st.tuples(
            st.just("add"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.booleans(), st.booleans()
        ),
        st.tuples(st.just("compact"), st.integers(0, 40)),
        st.tuples(st.just("recall"), st.integers(0, 3)),
        st.tuples(st.just("read")),
        st.tuples(st.just("group"), st.integers(1, 3)),
    )
    return [draw(st.lists(op, min_size=1, max_size=12)) for _ in range(4)]


@given(programs=thread_programs())
@settings(max_examples=examples(0.1))
def test_fuzz_store_from_four_threads_at_once(tmp_path_factory, programs):
    path = tmp_path_factory.mktemp("threads") / "store.db"
    store = MemoryStore(encoder=LexicalEncoder(), archive=path)
    store.add("system rules", id="sys", pinned=True, binds={"r0": "root"})
    texts = {"sys": "system rules"}
    texts_lock = threading.Lock()
    errors = []

    def add(name: str, words: list[str], binds: bool, uses: bool) -> None:
        text = " ".join(words)
        with texts_lock:
            texts[name] = text
        store.add(text, id=name, binds={f"r{len(name) % 3}": name} if binds else None, uses=["r0"] if uses else [])

    def run(t: int, program) -> None:
        try:
            for k, step in enumerate(program):
                kind = step[0]
                if kind == "add":
                    add(f"t{t}-{k}", *step[1:])
                elif kind == "compact":
                    try:
                        store.compact("kyc account refund", step[1])
                    except ReferentEvictionError:
                        pass
                elif kind == "recall":
                    store.recall(store.archived_ids()[: step[1]])
                elif kind == "read":
                    with store.atomic():  # a group also holds the store still for a consistent read
                        for block in store.blocks(embeddings=False):
                            assert block.text == store.get(block.id).text
                        assert len(store) == len(store.ids())
                else:
                    with store.atomic():
                        for j in range(step[1]):
                            add(f"t{t}-{k}-{j}", ["group", "kyc"], False, j % 2 == 1)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t, p)) for t, p in enumerate(programs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    for block_id in store.ids() + store.archived_ids():  # binding tables made by compactions
        if block_id.startswith("binding-table"):
            texts[block_id] = store.get(block_id).text
    assert_partition(store, texts)
    assert_closed(store)
    want = block_states(store)
    store.close()
    reopened = MemoryStore(encoder=LexicalEncoder(), archive=path)
    assert block_states(reopened) == want
    reopened.close()
