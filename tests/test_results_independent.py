"""Results never change when the caller's inputs change afterwards, and hand-built structures
are checked before any kernel reads them (reliability round 2, defects 1, 7, 12 and 13)."""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref


def _store(seed: int = 0, n: int = 40, d: int = 6):
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(size=(n, d)), rng.integers(1, 6, size=n), rng.integers(0, n, size=(60, 2))


def test_rank_does_not_follow_a_reused_order_buffer():
    q, embs, costs, edges = _store()
    order = np.random.default_rng(1).permutation(40).astype(np.int64)  # C-contiguous int64: no copy needed
    got = dsgc_fast.retain(q, embs, costs, 30, edges=edges, order=order)
    expected = dsgc_ref.retain(
        q.tolist(), embs.tolist(), costs.tolist(), 30, edges=edges.tolist(), order=order.tolist()
    )
    order[:] = 10**9  # the caller reuses its buffer; out-of-range values used to reach the rank kernel
    assert got.rank.tolist() == expected.rank
    assert got.order is not None and not got.order.flags.writeable


def test_batch_result_does_not_follow_reused_offsets_and_budgets():
    q, embs, costs, _ = _store(2, n=30)
    offsets = np.array([0, 10, 30], dtype=np.int64)
    budgets = np.array([8, 20], dtype=np.int64)
    got = dsgc_fast.retain_batch(np.stack([q, -q]), embs, offsets, costs, budgets)
    before = [(got[s].retained.tolist(), got[s].budget) for s in range(2)]
    offsets[:] = [0, 10**6, 10**7]
    budgets[:] = -5
    assert [(got[s].retained.tolist(), got[s].budget) for s in range(2)] == before


def test_referent_index_does_not_follow_reused_arrays():
    use_indptr = np.array([0, 0, 1, 2], dtype=np.int64)
    use_ids = np.array([0, 1], dtype=np.int64)
    index = dsgc_fast.ReferentIndex.from_arrays(3, use_indptr, use_ids, [0, 1], [0, 1])
    closure_before = dsgc_fast.pin_closure([2], referents=index).tolist()
    orphans_before = dsgc_fast.orphans([2], referents=index)
    use_ids[:] = 7
    use_indptr[:] = [0, 0, 0, 0]
    assert dsgc_fast.pin_closure([2], referents=index).tolist() == closure_before == [0, 1, 2]
    assert dsgc_fast.orphans([2], referents=index) == orphans_before == [(2, 1, 1)]


@pytest.mark.parametrize(
    "indptr,indices,match",
    [
        ([0, 1, 1], [5], "in \\[0, 2\\)"),
        ([0, 1, 1], [-1], "in \\[0, 2\\)"),
        ([0, 2, 2], [1], "end at len"),
        ([0, 1], [1], "entries"),
        ([1, 1, 1], [], "start at 0"),
        ([0, 2, 2], [1, 1], "distinct"),
        ([0, 1, 1], [0], "self-loops"),
    ],
)
def test_hand_built_graph_is_checked(indptr, indices, match):
    with pytest.raises(ValueError, match=match):
        dsgc_fast.DependencyGraph(2, np.array(indptr), np.array(indices))


def test_hand_built_graph_is_copied():
    indptr, indices = np.array([0, 1, 1]), np.array([1])
    graph = dsgc_fast.DependencyGraph(2, indptr, indices)
    indices[0] = 10**9
    assert graph.dep_indices.tolist() == [1] and not graph.dep_indices.flags.writeable


@pytest.mark.parametrize(
    "fields,match",
    [
        (dict(live_binder=[5]), "live_binder"),
        (dict(live_binder=[-2]), "live_binder"),
        (dict(use_ids=[3]), "in \\[0, 1\\)"),
        (dict(use_indptr=[0, 1, 2]), "end at len"),
        (dict(names=[], values=[]), "one entry per referent"),
    ],
)
def test_hand_built_referent_index_is_checked(fields, match):
    args = dict(n=2, use_indptr=[0, 0, 1], use_ids=[0], live_binder=[0], names=["x"], values=["v"])
    args.update(fields)
    with pytest.raises(ValueError, match=match):
        dsgc_fast.ReferentIndex(**args)


@pytest.mark.parametrize("impl", [dsgc_fast, dsgc_ref], ids=["fast", "ref"])
def test_huge_query_weights_mean_what_equal_weights_mean(impl):
    rng = np.random.default_rng(3)
    queries, embs, costs = rng.normal(size=(2, 5)), rng.normal(size=(12, 5)), [1] * 12
    plain = impl.retain(queries.tolist(), embs.tolist(), costs, 5, query_weights=[1.0, 1.0])
    huge = impl.retain(queries.tolist(), embs.tolist(), costs, 5, query_weights=[1e308, 1e308])
    assert list(huge.relevance) == list(plain.relevance) and sum(plain.relevance) > 0
    assert list(huge.retained) == list(plain.retained)


def test_query_weight_scaling_keeps_the_bits_of_ordinary_weights():
    rng = np.random.default_rng(4)
    for _ in range(200):
        w = (rng.random(rng.integers(1, 6)) * 10.0 ** rng.integers(-5, 6)).tolist()
        s = 0.0
        for x in w:
            s += x
        assert dsgc_ref.equations.normalize_weights(w) == [x / s for x in w]


def test_fast_and_ref_refuse_amplifying_decay_alike():
    q, embs, costs, edges = _store(5)
    for impl, args in ((dsgc_fast, (q, embs, costs)), (dsgc_ref, (q.tolist(), embs.tolist(), costs.tolist()))):
        with pytest.raises(ValueError, match="decay"):
            impl.retain(*args, 20, edges=edges.tolist(), hops=4, decay=1e308)
