"""Every exported class checks what its public constructor is given.

The classes are enumerated (``dsgc_fast.__all__`` and the public classes of the framework
integrations), so a class exported later without bad-input cases here fails the test.  Each
bad input must raise ``TypeError`` or ``ValueError`` with a message, at construction: never
an object that fails later inside a kernel (Numba does not check) or scores the wrong rows.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dsgc_fast
from dsgc_fast import (
    BatchRetention,
    BindingTable,
    DependencyGraph,
    MemoryStore,
    Params,
    QuantizedEmbeddings,
    Reason,
    ReferentEvictionError,
    Retention,
    SelectCache,
    Selection,
    TiledEmbeddings,
    select,
)
from dsgc_fast.integrations import langchain, openai_agents

SQLiteSession = pytest.importorskip("agents").SQLiteSession

#: exceptions whose constructor is ``Exception``'s own (a message): nothing to check
MESSAGE_ONLY = {
    "ArchiveLockedError",
    "DsgcError",
    "DsgcRuntimeError",
    "DsgcTypeError",
    "DsgcValueError",
    "SessionError",
}


def exported_classes():
    found = {name: obj for name in dsgc_fast.__all__ if inspect.isclass(obj := getattr(dsgc_fast, name))}
    for module in (langchain, openai_agents):
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = obj
    return found


def retention_fields(n=3, **changes):
    f = np.zeros(n)
    fields = dict(
        retained=np.arange(1, dtype=np.int64), mask=np.ones(n, dtype=np.bool_), scores=f, relevance=f, propagated=f,
        similarity=f, reasons=np.zeros(n, dtype=np.int8), used=1, budget=2, policy="dsgc", selection="first_fit",
    )  # fmt: skip
    fields.update(changes)
    return fields


def batch_fields(**changes):
    f = np.zeros(3)
    fields = dict(
        offsets=np.array([0, 1, 3]), mask=np.ones(3, dtype=np.bool_), rank=np.array([0, 1, 0]), scores=f,
        relevance=f, propagated=f, similarity=f, reasons=np.zeros(3, dtype=np.int8), used=np.zeros(2, dtype=np.int64),
        budgets=np.ones(2, dtype=np.int64), policy="dsgc", selection="first_fit",
    )  # fmt: skip
    fields.update(changes)
    return fields


def selection_fields(**changes):
    messages = [{"role": "user", "content": "hello there"}]
    good = select(messages, 100, tokenizer="whitespace")
    fields = dict(messages=good.messages, indices=good.indices, ids=good.ids, report=good.report, used=2, budget=100)
    fields.update(changes)
    return fields


GOOD_TILES = np.zeros((1, 4, 32))
BAD = {
    "BatchRetention": [
        batch_fields(offsets=np.array([0, 2])),  # does not end at the block count
        batch_fields(rank=np.array([0, 5, 0])),  # a local index outside its store
        batch_fields(scores=np.zeros(2)),
        batch_fields(used=[0, 0]),
        batch_fields(policy="best"),
    ],
    "BindingTable": [
        dict(entries="x", text="t", cost=1),
        dict(entries=(), text=5, cost=1),
        dict(entries=(("r", "v", -1),), text="t", cost=1),
        dict(entries=(), text="t", cost=-1),
    ],
    "DependencyGraph": [dict(n=3, dep_indptr=np.array([0, 1]), dep_indices=np.array([5]))],
    "MemoryStore": [dict(encoder=5), dict(params="x"), dict(archive=5), dict(embedding_dtype="int8")],
    "Params": [dict(tau=-1.0), dict(policy="best"), dict(hops=0)],
    "QuantizedEmbeddings": [dict(codes=np.zeros((2, 3))), dict(codes=np.zeros((2, 3), np.int8), scale=0.0)],
    "Reason": [dict(value=99)],
    "ReferentEvictionError": [
        dict(message=5),
        dict(message="m", pinned="ab"),
        dict(message="m", budget=-1),
        dict(message="m", pinned_ids=[1]),
    ],
    "ReferentIndex": [dict(n=3, use_indptr=[0], use_ids=[], live_binder=[], names=[], values=[])],
    "Retention": [
        retention_fields(mask=np.ones(2, dtype=np.bool_)),  # shorter than the scores
        retention_fields(retained=np.array([7])),  # an index past the blocks
        retention_fields(scores=np.zeros(3, dtype=np.float32)),
        retention_fields(order=np.array([0, 1, 9])),
        retention_fields(used=-1),
        retention_fields(policy="best"),
    ],
    "SelectCache": [dict(max_texts=-1), dict(max_histories="x")],
    "Selection": [
        selection_fields(messages="hi"),
        selection_fields(indices=[3]),
        selection_fields(ids=["m0"]),
        selection_fields(report=None),
        selection_fields(used=-2),
        selection_fields(truncated={5: None}),
    ],
    "TiledEmbeddings": [
        dict(tiles=GOOD_TILES, n=1000),  # regression: 32 rows were scored as 1,000 blocks
        dict(tiles=np.zeros((4, 32)), n=3),
        dict(tiles=np.zeros((1, 4, 16)), n=3),
        dict(tiles=np.zeros((1, 4, 32)), n=-1),
        dict(tiles=np.array([[["a"] * 32]]), n=1),
    ],
    "ThreadMemory": [dict(budget=-1), dict(budget=10, max_threads=0), dict(budget=10, on_over_budget="drop")],
    "InputFilter": [dict(budget=-1), dict(budget=10, annotate=5), dict(budget=10, on_over_budget="drop")],
    "ItemGroup": [dict(indices=[0], message=None), dict(indices=(0,), message="text")],
    "ItemKind": [dict(kind="function_call", unit="nope")],
    "RetainedSession": [dict(session=5, budget=10), dict(session=SQLiteSession("s"), budget=-1)],
    "Form": [dict(value=7)],
    "FormSelection": [
        dict(forms=np.array([5], dtype=np.int8), used=0, value=0.0, budget=0),
        dict(forms=np.zeros(2), used=0, value=0.0, budget=0),
        dict(forms=np.zeros(2, dtype=np.int8), used=-1, value=0.0, budget=0),
        dict(forms=np.zeros(2, dtype=np.int8), used=0, value=float("nan"), budget=0),
    ],
}


def test_every_exported_class_has_bad_input_cases():
    classes = set(exported_classes()) - MESSAGE_ONLY
    assert classes == set(BAD), f"no cases for {sorted(classes - set(BAD))}; stale {sorted(set(BAD) - classes)}"


@pytest.mark.parametrize(("name", "kwargs"), [(name, kwargs) for name, cases in BAD.items() for kwargs in cases])
def test_bad_constructor_input_raises_a_clear_error(name, kwargs):
    cls = exported_classes()[name]
    with pytest.raises((TypeError, ValueError)) as err:
        cls(**kwargs)
    assert str(err.value)


def test_good_inputs_still_build():
    """The cases above differ from these in the one field named."""
    assert Retention(**retention_fields()).rank.tolist() == [0, 1, 2]
    assert len(BatchRetention(**batch_fields())[1].mask) == 2
    assert Selection(**selection_fields()).indices == [0]
    assert BindingTable((("r", "v", 0),), "r: v (block 0)", 4).cost == 4
    assert ReferentEvictionError("m", pinned=[1], budget=0).pinned == [1]
    assert Reason(int(Reason.TABLED)) is Reason.TABLED
    assert Params(tau=0.5).tau == 0.5 and SelectCache(max_texts=10) is not None
    assert QuantizedEmbeddings(np.zeros((2, 3), np.int8)).shape == (2, 3)
    DependencyGraph(1, np.array([0, 0]), np.array([], dtype=np.int64))
    MemoryStore().close()


def test_a_hand_built_tiling_is_checked_copied_and_scores_as_the_plain_array():
    """Regression (issue 28, defect 14): int64 tiles reached Numba (``TypingError``), and a
    tile count that did not match ``n`` scored rows that do not exist."""
    rng = np.random.default_rng(0)
    embs = rng.integers(-5, 5, size=(40, 6))
    tiles = np.zeros((2, 6, 32), dtype=np.int64)
    for i in range(40):
        tiles[i // 32, :, i % 32] = embs[i]
    tiled = TiledEmbeddings(tiles, 40)
    tiles[:] = 0  # the object keeps its own copy
    assert tiled.dtype == np.float64 and not tiled.tiles.flags.writeable
    q, costs = rng.normal(size=6), np.ones(40, dtype=np.int64)
    got, want = dsgc_fast.retain(q, tiled, costs, 10), dsgc_fast.retain(q, embs.astype(np.float64), costs, 10)
    assert got.retained.tolist() == want.retained.tolist() and np.array_equal(got.scores, want.scores)
    assert np.array_equal(tiled.to_array(), embs)
