"""Referent pinning: closure, closure-aware selection, escalation, audit (fast vs ref, invariants)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import breadth_first_order

import dsgc_fast
import dsgc_ref
from dsgc_fast import engine
from dsgc_ref.contract import POLICIES, Reason

from ._cases import assert_same, examples, retention_cases, to_lists


def random_referents(rng: np.random.Generator, n: int, n_refs: int, p_bind: float = 0.3, max_uses: int = 3):
    """uses/binds lists: each block binds some referents and uses a few (any direction, cycles allowed)."""
    binds = []
    for i in range(n):
        k = rng.binomial(2, p_bind)
        binds.append({f"x{int(x)}": f"v{i}.{int(x)}" for x in rng.integers(0, n_refs, size=k)} or None)
    uses = [[f"x{int(x)}" for x in rng.integers(0, n_refs, size=rng.integers(0, max_uses + 1))] for _ in range(n)]
    return uses, binds


@st.composite
def pinned_cases(draw):
    q, embs, costs, budget, kwargs = draw(retention_cases(max_n=120))
    n = embs.shape[0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    uses, binds = random_referents(rng, n, n_refs=draw(st.integers(1, max(1, n))))
    kwargs["uses"], kwargs["binds"] = uses, binds
    if n and draw(st.booleans()):
        kwargs["live"] = rng.integers(0, n, size=draw(st.integers(1, 3))).tolist()
    if n and draw(st.booleans()):  # override the newest-binder rule for one referent
        bound = [(i, x) for i, b in enumerate(binds) if b for x in b]
        if bound:
            i, x = bound[int(rng.integers(0, len(bound)))]
            kwargs["binders"] = {x: i}
    if kwargs.get("live") and draw(st.booleans()):  # escalation regime: verbose pinned blocks, small budget
        roots = sorted(set(kwargs["live"]))
        pinned = dsgc_ref.pin_closure(roots, uses, binds, binders=kwargs.get("binders"))
        costs = costs.copy()
        costs[[i for i in pinned if i not in roots]] = 40
        budget = int(costs[roots].sum()) + 12 * len(pinned) + draw(st.integers(0, 30))
    return q, embs, costs, budget, kwargs


def run_both(q, embs, costs, budget, **kwargs):
    """(fast, ref) results, or the two exceptions when both refuse."""
    try:
        fast = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    except dsgc_ref.ReferentEvictionError as exc:
        fast = exc
    rq, re, rc, rk = to_lists(q, embs, costs, kwargs)
    try:
        ref = dsgc_ref.retain(rq, re, rc, budget, **rk)
    except dsgc_ref.ReferentEvictionError as exc:
        ref = exc
    return fast, ref


@given(pinned_cases())
@settings(max_examples=examples(2.5))
def test_pinned_retain_fast_equals_ref(case):
    q, embs, costs, budget, kwargs = case
    fast, ref = run_both(q, embs, costs, budget, **kwargs)
    if isinstance(ref, Exception):
        assert isinstance(fast, dsgc_ref.ReferentEvictionError) and str(fast) == str(ref)
        return
    assert_same(fast, ref)
    assert fast.binding_table == ref.binding_table


@given(pinned_cases())
@settings(max_examples=examples(2.5))
def test_invariants_hold(case):
    q, embs, costs, budget, kwargs = case
    try:
        got = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    except dsgc_ref.ReferentEvictionError:
        return
    n = embs.shape[0]
    uses, binds, binders = kwargs["uses"], kwargs["binds"], kwargs.get("binders")
    order = kwargs.get("order")
    # budget respected, every block decided once
    assert got.used <= budget
    assert got.used == int(np.asarray(costs)[got.retained].sum()) + (got.binding_table.cost if got.binding_table else 0)
    assert len(got.reasons) == n and all(Reason(r).kept == m for r, m in zip(got.reasons, got.mask))
    # the invariant: no kept block uses a referent whose live binder was evicted (unless tabled)
    assert dsgc_fast.orphans(got.retained, uses, binds, order=order, binders=binders, table=got.binding_table) == []
    # pinned blocks are never evicted: kept, or (escalation) replaced by the table
    roots = set(kwargs.get("live", []))
    for i in got.pinned.tolist():
        assert got.mask[i] or (got.binding_table is not None and i not in roots)
    assert all(got.mask[r] for r in roots)


@given(pinned_cases())
@settings(max_examples=examples(2))
def test_fused_pinned_path_equals_the_stage_path(case):
    """``engine._fused_pinned_path`` (one kernel call) against the stage-by-stage ``_pinned_path``, whole results."""
    q, embs, costs, budget, kwargs = case
    assume(embs.shape[0] > 0)
    q = np.atleast_2d(q)[0]  # one query, in the input order: the fused path's cases
    kwargs = {k: v for k, v in kwargs.items() if k not in ("order", "query_weights")}
    calls = []
    real = engine._fused_pinned_path

    def counted(*args):
        calls.append(1)
        return real(*args)

    def decided() -> object:
        try:
            return dsgc_fast.retain(q, embs, costs, budget, **kwargs)
        except dsgc_ref.ReferentEvictionError as exc:
            return str(exc)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "_fused_pinned_path", counted)
        fused = decided()
    assert calls == [1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "SMALL_N", 0)
        staged = decided()
    if isinstance(staged, str):
        assert fused == staged
        return
    assert isinstance(fused, dsgc_fast.Retention)
    for name in ("retained", "mask", "rank", "reasons", "pinned", "scores", "relevance", "propagated", "similarity",
                 "working"):  # fmt: skip
        got, want = np.asarray(getattr(fused, name)), np.asarray(getattr(staged, name))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name
    assert (fused.used, fused.budget, fused.binding_table) == (staged.used, staged.budget, staged.binding_table)


@given(retention_cases(max_n=80))
@settings(max_examples=examples(0.8))
def test_without_pins_equals_core_retain(case):
    q, embs, costs, budget, kwargs = case
    core = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    n = embs.shape[0]
    empty = dsgc_fast.retain(q, embs, costs, budget, uses=[()] * n, binds=[None] * n, **kwargs)
    assert core.retained.tolist() == empty.retained.tolist()
    assert core.reasons.tolist() == empty.reasons.tolist()


@given(pinned_cases())
@settings(max_examples=examples(2))
def test_closure_matches_scipy_bfs_from_a_super_source(case):
    _, embs, _, _, kwargs = case
    n = embs.shape[0]
    roots = kwargs.get("live") or ([0] if n else [])
    index = dsgc_fast.ReferentIndex.from_lists(kwargs["uses"], kwargs["binds"], binders=kwargs.get("binders"))
    got = dsgc_fast.pin_closure(roots, referents=index)
    assert got.tolist() == dsgc_ref.pin_closure(roots, kwargs["uses"], kwargs["binds"], binders=kwargs.get("binders"))
    indptr, needed = index.needs()
    owner = np.repeat(np.arange(n), np.diff(indptr))
    rows = np.r_[owner, np.full(len(roots), n)]  # node n: a virtual source linked to every root
    cols = np.r_[needed, roots]
    graph = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n + 1, n + 1))
    want = np.sort(breadth_first_order(graph, n, directed=True, return_predecessors=False))[:-1]
    assert got.tolist() == want.tolist()


def test_closure_is_transitive_and_terminates_on_cycles():
    uses = [["b"], ["c"], ["a"], []]
    binds = [{"a": 1}, {"b": 2}, {"c": 3}, None]
    assert dsgc_fast.pin_closure([0], uses, binds).tolist() == [0, 1, 2]
    assert dsgc_fast.pin_closure([3], uses, binds).tolist() == [3]


def test_newest_binder_is_live_and_overridable():
    uses = [[], [], ["k"]]
    binds = [{"k": "old"}, {"k": "new"}, None]
    assert dsgc_fast.pin_closure([2], uses, binds).tolist() == [1, 2]
    assert dsgc_fast.pin_closure([2], uses, binds, binders={"k": 0}).tolist() == [0, 2]
    assert dsgc_fast.pin_closure([2], uses, binds, order=[1, 0, 2]).tolist() == [0, 2]  # block 0 is newer
    with pytest.raises(ValueError, match="does not bind"):
        dsgc_fast.pin_closure([2], uses, binds, binders={"k": 2})


@pytest.mark.parametrize(
    "uses,binds,err",
    [
        (["ab", []], [None, None], TypeError),
        ([[], []], [None], ValueError),
        ([[], []], [None, ["k"]], TypeError),
        ([[["unhashable"]], []], [None, None], TypeError),
    ],
)
def test_bad_referent_lists_are_rejected(uses, binds, err):
    with pytest.raises(err):
        dsgc_fast.pin_closure([0], uses, binds)
    with pytest.raises(err):
        dsgc_ref.pin_closure([0], uses, binds)


@pytest.mark.parametrize("bad,err", [([2], ValueError), ([-1], ValueError), ([0.5], TypeError), (["0"], TypeError)])
@pytest.mark.parametrize("name", ["pin_closure", "orphans"])
def test_bad_block_indices_are_rejected_alike(name, bad, err):
    """Roots / retained blocks outside [0, n) or not integers: the same error class from both
    implementations (a negative index never counts from the end)."""
    uses, binds = [["x"], []], [None, {"x": 1}]
    for impl in (dsgc_fast, dsgc_ref):
        with pytest.raises(err, match="out of range|integer|real numbers"):
            getattr(impl, name)(bad, uses, binds)


def test_live_out_of_range_is_rejected():
    with pytest.raises(ValueError, match="live"):
        dsgc_fast.retain(np.ones(2), np.eye(2), [1, 1], 2, live=[2], uses=[[], []])


@pytest.mark.parametrize("n", [20, 50, 1_000_000])
def test_closure_at_sizes(n):
    """Array form at scale: every block uses up to 4 referents bound by older blocks."""
    rng = np.random.default_rng(n)
    counts = rng.integers(0, 5, size=n)
    counts[0] = 0
    indptr = np.r_[0, np.cumsum(counts)]
    owner = np.repeat(np.arange(n), counts)
    use_ids = (rng.random(owner.shape[0]) * owner).astype(np.int64)  # referent x is bound by block x
    index = dsgc_fast.ReferentIndex.from_arrays(n, indptr, use_ids, np.arange(n), np.arange(n))
    roots = np.array([n - 1, n // 2])
    got = dsgc_fast.pin_closure(roots, referents=index)
    if n <= 50:
        uses = [[int(x) for x in use_ids[indptr[i] : indptr[i + 1]]] for i in range(n)]
        binds = [{i: f"v{i}"} for i in range(n)]
        assert got.tolist() == dsgc_ref.pin_closure(roots.tolist(), uses, binds)
    else:
        rows, cols = np.r_[owner, [n, n]], np.r_[use_ids, roots]
        graph = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n + 1, n + 1))
        want = np.sort(breadth_first_order(graph, n, directed=True, return_predecessors=False))[:-1]
        assert got.tolist() == want.tolist()


@pytest.mark.slow
def test_pinned_retain_at_one_million_blocks_equals_ref():
    n, d = 1_000_000, 2
    rng = np.random.default_rng(3)
    embs, q = rng.normal(size=(n, d)), rng.normal(size=d)
    costs = rng.integers(1, 30, size=n)
    window = np.maximum(np.arange(n) - rng.integers(1, 50, size=n), 0)  # uses point at recent blocks
    uses = [[int(window[i])] if i % 3 == 0 else [] for i in range(n)]
    binds = [{i: i} for i in range(n)]
    budget, live = int(costs.sum()) // 20, [n - 1]
    fast = dsgc_fast.retain(q, embs, costs, budget, uses=uses, binds=binds, live=live)
    ref = dsgc_ref.retain(q.tolist(), embs.tolist(), costs.tolist(), budget, uses=uses, binds=binds, live=live)
    assert_same(fast, ref)


def test_query_distribution_mixes_softmaxes():
    rng = np.random.default_rng(8)
    embs, qs = rng.normal(size=(30, 4)), rng.normal(size=(3, 4))
    w = np.array([1.0, 2.0, 1.0])
    got = dsgc_fast.retain(qs, embs, np.ones(30, int), 10, query_weights=w)
    singles = [dsgc_fast.retain(qk, embs, np.ones(30, int), 10).relevance for qk in qs]
    np.testing.assert_allclose(got.relevance, sum(wk / 4.0 * r for wk, r in zip(w, singles)), rtol=1e-12)
    assert abs(got.relevance.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("policy", POLICIES)
def test_adding_a_binding_never_evicts_a_block_that_was_kept(policy, seed):
    """Monotonicity under reference density, checked on many random stores (no escalation)."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(2, 25))
        embs, q = rng.normal(size=(n, 3)), rng.normal(size=3)
        costs = rng.integers(1, 6, size=n)
        uses, binds = random_referents(rng, n, n_refs=6)
        live = [n - 1]
        budget = int(costs.sum()) // 2
        kw = dict(policy=policy, live=live, uses=uses)
        try:
            before = dsgc_fast.retain(q, embs, costs, budget, binds=binds, **kw)
        except dsgc_ref.ReferentEvictionError:
            continue
        b = int(rng.integers(0, n))
        more = list(binds)
        more[b] = {**(binds[b] or {}), f"x{int(rng.integers(0, 6))}": "new"}
        try:
            after = dsgc_fast.retain(q, embs, costs, budget, binds=more, **kw)
        except dsgc_ref.ReferentEvictionError:
            continue
        if before.binding_table is None and after.binding_table is None and before.mask[b]:
            assert after.mask[b], (seed, n, b)


def test_array_index_memory_follows_the_links_not_the_largest_id():
    # found by make fuzz: one use of referent id 5,693,036,335 allocated an array per possible id
    big = 5_693_036_335
    index = dsgc_fast.ReferentIndex.from_arrays(3, [0, 1, 1, 2], [big, big], [0], [big])
    assert index.names == [big] and index.live_binder.tolist() == [0]
    assert dsgc_fast.pin_closure([2], referents=index).tolist() == [0, 2]
    with pytest.raises(ValueError, match=r"use_ids has a referent id out of range \[0, 10\)"):
        dsgc_fast.ReferentIndex.from_arrays(1, [0, 1], [big], [], [], n_referents=10)
    with pytest.raises(ValueError, match="use_ids has a referent id out of range"):
        dsgc_fast.ReferentIndex.from_arrays(1, [0, 1], [-1], [], [])
    named = dsgc_fast.ReferentIndex.from_arrays(2, [0, 0, 1], [3], [0], [3], values=["a", "b", "c", "d"])
    assert named.names == [3] and named.values == ["d"]
