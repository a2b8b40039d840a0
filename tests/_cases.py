"""Random retention cases shared by the equivalence tests (hypothesis strategies + helpers)."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

import dsgc_fast
import dsgc_ref
from dsgc_ref.contract import POLICIES, SELECTIONS


def examples(factor: float) -> int:
    """``factor`` times the active profile's example count (ci: 100, long: 2000)."""
    return max(1, int(factor * settings.default.max_examples))


@st.composite
def retention_cases(draw, max_n: int = 300, max_d: int = 12):
    """A random store: embeddings with forced ties, costs with zeros, graphs with cycles,
    self-loops and duplicates, any budget, any policy/selection/hops, optional order."""
    n = draw(st.integers(0, max_n))
    d = draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1e-3, 1.0, 10.0]))
    embs = rng.normal(size=(n, d)) * scale
    if n > 1 and draw(st.booleans()):  # forced ties: duplicate rows
        dup = rng.integers(0, n, size=max(1, n // 3))
        embs[dup] = embs[rng.integers(0, n)]
    if draw(st.booleans()):
        embs = np.round(embs, 1)  # many exact ties in dot products
    q = rng.normal(size=d)
    if draw(st.booleans()):
        q = rng.normal(size=(draw(st.integers(1, 3)), d))
    costs = rng.integers(0, draw(st.sampled_from([1, 3, 20])) + 1, size=n)
    total = int(costs.sum())
    budget = draw(st.sampled_from([0, total // 4, total // 2, total, total + 5]))
    n_edges = draw(st.integers(0, 3 * n)) if n else 0
    edges = rng.integers(0, max(n, 1), size=(n_edges, 2)) if n else np.empty((0, 2), dtype=np.int64)
    if n and n_edges and draw(st.booleans()):  # self-loops and duplicates
        edges = np.concatenate([edges, edges[: n_edges // 2], np.stack([edges[:, 0], edges[:, 0]], 1)[:3]])
    kwargs = dict(
        edges=edges,
        policy=draw(st.sampled_from(POLICIES)),
        selection=draw(st.sampled_from(SELECTIONS)),
        hops=draw(st.integers(1, 4)),
        decay=draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])),
        lambda_pi=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.5])),
        tau=draw(st.sampled_from([1e-3, 0.05, 0.25, 1.0, 100.0])),
        density_exponent=draw(st.sampled_from([0.0, 0.0, 0.5, 1.0])),
    )
    if draw(st.booleans()):
        kwargs["order"] = rng.permutation(n)
    if kwargs["policy"] == "agent" and draw(st.booleans()):  # working ages, many zeros
        kwargs["ages"] = rng.integers(0, min(n, 6) + 1, size=n) * (rng.random(n) < 0.5)
        kwargs["recency_decay"] = draw(st.sampled_from([1.0, 0.85, 0.5, 1e-3]))
        kwargs["working_weight"] = draw(st.sampled_from([8.0, 0.0, 1.0, 0.3, 1e6]))
    if np.ndim(q) == 2 and draw(st.booleans()):
        kwargs["query_weights"] = rng.random(q.shape[0]) + 0.01
    return q, embs, costs, budget, kwargs


def to_lists(q, embs, costs, kwargs):
    """The same case as plain Python lists for dsgc_ref."""
    ref_kwargs = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    return np.asarray(q).tolist(), np.asarray(embs).tolist(), np.asarray(costs).tolist(), ref_kwargs


def assert_same(fast: dsgc_fast.Retention, ref: dsgc_ref.Retention) -> None:
    """Identical retained set, rank, reasons and bit-identical float outputs."""
    assert fast.retained.dtype == np.int64
    assert fast.retained.tolist() == ref.retained
    assert fast.mask.tolist() == ref.mask
    assert fast.rank.tolist() == ref.rank
    assert fast.reasons.tolist() == [int(r) for r in ref.reasons]
    assert fast.used == ref.used
    assert fast.budget == ref.budget
    assert fast.pinned.tolist() == ref.pinned
    for name in ("scores", "relevance", "propagated", "similarity", "working"):
        got = np.asarray(getattr(fast, name), dtype=np.float64)
        want = np.asarray(getattr(ref, name), dtype=np.float64)
        assert got.view(np.int64).tolist() == want.view(np.int64).tolist(), name
