"""Trace diagnostics, failure classes, metrics and graph perturbations on hand-built cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dsgc_bench import diagnostics
from dsgc_bench.metrics import aggregate, mean_std, paired
from dsgc_bench.noise import perturb_edges
from dsgc_bench.scenarios import generate

# blocks: 0 = c1, 1 = c2, 2 = c3, 3 = h1, 4 = f1; edges c2 -> c1, c3 -> c2
IDS = ["c1", "c2", "c3", "h1", "f1"]
CHAIN = [0, 1, 2]
EDGES = [(1, 0), (2, 1)]


def run_trace(sim, scores, mask):
    scores = np.asarray(scores, dtype=float)
    rank = np.argsort(-scores, kind="stable")
    return diagnostics.trace(IDS, CHAIN, EDGES, rank, np.asarray(mask), scores, np.asarray(sim, dtype=float))


def test_no_trace_when_the_chain_survives():
    assert run_trace([0.5, 0.0, 0.9, 0.6, 0.1], [5, 4, 3, 2, 1], [1, 1, 1, 0, 0]) is None


def test_similarity_style_failure_is_definition_2():
    # c2 has the lowest similarity and is evicted while its more similar dependent c3 is kept
    sim = [0.4, 0.0, 0.9, 0.6, 0.1]
    t = run_trace(sim, sim, [1, 0, 1, 1, 1])
    assert t["ranks"] == {"c1": 3, "c2": 5, "c3": 1}
    assert t["top_non_chain"] == "h1"
    (row,) = t["displaced"]
    assert row["block"] == "c2" and row["indirect"] and row["class"] == "def2"
    assert row["ahead"] == ["h1", "f1"] and row["competitor"] == "f1" and row["competitor_rank"] == 4
    assert row["margin"] == pytest.approx(0.1)
    assert t["class"] == "def2"


def test_two_hop_residual_is_beyond_one_hop():
    # DSGC-style: c2, c3 rescued, c1 (more similar than c2, less than c3) displaced by a filler
    sim = [0.2, 0.0, 0.9, 0.6, 0.3]
    scores = [0.08, 0.5, 0.4, 0.2, 0.1]
    t = run_trace(sim, scores, [0, 1, 1, 1, 1])
    (row,) = t["displaced"]
    assert row["block"] == "c1" and not row["indirect"] and row["class"] == "beyond_one_hop"
    assert row["competitor"] == "f1" and row["margin"] == pytest.approx(0.02)
    assert t["ranks"] == {"c1": 5, "c2": 1, "c3": 2}


def test_surface_forgetting_and_budget_spent_on_the_chain():
    # the query-facing block itself is lost: no dependent, so surface forgetting
    sim = [0.5, 0.4, 0.3, 0.1, 0.0]
    t = run_trace(sim, sim, [1, 1, 0, 0, 0])
    (row,) = t["displaced"]
    assert row["class"] == "surface" and row["competitor"] is None and row["margin"] is None
    assert t["class"] == "surface"


def test_run_class_prefers_the_most_structural_block():
    sim = [0.3, 0.0, 0.9, 0.6, 0.1]
    t = run_trace(sim, [0.1, 0.05, 0.9, 0.6, 0.2], [0, 0, 1, 1, 1])
    assert [r["class"] for r in t["displaced"]] == ["beyond_one_hop", "def2"]
    assert t["class"] == "def2"


def test_mean_std_is_the_sample_std():
    mean, std = mean_std([1.0] + [0.0] * 14)
    assert round(mean, 2) == 0.07 and round(std, 2) == 0.26  # the paper's 0.07 +- 0.26
    assert mean_std([1.0]) == (1.0, 0.0)
    with pytest.raises(ValueError):
        mean_std([])


def test_aggregate_and_paired():
    recs = [
        {"method": m, "template": "role", "seed": s, "full_chain": ok, "prerequisites": 1.0, "answer_correct": ok}
        for m, s, ok in [("a", 0, True), ("a", 1, False), ("b", 0, True), ("b", 1, True)]
    ]
    cells = aggregate(recs, ("method",))
    assert [(c["method"], c["n"], c["full_chain"]) for c in cells] == [("a", 2, 0.5), ("b", 2, 1.0)]
    pairs = paired(recs, ("template",), "method", "a", "b")
    assert [(x["seed"], y["seed"]) for x, y in pairs] == [(0, 0), (1, 1)]


def test_edge_drop_is_seeded_and_nested():
    sc = generate("role", 4)
    assert perturb_edges(sc, "none", 0.0) == sc.edges
    assert perturb_edges(sc, "drop", 0.0) == sc.edges and perturb_edges(sc, "drop", 1.0) == []
    kept = [set(perturb_edges(sc, "drop", r)) for r in (0.1, 0.3, 0.5, 0.7)]
    assert all(a >= b for a, b in itertools.pairwise(kept))
    assert perturb_edges(sc, "drop", 0.3) == perturb_edges(sc, "drop", 0.3)


@pytest.mark.parametrize("kind", ["spurious_random", "spurious_honeypot"])
def test_spurious_edges_count_sources_and_nesting(kind):
    counts = []
    for seed in range(40):
        sc = generate("profile", seed)
        small, large = perturb_edges(sc, kind, 0.2), perturb_edges(sc, kind, 1.0)
        assert large[: len(sc.edges)] == sc.edges and len(large) == 2 * len(sc.edges)
        assert small == large[: len(small)]
        added = small[len(sc.edges) :]
        counts.append(len(added))
        for j, i in added:
            assert i != j and (j, i) not in sc.edges
            if kind == "spurious_honeypot":
                assert sc.kinds[j] == "honeypot"
    assert 0 < sum(counts) / len(counts) < 1  # expected 0.2 * |E| = 0.4


def test_perturb_rejects_bad_arguments():
    sc = generate("role", 0)
    with pytest.raises(ValueError, match="noise kind"):
        perturb_edges(sc, "shuffle", 0.1)
    with pytest.raises(ValueError, match="rate"):
        perturb_edges(sc, "drop", 1.5)


def test_by_size_lists_chain_blocks_kept_after_a_skipped_block():
    rank = np.array([1, 3, 2, 4, 0])  # c2, h1, c3, f1, c1
    kept = np.array([True, True, False, False, False])  # c1, c2 kept; c3 and h1 skipped
    assert diagnostics.by_size(IDS, CHAIN, rank, kept) == ["c1"]
    assert diagnostics.by_size(IDS, CHAIN, rank, np.array([True, True, True, True, True])) == []
    prefix = np.array([False, True, False, True, False])  # kept exactly the first two in rank order
    assert diagnostics.by_size(IDS, CHAIN, rank, prefix) == []
