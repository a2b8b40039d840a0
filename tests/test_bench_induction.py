"""The induction suite: scoring arithmetic, agreement with the main-suite runner, outputs."""

from __future__ import annotations

import json

import pytest

from dsgc_bench import induction_suite as suite
from dsgc_bench.runner import Condition, Encodings, run
from dsgc_bench.scenarios import TEMPLATES
from dsgc_bench.suite import RunConfig, execute

SEEDS = (0, 1, 2)


def test_score_edges_and_pooling():
    counts = [suite.score_edges({(1, 0), (2, 1)}, {(1, 0), (3, 2)}), suite.score_edges(set(), {(5, 4)})]
    assert counts == [{"tp": 1, "fp": 1, "fn": 1}, {"tp": 0, "fp": 0, "fn": 1}]
    pooled = suite.precision_recall(counts)
    assert pooled["precision"] == pytest.approx(0.5) and pooled["recall"] == pytest.approx(1 / 3)
    assert suite.precision_recall([{"tp": 0, "fp": 0, "fn": 0}])["precision"] is None


def test_referent_edges_resolve_to_the_newest_binder_and_skip_self():
    binds = [{"X-1": "a"}, None, {"X-1": "b"}, None]
    uses = [[], ["X-1"], ["X-1"], ["X-1", "Y-2"]]
    assert suite.referent_edges(uses, binds) == {(1, 2), (3, 2)}


def test_supplied_and_no_edges_match_the_main_suite_runner():
    scenarios = suite.InductionSuite().build(RunConfig(seeds=SEEDS)).scenarios
    records = suite.retention_records(scenarios, ["lexical"], Encodings())
    mine = {(r["template"], r["seed"], r["edges"]): r["full_chain"] for r in records}
    conditions = [Condition(t, "lexical", m) for t in TEMPLATES for m in ("dsgc", "no_graph")]
    for r in run(conditions, SEEDS, Encodings()):
        source = "supplied" if r["method"] == "dsgc" else "none"
        assert mine[(r["template"], r["seed"], source)] == r["full_chain"]


def test_edge_records_list_every_error():
    scenarios = suite.InductionSuite(templates=("role",)).build(RunConfig(seeds=(0,))).scenarios
    rec = suite.edge_records(scenarios)[0]
    assert rec["tp"] + rec["fn"] == len(scenarios[0].edges)
    assert len(rec["false_positives"]) == rec["fp"] and len(rec["missed"]) == rec["fn"]


def test_suite_writes_raw_summary_and_report(tmp_path):
    induction = suite.InductionSuite(templates=("role", "expense"), domains=("support",))
    summary = execute(induction, RunConfig(seeds=SEEDS[:2], encoders=("lexical",)), tmp_path)
    raw = json.loads((tmp_path / "raw-induction.json").read_text())
    assert len(raw["retention"]) == 2 * 2 * len(suite.EDGE_SOURCES) and len(raw["sessions"]) == 2
    saved = json.loads((tmp_path / "summary-induction.json").read_text())
    assert set(saved) == set(suite.SUMMARY_FIELDS)
    assert induction.load(tmp_path) == json.loads(json.dumps(summary))
    report = (tmp_path / "induction.md").read_text()
    assert "| role | lexical |" in report and "| support |" in report and "| regime:target |" in report
