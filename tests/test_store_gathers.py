"""The active graph, referent index and working ages a compaction gathers equal the ones built from scratch.

``MemoryStore._active_graph`` and ``_Referents.active_index`` gather the active blocks' part of
the store's per-block arrays in one kernel each (``kernels.graph_kernels.active_csr``,
``kernels.referents.active_links``), and ``ChatFacts.ages`` reads the working ages in one
(``kernels.chat.working_ages``).  After any sequence of adds (declared and induced edges,
binds, uses, chat tool units), compactions, recalls and deletions, they must equal
``DependencyGraph.from_edges`` over the active blocks' edges and ``ReferentIndex.from_lists``
over their uses and binds, with local referent ids ascending in the store's referent ids, and ``messages.ChatUnits``
over the active blocks.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.graph import DependencyGraph
from dsgc_fast.memory.messages import ChatUnits, add_messages, remove_messages
from dsgc_fast.memory.store import MemoryStore
from dsgc_fast.pins import ReferentIndex

D = 4
TEXTS = ["order A17 shipped", "refund for order A17", "ledger B2 closed", "see ledger B2", "hello", "A17 B2"]
REFERENTS = ["r0", "r1", "r2", "r3"]

add_op = st.tuples(
    st.just("add"),
    st.sampled_from(TEXTS),
    st.lists(st.integers(0, 40), max_size=2),
    st.lists(st.sampled_from(REFERENTS), max_size=2, unique=True),
    st.lists(st.sampled_from(REFERENTS), max_size=2, unique=True),
    st.booleans(),
)
ops = st.lists(
    st.one_of(
        add_op,
        st.tuples(st.just("chat"), st.integers(1, 2)),
        st.tuples(st.just("compact"), st.integers(0, 30)),
        st.tuples(st.just("recall"), st.integers(0, 40)),
        st.tuples(st.just("delete"), st.integers(0, 40)),
    ),
    max_size=40,
)


def _embed(texts: list[str]) -> np.ndarray:
    return np.array([[len(t) % 5 + 1.0, t.count("A") + 0.5, t.count("B") + 0.25, 1.0] for t in texts])


def _apply(store: MemoryStore, op: tuple, calls: list[int]) -> None:
    kind = op[0]
    if kind == "add":
        _, text, deps, binds, uses, induce = op
        left = store.ids() + store.archived_ids()
        depends_on = sorted({left[d % len(left)] for d in deps}) if left else []
        store.add(text, depends_on=depends_on, binds={x: text for x in binds}, uses=uses, induce=induce, cost=2)
    elif kind == "chat":
        batch: list[dict] = [{"role": "user", "content": "check order A17"}]
        for _ in range(op[1]):
            calls[0] += 1
            call = f"c{calls[0]}"
            batch.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "lookup", "arguments": '{"order": "A17"}'}}
            ]})  # fmt: skip
            batch.append({"role": "tool", "tool_call_id": call, "content": '{"order": "A17", "ledger": "B2"}'})
        add_messages(store, batch)
    elif kind == "compact":
        store.compact("order A17", op[1])
    elif kind == "recall":
        archived = store.archived_ids()
        if archived:
            store.recall(archived[op[1] % len(archived)])
    else:
        present = store.ids() + store.archived_ids()
        if present:
            remove_messages(store, present[op[1] % len(present)])  # a tool unit leaves whole


def _scratch_graph(store: MemoryStore, slots: np.ndarray) -> DependencyGraph:
    position = {int(s): k for k, s in enumerate(slots.tolist())}
    edges = []
    for k, s in enumerate(slots.tolist()):
        for prerequisite in store.columns.blocks[s].depends_on:
            p = store.columns.slot_of[prerequisite]
            if p in position:
                edges.append((k, position[p]))
    edges += [(position[j], position[i]) for j, i in store.columns.induced.pairs() if j in position and i in position]
    return DependencyGraph.from_edges(slots.shape[0], np.array(edges, dtype=np.int64).reshape(-1, 2))


def _links(index: ReferentIndex) -> list[list[tuple[str, int, object]]]:
    """Per block: (referent, live binder, its value) of each referent it uses, in use order."""
    out = []
    for u in range(index.n):
        ids = index.use_ids[index.use_indptr[u] : index.use_indptr[u + 1]].tolist()
        out.append([(index.names[k], int(index.live_binder[k]), index.values[k]) for k in ids])
    return out


def _check(store: MemoryStore) -> None:
    slots = store.columns.active_slots()
    graph = store.columns.active_graph(slots)
    scratch = _scratch_graph(store, slots)
    assert graph.n == scratch.n
    np.testing.assert_array_equal(graph.dep_indptr, scratch.dep_indptr)
    np.testing.assert_array_equal(graph.dep_indices, scratch.dep_indices)
    blocks = [store.columns.blocks[s] for s in slots.tolist()]
    index = store.columns.active_index(slots)
    reference = ReferentIndex.from_lists([list(b.uses) for b in blocks], [dict(b.binds) for b in blocks])
    assert _links(index) == _links(reference)
    np.testing.assert_array_equal(index.need_indptr, reference.need_indptr)
    np.testing.assert_array_equal(index.need_blocks, reference.need_blocks)
    touched = {x for b in blocks for x in (*b.uses, *b.binds)}
    assert set(index.names) == touched
    assert [store.columns.referents.ids[x] for x in index.names] == sorted(
        store.columns.referents.ids[x] for x in touched
    )
    bound = {x: k for k, b in enumerate(blocks) for x in b.binds}  # the newest active binder
    assert {index.names[k]: int(b) for k, b in enumerate(index.live_binder.tolist()) if b >= 0} == bound
    if not store.columns.chat.ambiguous:
        ages, turn = store.columns.chat.ages(slots, store.columns.active.view())
        units = ChatUnits(blocks)
        assert ages.tolist() == units.ages().tolist() and turn == units.turn_start


@settings(max_examples=60)
@given(ops)
def test_gathers_equal_the_from_scratch_builds(sequence):
    store = MemoryStore(encoder=_embed, tokenizer="whitespace")
    calls = [0]
    for op in sequence:
        _apply(store, op, calls)
        if len(store):
            _check(store)


def test_a_chat_session_with_induced_edges_and_a_hub():
    """Induced edges in force, and edges a key turning into a hub took back (``in_force`` False)."""
    store = MemoryStore(encoder=_embed, tokenizer="whitespace")
    calls = [0]
    hub = [("add", "ledger B2 and order A17", [], [], [], True)] * 4 + [("add", TEXTS[0], [], [], [], True)] * 8
    for op in [("chat", 2), ("add", TEXTS[3], [0], [], [], True), ("compact", 12), ("chat", 1), ("recall", 0), *hub]:
        _apply(store, op, calls)
        _check(store)
    assert store.columns.induced.pairs()  # edges in force
    assert not store.columns.induced.csr(store.total)[2].all()  # and edges taken back


@settings(max_examples=60)
@given(st.lists(st.integers(0, 199), max_size=40), st.integers(0, 300))
def test_the_relabeling_equals_np_unique_dense_or_sparse(ids, extra):
    """``active_links`` relabels referent ids by marking when they are dense, else by sorting."""
    from dsgc_fast.kernels.referents import _relabeled

    values = np.array(ids, dtype=np.int64)
    n_ids = 200 + extra * 10  # from dense (16 per id or fewer) to sparse
    touched, local = _relabeled(values, n_ids)
    expected, inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(touched, expected)
    np.testing.assert_array_equal(local, inverse.reshape(-1))
