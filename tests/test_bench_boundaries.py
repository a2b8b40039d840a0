"""The paper's 53 cells as code, the Fisher comparison, and the boundaries suite's summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import pytest
from scipy.stats import fisher_exact

from dsgc_bench import boundaries, paper_cells
from dsgc_bench.runner import Condition
from dsgc_bench.suite import RunConfig


def test_the_53_cells_and_their_runs():
    cells = paper_cells.CELLS
    assert len(cells) == 53
    assert Counter(c.source for c in cells) == {
        "Table 1": 12,
        "Table 2": 8,
        "Table 4": 12,
        "Table 5": 12,
        "Section 7 text": 1,
        "Table 6": 8,
    }
    by_label = {(c.source, c.label): c for c in cells}
    target = by_label[("Table 1", "lexical, target, dsgc")]
    assert (target.paper_count, target.paper_runs) == (27, 30)
    recency = by_label[("Section 7 text", "lexical, all templates, recency, M 2")]
    assert (recency.paper_count, recency.paper_runs) == (4, 60)
    assert {(c.paper_count, c.paper_runs) for c in cells if c.label == "lexical, profile, DSGC, 50 blocks"} == {(5, 15)}
    assert len(paper_cells.conditions()) == 48 and len(paper_cells.conditions(["lexical"])) == 30


def test_fisher_p_is_the_two_sided_exact_test():
    assert paper_cells.fisher_p((0, 15), (4, 15)) >= paper_cells.ALPHA > paper_cells.fisher_p((0, 15), (5, 15))
    assert paper_cells.fisher_p((27, 30), (20, 30)) == pytest.approx(fisher_exact([[27, 3], [20, 10]]).pvalue)


def _records(cond: Condition, wins: list[bool]) -> list[dict]:
    return [{**asdict(cond), "seed": s, "full_chain": w} for s, w in enumerate(wins)]


def test_compare_counts_our_runs_and_needs_every_condition():
    (cell,) = [c for c in paper_cells.CELLS if c.label == "lexical, target, dsgc" and c.source == "Table 1"]
    role, profile = cell.conditions
    records = _records(role, [True] * 15) + _records(profile, [True] * 12 + [False] * 3)
    got = paper_cells.compare(cell, records)
    assert got["paper"] == [27, 30] and got["ours"] == [27, 30] and got["p"] == pytest.approx(1.0)
    assert paper_cells.compare(cell, _records(role, [True] * 15)) is None  # profile did not run
    noisy = [{**r, "noise": "drop"} for r in records]  # other grid cells never count
    assert paper_cells.compare(cell, noisy) is None


def test_boundaries_suite_runs_every_variant_and_summarizes(tmp_path):
    suite = boundaries.BoundariesSuite()
    config = RunConfig(seeds=(0, 1), encoders=("lexical",))
    raw = suite.run(suite.build(config), config)
    assert {r["scenarios"] for r in raw["records"]} == {v.name for v in boundaries.VARIANTS}
    assert all("by_size" in r for r in raw["records"])
    stores = {(s["scenarios"], s["total_blocks"]): s for s in raw["stores"]}
    assert stores[("paper", 50)]["max_copies"] > 1 and stores[("paper-no-duplicates", 50)]["max_copies"] == 1
    summary = suite.summarize(raw, config)
    assert len(summary["cells"]) == 53
    tested = [c for c in summary["cells"] if c["paper"] is not None]
    assert len(tested) == 33 and all(c["neutral"] is not None for c in tested)
    row = boundaries.find(
        summary["counts"], scenarios="paper", encoder="lexical", template="role", method="dsgc", multiplier=3.0
    )
    assert row["runs"] == 2 and 0 <= row["successes_by_size"] <= row["successes"]
    suite.save(tmp_path, raw, summary)
    titles = [s.title for s in suite.render(suite.load(tmp_path), tmp_path)]
    assert titles == [
        "The paper's 53 cells: paper, `paper` family, `neutral`",
        "What causes the paper's boundaries",
        "The `neutral` generator and the paper's",
    ]
