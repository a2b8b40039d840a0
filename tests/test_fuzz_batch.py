"""Fuzzing ``retain_batch`` with malformed ragged batches.

Acceptable outcomes: ``ValueError``/``TypeError`` with a message, or a result in which
every store respects its budget and equals ``retain`` on that store's slice.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast.batch import retain_batch

from ._cases import examples
from .test_fuzz_core import anything, weird_ints

DOCUMENTED = (ValueError, TypeError)


def check_against_retain(got, q, embs, costs, budgets, edges, edge_offsets, policy, hops) -> None:
    """Every store of an accepted batch equals ``retain`` on its slice."""
    off = got.offsets
    for s in range(len(got)):
        lo, hi = int(off[s]), int(off[s + 1])
        e = None if edges is None else np.asarray(edges)[edge_offsets[s] : edge_offsets[s + 1]]
        one = dsgc_fast.retain(
            np.asarray(q)[s] if np.ndim(q) == 2 else q,
            np.asarray(embs)[lo:hi], np.asarray(costs)[lo:hi], int(got.budgets[s]),
            edges=e, policy=policy, hops=hops,
        )  # fmt: skip
        store = got[s]
        assert store.used <= store.budget
        assert store.mask.tolist() == one.mask.tolist() and store.reasons.tolist() == one.reasons.tolist()
        assert store.scores.tobytes() == one.scores.tobytes()


@st.composite
def near_valid_batches(draw):
    """A valid ragged batch with one field replaced by garbage (or none)."""
    sizes = draw(st.lists(st.integers(0, 6), min_size=0, max_size=4))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, s = sum(sizes), len(sizes)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    edge_lists = [rng.integers(0, max(k, 1), size=(k, 2)) if k else np.empty((0, 2), np.int64) for k in sizes]
    args = dict(
        q=rng.normal(size=(s, d)) if draw(st.booleans()) else rng.normal(size=d),
        embs=rng.normal(size=(n, d)),
        offsets=offsets,
        costs=rng.integers(0, 5, size=n),
        budgets=rng.integers(0, 12, size=s) if draw(st.booleans()) else int(rng.integers(0, 12)),
        edges=np.concatenate(edge_lists) if s else None,
        edge_offsets=np.r_[0, np.cumsum(sizes)].astype(np.int64) if s else None,
    )
    field = draw(st.sampled_from([None, *sorted(args)]))
    if field is not None:
        args[field] = draw(st.one_of(anything(), weird_ints))
    return args


@given(
    args=near_valid_batches(),
    policy=st.sampled_from(["dsgc", "similarity", "no_graph", "recency", "lru"]),
    hops=st.sampled_from([1, 2, 0]),
)
@settings(max_examples=examples(4))
def test_fuzz_retain_batch_with_one_corrupted_field(args, policy, hops):
    q, embs, offsets, costs, budgets = (args[k] for k in ("q", "embs", "offsets", "costs", "budgets"))
    try:
        got = retain_batch(q, embs, offsets, costs, budgets, edges=args["edges"], edge_offsets=args["edge_offsets"],
                           policy=policy, hops=hops)  # fmt: skip
    except DOCUMENTED as exc:
        assert str(exc)
        return
    assert (got.used <= got.budgets).all()
    edge_offsets = None if args["edges"] is None else np.asarray(args["edge_offsets"], dtype=np.int64)
    check_against_retain(got, q, embs, costs, budgets, args["edges"], edge_offsets, policy, hops)


@given(q=anything(), embs=anything(), offsets=anything(), costs=anything(), budgets=anything(),
       edges=anything(), edge_offsets=anything())  # fmt: skip
@settings(max_examples=examples(3))
def test_fuzz_retain_batch_with_garbage(q, embs, offsets, costs, budgets, edges, edge_offsets):
    try:
        got = retain_batch(q, embs, offsets, costs, budgets, edges=edges, edge_offsets=edge_offsets)
    except DOCUMENTED as exc:
        assert str(exc)
        return
    assert (got.used <= got.budgets).all() and got.mask.shape[0] == int(got.offsets[-1])
