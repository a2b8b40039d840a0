"""Fuzzing the engine's entry points with malformed input.

The only acceptable outcomes are a result that satisfies the contract or a documented
exception (ValueError, TypeError, ReferentEvictionError) with a message; never another
exception type, a crash or a hang.  ``make fuzz`` runs the same tests with many more examples
(DSGC_HYPOTHESIS_PROFILE=long).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dsgc_fast
import dsgc_ref

from ._cases import examples

DOCUMENTED = (ValueError, TypeError, dsgc_ref.ReferentEvictionError)

weird_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
weird_ints = st.integers(-(2**70), 2**70)


def arrays_of_any_kind(max_side: int = 6):
    """NumPy arrays of assorted dtypes and shapes (including empty, 0-d and 3-d)."""
    dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint64, np.bool_, np.complex128])
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=max_side)
    return dtypes.flatmap(lambda dt: hnp.arrays(dt, shapes))


def anything():
    """Values a careless caller might pass for any argument."""
    return st.one_of(
        arrays_of_any_kind(),
        st.none(),
        weird_floats,
        weird_ints,
        st.text(max_size=5),
        st.lists(st.one_of(weird_floats, weird_ints, st.text(max_size=2)), max_size=6),
        st.lists(st.lists(weird_floats, max_size=4), max_size=5),
        st.builds(lambda n: np.array([object()] * n, dtype=object), st.integers(0, 3)),
    )


def check_result(got, n_blocks: int, budget: int) -> None:
    assert got.used <= budget
    assert len(got.mask) == n_blocks
    assert sorted(got.rank.tolist()) == list(range(n_blocks))


@given(
    q=anything(),
    embs=anything(),
    costs=anything(),
    budget=st.one_of(weird_ints, weird_floats, st.none(), st.text(max_size=3)),
    edges=anything(),
    order=anything(),
    policy=st.sampled_from(["dsgc", "similarity", "no_graph", "recency", "lru", 3]),
    tau=st.one_of(weird_floats, st.just(0.25)),
    hops=st.one_of(weird_ints, st.just(2)),
)
@settings(max_examples=examples(4))
def test_retain_with_garbage(q, embs, costs, budget, edges, order, policy, tau, hops):
    try:
        got = dsgc_fast.retain(q, embs, costs, budget, edges=edges, order=order, policy=policy, tau=tau, hops=hops)
    except DOCUMENTED as exc:
        assert str(exc)
        return
    check_result(got, len(got.mask), int(budget))


@st.composite
def near_valid(draw):
    """Valid stores with one field corrupted: the hardest inputs for a validator."""
    n = draw(st.integers(0, 12))
    d = draw(st.integers(1, 4))
    args = dict(
        q=np.ones(d),
        embs=np.ones((n, d)),
        costs=np.ones(n, dtype=np.int64),
        budget=n,
        edges=np.zeros((0, 2), dtype=np.int64),
        live=None,
        uses=[[] for _ in range(n)],
        binds=[None] * n,
    )
    field = draw(st.sampled_from(sorted(args)))
    args[field] = draw(anything())
    return args


@given(near_valid())
@settings(max_examples=examples(4))
def test_retain_with_one_corrupted_field(args):
    q, embs, costs, budget = (args.pop(k) for k in ("q", "embs", "costs", "budget"))
    try:
        got = dsgc_fast.retain(q, embs, costs, budget, **args)
    except DOCUMENTED as exc:
        assert str(exc)
        return
    check_result(got, len(got.mask), int(budget))


@given(roots=anything(), uses=anything(), binds=anything())
@settings(max_examples=examples(3))
def test_pin_closure_and_orphans_with_garbage(roots, uses, binds):
    for call in (
        lambda: dsgc_fast.pin_closure(roots, uses, binds),
        lambda: dsgc_fast.orphans(roots, uses, binds),
    ):
        try:
            call()
        except DOCUMENTED as exc:
            assert str(exc)


@given(n=st.integers(-3, 8), edges=anything())
@settings(max_examples=examples(3))
def test_dependency_graph_with_garbage(n, edges):
    try:
        g = dsgc_fast.DependencyGraph.from_edges(n, edges)
    except DOCUMENTED as exc:
        assert str(exc)
        return
    assert g.dep_indptr.shape == (n + 1,)


@given(
    n=st.integers(-3, 8),
    indptr=anything(),
    use_ids=anything(),
    bind_blocks=anything(),
    bind_ids=anything(),
)
@settings(max_examples=examples(3))
def test_referent_index_arrays_with_garbage(n, indptr, use_ids, bind_blocks, bind_ids):
    try:
        index = dsgc_fast.ReferentIndex.from_arrays(n, indptr, use_ids, bind_blocks, bind_ids)
    except DOCUMENTED as exc:
        assert str(exc)
        return
    dsgc_fast.pin_closure(list(range(n)), referents=index)
