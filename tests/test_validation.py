"""Bad input gets a clear ValueError/TypeError naming the argument, in both implementations."""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref

E = np.eye(4, 3)
Q = np.ones(3)
C = np.array([1, 2, 3, 4])

BAD = [
    # (description, kwargs overriding the good call, exception, message fragment)
    ("2-D embeddings required", dict(block_embs=np.ones(4)), ValueError, "block_embs"),
    ("mismatched d", dict(block_embs=np.ones((4, 2))), ValueError, "block_embs"),
    ("empty d", dict(query_emb=np.ones(0), block_embs=np.ones((4, 0))), ValueError, "empty"),
    ("NaN in embeddings", dict(block_embs=np.where(np.eye(4, 3) > 0, np.nan, 0.0)), ValueError, "NaN"),
    ("inf in query", dict(query_emb=np.array([1.0, np.inf, 0.0])), ValueError, "query_emb"),
    ("overflowing dot", dict(block_embs=np.full((4, 3), 1e200), query_emb=np.full(3, 1e200)), ValueError, "overflow"),
    ("negative cost", dict(costs=[1, -2, 3, 4]), ValueError, "costs"),
    ("fractional cost", dict(costs=[1, 2.5, 3, 4]), TypeError, "costs"),
    ("cost count", dict(costs=[1, 2, 3]), ValueError, "costs"),
    ("string costs", dict(costs=["a", "b", "c", "d"]), TypeError, "costs"),
    ("negative budget", dict(budget=-1), ValueError, "budget"),
    ("fractional budget", dict(budget=2.5), TypeError, "budget"),
    ("edge out of range", dict(edges=[(0, 4)]), ValueError, "edges"),
    ("negative edge", dict(edges=[(-1, 2)]), ValueError, "edges"),
    ("non-integer edge", dict(edges=[(0.5, 1)]), TypeError, "edges"),
    ("edge shape", dict(edges=[(0, 1, 2)]), ValueError, "edges"),
    ("tau zero", dict(tau=0.0), ValueError, "tau"),
    ("tau NaN", dict(tau=float("nan")), ValueError, "tau"),
    ("negative lambda", dict(lambda_pi=-0.1), ValueError, "lambda_pi"),
    ("negative decay", dict(decay=-1.0), ValueError, "decay"),
    ("amplifying decay", dict(decay=1e308, hops=3), ValueError, "decay"),
    ("hops beyond int64", dict(hops=2**64), ValueError, "hops"),
    ("budget beyond int64", dict(budget=2**63), ValueError, "budget"),
    ("unknown knob", dict(lamda_pi=1.0), TypeError, "lamda_pi"),
    ("params not a Params", dict(params={"tau": 1.0}), TypeError, "params"),
    ("hops zero", dict(hops=0), ValueError, "hops"),
    ("fractional hops", dict(hops=1.5), TypeError, "hops"),
    ("unknown policy", dict(policy="lru"), ValueError, "policy"),
    ("unknown selection", dict(selection="knapsack"), ValueError, "selection"),
    ("order not a permutation", dict(order=[0, 0, 1, 2]), ValueError, "order"),
    ("order wrong length", dict(order=[0, 1, 2]), ValueError, "order"),
    ("negative density", dict(density_exponent=-1.0), ValueError, "density_exponent"),
    ("negative working weight", dict(policy="agent", working_weight=-1.0), ValueError, "working_weight"),
    ("infinite working weight", dict(policy="agent", working_weight=float("inf")), ValueError, "working_weight"),
    ("working weight not a number", dict(policy="agent", working_weight="8"), TypeError, "working_weight"),
    ("weights length", dict(query_emb=np.ones((2, 3)), query_weights=[1.0]), ValueError, "query_weights"),
    ("zero weights", dict(query_emb=np.ones((2, 3)), query_weights=[0.0, 0.0]), ValueError, "query_weights"),
]


def call(impl, **over):
    args = dict(query_emb=Q, block_embs=E, costs=C, budget=5)
    args.update(over)
    q, e, c, b = (args.pop(k) for k in ("query_emb", "block_embs", "costs", "budget"))
    if impl is dsgc_ref:
        conv = lambda v: v.tolist() if isinstance(v, np.ndarray) else v  # noqa: E731
        q, e, c = conv(q), conv(e), conv(c)
        args = {k: conv(v) for k, v in args.items()}
    return impl.retain(q, e, c, b, **args)


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
@pytest.mark.parametrize("desc,over,exc,frag", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_rejected(impl, desc, over, exc, frag):
    with pytest.raises(exc, match=frag):
        call(impl, **over)


@pytest.mark.parametrize("bad", [np.array(["x", "y", "z"]), np.array([1 + 2j, 0, 0]), np.array([True, False, True])])
def test_non_real_query_is_a_type_error(bad):
    with pytest.raises(TypeError, match="query_emb"):
        dsgc_fast.retain(bad, E, C, 5)


def test_object_array_of_numbers_is_accepted():
    got = dsgc_fast.retain(np.array([1, 1, 1], dtype=object), E, C, 5)
    assert got.retained.tolist() == dsgc_fast.retain(Q, E, C, 5).retained.tolist()


def test_ragged_embeddings_rejected():
    with pytest.raises(ValueError, match="block_embs"):
        dsgc_fast.retain(Q, [[1, 2, 3], [1, 2]], [1, 1], 5)


def test_dependency_graph_size_must_match():
    g = dsgc_fast.DependencyGraph.from_edges(5, [(0, 1)])
    with pytest.raises(ValueError, match="DependencyGraph over 5 blocks"):
        dsgc_fast.retain(Q, E, C, 5, edges=g)


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_empty_store_returns_empty_result(impl):
    got = impl.retain([1.0, 2.0], np.empty((0, 2)) if impl is dsgc_fast else [], [], 10)
    assert list(got.retained) == [] and got.used == 0 and got.budget == 10


def test_inputs_are_not_modified_and_read_only_inputs_work():
    rng = np.random.default_rng(0)
    embs = rng.normal(size=(30, 4)).astype(np.float32)
    q, costs = rng.normal(size=4), rng.integers(0, 5, size=30)
    edges, order = rng.integers(0, 30, size=(40, 2)), rng.permutation(30)
    arrays = (embs, q, costs, edges, order)
    before = [a.copy() for a in arrays]
    for a in arrays:
        a.flags.writeable = False
    got = dsgc_fast.retain(q, embs, costs, 20, edges=edges, order=order, hops=2)
    for a, b in zip(arrays, before):
        assert np.array_equal(a, b)
    again = dsgc_fast.retain(
        *(b for b in before[1:2]), before[0], before[2], 20, edges=before[3], order=before[4], hops=2
    )
    assert got.retained.tolist() == again.retained.tolist()


def test_non_contiguous_and_int32_inputs():
    rng = np.random.default_rng(1)
    big = rng.normal(size=(40, 8))
    embs = big[::2, ::2]  # non-contiguous view (20, 4)
    costs = rng.integers(1, 5, size=20).astype(np.int32)
    edges = rng.integers(0, 20, size=(15, 2)).astype(np.int32)
    got = dsgc_fast.retain(np.ones(4), embs, costs, 15, edges=edges)
    want = dsgc_ref.retain([1.0] * 4, embs.tolist(), costs.tolist(), 15, edges=edges.tolist())
    assert got.retained.tolist() == want.retained


@pytest.mark.parametrize("n", [20, 40_000])  # the fused small-store path and the stage path
def test_byte_swapped_inputs_score_as_native_ones(n):
    """Big-endian float32 and int64 arrays (as read from some files) give the native result."""
    rng = np.random.default_rng(2)
    embs, q = rng.normal(size=(n, 8)).astype(np.float32), rng.normal(size=8).astype(np.float32)
    costs = rng.integers(1, 9, size=n)
    edges = np.stack([np.arange(1, n), np.arange(n - 1)], axis=1)
    swapped = [a.astype(a.dtype.newbyteorder(">")) for a in (q, embs, costs, edges)]
    got = dsgc_fast.retain(*swapped[:3], n, edges=swapped[3], order=np.arange(n)[::-1].astype(">i8"))
    want = dsgc_fast.retain(q, embs, costs, n, edges=edges, order=np.arange(n)[::-1])
    assert got.retained.tolist() == want.retained.tolist()
    assert got.scores.tobytes() == want.scores.tobytes()
