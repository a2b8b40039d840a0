"""The large-store path on threads equals ``dsgc_ref.retain`` bit for bit, at 1 and 2 threads.

Stores of several thousand blocks span several softmax maximum ranges and walk parts, and
several parts of the validation and result kernels; ``SMALL_N`` and ``PARALLEL_MIN_N`` are
set to 0 so every store takes the parallel kernels.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast import _config, engine

from ._cases import assert_same, examples
from .test_equivalence import run_both

THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


@given(
    n=st.integers(4090, 9000),
    seed=st.integers(0, 2**32 - 1),
    policy=st.sampled_from(["dsgc", "similarity", "recency", "no_graph"]),
    selection=st.sampled_from(["first_fit", "prefix"]),
    fraction=st.sampled_from([0.0, 0.01, 0.05, 0.3, 1.0]),
    max_cost=st.sampled_from([1, 40]),
    hops=st.sampled_from([1, 2]),
    ordered=st.booleans(),
)
@settings(max_examples=examples(0.1))
def test_parallel_path_equals_ref_at_every_thread_count(n, seed, policy, selection, fraction, max_cost, hops, ordered):
    rng = np.random.default_rng(seed)
    embs = np.round(rng.normal(size=(n, 3)), 1)  # rounded: many tied scores
    q = rng.normal(size=3)
    costs = rng.integers(0, max_cost + 1, size=n)
    edges = rng.integers(0, n, size=(2 * n, 2))
    kwargs = {"edges": edges, "policy": policy, "selection": selection, "hops": hops}
    if ordered:
        kwargs["order"] = rng.permutation(n)
    budget = int(costs.sum() * fraction)
    before = numba.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "SMALL_N", 0)
        patch.setattr(_config, "PARALLEL_MIN_N", 0)
        try:
            for threads in THREADS:
                numba.set_num_threads(threads)
                fast, ref = run_both(q, embs, costs, budget, **kwargs)
                assert_same(fast, ref)
        finally:
            numba.set_num_threads(before)
