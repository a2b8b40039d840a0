"""A store whose referents form one long chain: compaction stays linear, errors stay short."""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pytest

from dsgc_fast import MemoryStore
from dsgc_ref.contract import LISTED, ReferentEvictionError

N = 4_000


@pytest.fixture(scope="module")
def chain_store() -> MemoryStore:
    """Block k binds r<k> and uses r<k-1>: pinning any block pins every older one."""
    rng = np.random.default_rng(0)
    embs = rng.normal(size=(N, 16))
    store = MemoryStore()
    with store.atomic():
        for k in range(N):
            store.add(f"step {k}", binds={f"r{k}": f"v{k}"}, uses=[f"r{k - 1}"] if k else [], embedding=embs[k], cost=1)
    return store


def test_compacting_a_referent_chain_allocates_linear_memory(chain_store):
    store = chain_store
    store.compact(np.ones(16), N, live=[f"b{N - 1}"])  # warm: kernels loaded, arrays grown
    tracemalloc.start()
    try:
        report = store.compact(np.ones(16), N, live=[f"b{N - 1}"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(report.kept) == N
    # one chain per block held at once would be N^2 / 2 = 8M (id, referent) steps, far above this
    assert peak < 4_000 * N
    chain = report.decisions["b0"].chain
    assert len(chain) == N - 1 and chain[0] == (f"b{N - 1}", f"r{N - 2}") and chain[-1] == ("b1", "r0")


def test_an_over_budget_error_names_a_few_blocks_and_keeps_them_all(chain_store):
    with pytest.raises(ReferentEvictionError) as caught:
        chain_store.compact(np.ones(16), N // 2, live=[f"b{N - 1}"])
    err = caught.value
    assert len(str(err)) < 2_000
    assert f"({N - LISTED:,} more, {N:,} in all)" in str(err)
    assert err.pinned == list(range(N)) and err.roots == [N - 1]
    assert err.pinned_ids == [f"b{k}" for k in range(N)] and err.root_ids == [f"b{N - 1}"]
    assert err.pinned_cost == N and err.budget == N // 2
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.pinned_ids == err.pinned_ids


def test_reasons_and_the_table_of_every_block_of_a_chain_stay_linear(chain_store):
    report = chain_store.compact(np.ones(16), N, live=[f"b{N - 1}"])
    tracemalloc.start()
    try:
        table = report.table()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4_000 * N and len(table) < 400 * N
    why = report.decisions["b0"].why()
    assert why == f"kept: pinned through b{N - 1} -> ... ({N - 2:,} more links) ... b1 -uses 'r0'-> b0"
    assert (
        report.decisions[f"b{N - 3}"].why()
        == f"kept: pinned through b{N - 1} -uses 'r{N - 2}'-> b{N - 2} -uses 'r{N - 3}'-> b{N - 3}"
    )
    assert report.decisions["b0"].chain.last == ("b1", "r0") and report.decisions["b0"].chain.source == f"b{N - 1}"
    assert f"b{N - 1} -uses 'r{N - 2}'->" in report.explain("b0")  # the full path on request
