"""``retain`` of a small store given in the checked types (one kernel call, values checked there)
equals the checked path bit for bit, and raises what the checked path raises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import _validate

from ._cases import examples


def _store(seed: int, n: int, d: int, dtype: type):
    rng = np.random.default_rng(seed)
    embs = rng.normal(size=(n, d)).astype(dtype)
    q = rng.normal(size=d).astype(np.float32)
    costs = rng.integers(0, 30, size=n)
    return q, embs, costs, rng.integers(0, n, size=(2 * n, 2))


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    fraction=st.sampled_from([0.0, 0.3, 1.0]),
    policy=st.sampled_from(["dsgc", "similarity", "recency"]),
    mode=st.sampled_from(["exact", "fast"]),
)
@settings(max_examples=examples(0.5))
def test_unchecked_call_equals_the_checked_path(seed, n, dtype, fraction, policy, mode):
    q, embs, costs, edges = _store(seed, n, 8, dtype)
    graph = dsgc_fast.DependencyGraph.from_edges(n, edges)
    budget = int(costs.sum() * fraction)
    assert _validate.canonical(q, embs, costs, budget, 2048)
    given = q.copy(), embs.copy(), costs.copy()
    got = dsgc_fast.retain(q, embs, costs, budget, edges=graph, policy=policy, mode=mode)
    assert all(np.array_equal(a, b) for a, b in zip(given, (q, embs, costs), strict=True))  # nothing is modified
    # lists are not in the checked types: the same store through the checks
    want = dsgc_fast.retain(q.tolist(), embs, costs.tolist(), budget, edges=edges, policy=policy, mode=mode)
    for name in ("retained", "mask", "rank", "reasons", "scores", "relevance", "propagated", "similarity", "working"):
        assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
    assert got.used == want.used


def test_canonical_needs_the_checked_types():
    q, embs, costs, _ = _store(1, 5, 4, np.float32)
    assert _validate.canonical(q, embs, costs, 10, 2048)
    assert not _validate.canonical(q.tolist(), embs, costs, 10, 2048)
    assert not _validate.canonical(q, embs, costs.astype(np.int32), 10, 2048)
    assert not _validate.canonical(q, embs, costs.astype(">i8"), 10, 2048)
    assert not _validate.canonical(q, embs, costs, True, 2048)
    assert not _validate.canonical(q, embs, costs, -1, 2048)
    assert not _validate.canonical(q, embs, costs, 2**63, 2048)
    assert not _validate.canonical(q, embs, costs, 10, 4)
    assert not _validate.canonical(q[:3], embs, costs, 10, 2048)
    assert not _validate.canonical(q, np.asfortranarray(embs), costs, 10, 2048)
    assert not _validate.canonical(q.astype(np.float16), embs, costs, 10, 2048)
    assert not _validate.canonical(q[None, :], embs, costs, 10, 2048)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda q, e, c: (np.where(np.arange(q.shape[0]) == 1, np.nan, q).astype(np.float32), e, c), ValueError, "NaN"),
        (lambda q, e, c: (q, e, np.where(np.arange(c.shape[0]) == 2, -1, c)), ValueError, ">= 0"),
        (lambda q, e, c: (q, e, np.full(c.shape[0], 2**62)), ValueError, "too large"),
        (lambda q, e, c: (q, np.where(np.arange(e.shape[0])[:, None] == 3, np.inf, e), c), ValueError, "NaN or inf"),
        (lambda q, e, c: (q * np.float32(1e30), e * 1e300, c), ValueError, "overflows"),
    ],
)
def test_bad_values_raise_as_the_checked_path_does(change, error, match):
    q, embs, costs, _ = _store(2, 6, 4, np.float64)
    q, embs, costs = change(q, embs, costs)
    assert _validate.canonical(q, embs, costs, 10, 2048)
    with pytest.raises(error, match=match):
        dsgc_fast.retain(q, embs, costs, 10)
    with pytest.raises(error, match=match):
        dsgc_fast.retain(q.tolist(), embs.tolist(), costs.tolist(), 10)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), edgeless=st.booleans())
@settings(max_examples=examples(0.3))
def test_a_small_result_is_one_its_own_checks_accept_and_shares_nothing(seed, n, edgeless):
    """``Retention.made`` skips ``__post_init__``: rebuilt through it, the result is the same; two calls share no array."""
    q, embs, costs, edges = _store(seed, n, 8, np.float32)
    graph = None if edgeless else dsgc_fast.DependencyGraph.from_edges(n, edges)
    first = dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 2, edges=graph)
    fields = {f.name: getattr(first, f.name) for f in dataclasses.fields(first)}
    rebuilt = dsgc_fast.Retention(**fields)
    for name, value in fields.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(rebuilt, name), value)
            assert value.dtype == getattr(rebuilt, name).dtype
        else:
            assert getattr(rebuilt, name) == value
    second = dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 2, edges=graph)
    first.scores[:] = -1.0
    first.mask[:] = ~first.mask
    assert not np.shares_memory(first.retained, second.retained) and (second.scores != -1.0).all()


def test_the_edgeless_graph_small_calls_share_is_read_only():
    from dsgc_fast.graph import as_graph

    graph = as_graph(None, 20)
    assert graph is as_graph(None, 20) and graph.n == 20 and graph.dep_indices.shape == (0,)
    with pytest.raises(ValueError):
        graph.dep_indptr[0] = 1


def test_a_small_result_reads_the_same_whichever_field_comes_first_and_survives_copies():
    """The fields of a ``made`` result are made at their first read: any order gives the same arrays, and
    a pickled, copied or replaced result reads as the original."""
    import copy
    import pickle

    q, embs, costs, edges = _store(3, 20, 8, np.float32)
    graph = dsgc_fast.DependencyGraph.from_edges(20, edges)
    budget = int(costs.sum()) // 3
    names = ("retained", "rank", "scores", "relevance", "propagated", "similarity", "working", "pinned")
    want = dsgc_fast.retain(q.tolist(), embs, costs.tolist(), budget, edges=edges)  # the checked path, built eagerly
    for first in names:
        got = dsgc_fast.retain(q, embs, costs, budget, edges=graph)
        getattr(got, first)
        for name in names:
            assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), (first, name)
            assert getattr(got, name) is getattr(got, name)  # kept after the first read
    got = dsgc_fast.retain(q, embs, costs, budget, edges=graph)
    for other in (pickle.loads(pickle.dumps(got)), copy.copy(got), dataclasses.replace(got, used=got.used)):
        for name in names:
            np.testing.assert_array_equal(getattr(other, name), getattr(want, name))
    assert got.binding_table is None and got.order is None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        got.nothing  # noqa: B018


def test_kernel_knobs_follow_the_params_object():
    from dsgc_fast import stages
    from dsgc_ref.contract import Params

    for p in (Params(), Params(policy="no_graph", tau=0.5, hops=3), Params(policy="similarity", selection="prefix")):
        assert stages.kernel_knobs(p) == (
            p.tau, p.effective_lambda, p.density_exponent, p.hops, p.decay, stages.score_rule(p.policy),
            stages.SELECTION_CODES[p.selection],
        )  # fmt: skip
        tau, lam, density, hops, decay, rule, selection = stages.kernel_knobs(p)
        for mode, fast in (("exact", 0.0), ("fast", 1.0)):
            knobs, small_hops = stages.small_knobs(p, mode)
            assert knobs.tolist() == [tau, lam, density, decay, rule, selection, fast] and small_hops == hops
            assert not knobs.flags.writeable  # shared by every call with this Params
