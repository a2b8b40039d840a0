"""The developer tools measure what they claim: the peer implements the same contract, and
the peer table and stage profiler run (tiny sizes; their timings are not checked)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dsgc_fast
from dsgc_fast.kernels.selection import select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import peer_table, profile_stages  # noqa: E402
from tools.numpy_peer import first_fit, peer_graph, peer_retain  # noqa: E402
from tools.synthetic import make_ragged, make_store  # noqa: E402


@pytest.mark.parametrize("n", [20, 1_000, 5_000])
def test_peer_keeps_what_retain_keeps(n):
    s = make_store(n, 64, seed=n)
    peer = peer_retain(s.query, s.embs, s.costs, s.budget, peer_graph(n, s.edges))
    exact = dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)
    assert np.array_equal(peer.retained, exact.retained)
    assert peer.used == exact.used
    assert np.allclose(peer.scores, exact.scores, rtol=1e-5, atol=1e-12)


def test_peer_first_fit_is_the_greedy_walk(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(1, 300))
        costs = rng.integers(0, 20, size=n)
        ranking = rng.permutation(n)
        budget = int(rng.integers(0, costs.sum() + 2))
        mask = np.zeros(n, dtype=np.bool_)
        select(ranking, costs, budget, False, np.zeros(n, np.int8), np.int8(5), np.int8(6), mask, np.empty(n, np.int8))
        assert np.array_equal(first_fit(ranking, costs, budget), mask)


def test_ragged_stores_slice_back_to_stores():
    r = make_ragged(3, 5, 8, seed=1)
    s = r.store(2)
    assert s.embs.shape == (5, 8) and s.edges.max() < 5 and s.budget == r.budgets[2]
    assert np.array_equal(s.embs, r.embs[10:15]) and np.array_equal(s.query, r.queries[2])


def test_peer_table_sections_run(capsys):
    peer_table.main(
        ["peer", "scaling", "memory", "batch", "pins", "--sizes", "20", "300", "--scaling-sizes", "200", "400",
         "--memory-n", "500", "--batch-stores", "40", "--batch-peer-stores", "10", "--pins-n", "500"]
    )  # fmt: skip
    out = capsys.readouterr().out
    for heading in ("### peer", "### scaling", "### memory", "### batch", "### pins"):
        assert heading in out
    assert "| 300 |" in out and "retain_batch (exact)" in out and "breadth_first_order" in out


def test_profile_stages_runs(capsys):
    profile_stages.main(["2000", "--d", "16", "--rounds", "1"])
    out = capsys.readouterr().out
    assert "budgeted walk" in out and "retain (whole call)" in out


def test_floor_precision_and_edges_sections_run(capsys):
    peer_table.main(["floor", "precision", "edges", "--precision-sizes", "300", "--edges-n", "400", "--edges-degrees", "1"])
    out = capsys.readouterr().out
    for heading in ("### floor", "### precision", "### edges"):
        assert heading in out
    assert "| 300 | int8, per-row scale | 384 |" in out and "| 400 | 400 | same array again |" in out


def test_the_streaming_floor_reads_every_stored_element():
    import dsgc_fast
    from tools.floor import stored_matrix, streaming_floor

    rng = np.random.default_rng(0)
    embs = rng.normal(size=(50, 7)).astype(np.float32)
    for form in (embs, embs.astype(np.float16), dsgc_fast.TiledEmbeddings.from_array(embs),
                 dsgc_fast.QuantizedEmbeddings(np.ones((50, 7), np.int8))):  # fmt: skip
        assert stored_matrix(form).dtype in (np.float32, np.uint16, np.int8)
        streaming_floor(form)()
    from tools import floor

    out = np.empty(50, np.int64)
    floor._INT[0](np.ones((50, 7), np.int8), out)
    assert (out == 7).all()
