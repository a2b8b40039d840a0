"""dsgc-bench end to end: outputs, determinism, fast/ref agreement, every suite, sentence cache."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from dsgc_bench.bfcl.suite import BfclSuite
from dsgc_bench.cli import main
from dsgc_bench.registry import ALL, REPRODUCE, SUITES
from dsgc_bench.runner import METHODS, Condition, Encodings, run
from dsgc_bench.suite import SuiteSequence


def bench(*args: str) -> int:
    return main([*args, "--no-progress"])


def test_main_suite_writes_outputs_and_raw_json_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert bench("main", "--seeds", "3", "--encoder", "lexical", "--out", str(out)) == 0
    raw = (a / "raw-main-paper.json").read_bytes()
    assert raw == (b / "raw-main-paper.json").read_bytes()
    records = json.loads(raw)["records"]
    assert len(records) == 4 * 3 * 3
    assert {r["method"] for r in records} == {"similarity", "no_graph", "dsgc"}
    assert all(isinstance(r["by_size"], list) for r in records)
    assert (a / "summary-main-paper.json").read_bytes() == (b / "summary-main-paper.json").read_bytes()
    assert (a / "REPORT.md").read_bytes() == (b / "REPORT.md").read_bytes()
    summary = json.loads((a / "summary-main-paper.json").read_text())
    assert sum(c["n"] for c in summary["cells"]) == len(records)
    assert {c["claim"] for c in summary["checks"]} >= {"targets, dsgc >= 0.85 (lexical)"}
    report = (a / "REPORT.md").read_text()
    assert "Table 1" in report and "Table 3" in report and "Calibration history, `paper` scenarios" in report
    assert "caption margin" in report and "paper margin" in report
    assert (a / "plots" / "main-retention-paper.png").stat().st_size > 1000


def test_the_scenario_family_is_chosen_and_recorded(tmp_path):
    args = ("main", "--seeds", "2", "--encoder", "lexical", "--out", str(tmp_path))
    assert bench(*args) == 0 and bench(*args, "--scenarios", "neutral") == 0
    paper, neutral = (json.loads((tmp_path / f"raw-main{s}.json").read_text()) for s in ("-paper", ""))
    assert paper["scenarios"] == "paper" and "scenarios" not in neutral  # neutral files keep their old layout
    assert json.loads((tmp_path / "summary-main-paper.json").read_text())["scenarios"] == "paper"
    assert "scenarios" not in json.loads((tmp_path / "summary-main.json").read_text())
    assert [r["budget"] for r in paper["records"]] != [r["budget"] for r in neutral["records"]]  # other stores
    report = (tmp_path / "REPORT.md").read_text()  # both families found in the folder are reported
    assert (
        "## Main suite (paper Tables 1-3), `paper` scenarios" in report
        and "## Main suite (paper Tables 1-3)\n" in report
    )
    for bad in (("referents", "--scenarios", "paper"), ("report", "--scenarios", "neutral")):
        with pytest.raises(SystemExit, match="scenario"):
            bench(*bad, "--out", str(tmp_path))


def test_fast_and_ref_engines_agree_run_by_run():
    conds = [Condition(template=t, encoder="lexical", method=m) for t in ("expense", "profile") for m in METHODS]
    conds += [Condition(template="role", encoder="lexical", method="dsgc", noise="spurious_honeypot", noise_rate=0.5)]
    conds += [Condition(template="role", encoder="lexical", method="dsgc", multiplier=1.0, lambda_pi=0.5)]
    encodings = Encodings()
    fast = run(conds, range(3), encodings, impl="fast")
    ref = run(conds, range(3), encodings, impl="ref")
    assert fast == ref


def test_unknown_method_and_impl_are_rejected():
    with pytest.raises(ValueError, match="method must be one of"):
        Condition(template="role", encoder="lexical", method="pagerank")
    with pytest.raises(ValueError, match="impl must be one of"):
        run([Condition(template="role", encoder="lexical", method="dsgc")], [0], Encodings(), impl="gpu")


@pytest.mark.slow
def test_reproduce_runs_every_suite(tmp_path, monkeypatch):
    # the BFCL replay on two sessions of each split (the whole replay is the slowest suite);
    # without bfcl-eval reproduce skips it
    quick = tuple(BfclSuite(sessions=2) if s.name == "bfcl" else s for s in REPRODUCE.members)
    monkeypatch.setitem(SUITES, "reproduce", SuiteSequence("reproduce", "Every suite", quick))
    assert bench("reproduce", "--seeds", "1", "--encoder", "lexical", "--out", str(tmp_path)) == 0
    report = (tmp_path / "REPORT.md").read_text()
    bfcl_eval = importlib.util.find_spec("bfcl_eval") is not None
    for suite in ALL:
        if suite.name == "bfcl" and not bfcl_eval:
            assert suite.load(tmp_path) is None
            continue
        assert suite.load(tmp_path) is not None
        assert f"## {suite.title}" in report
    scaling = json.loads((tmp_path / "raw-scaling.json").read_text())["records"]
    assert max(r["total_blocks"] for r in scaling) == 10000  # the neutral scaling suite runs too
    table6 = json.loads((tmp_path / "raw-scaling-paper.json").read_text())["records"]
    assert {r["total_blocks"] for r in table6} == {20, 50}
    noisy = [r for r in json.loads((tmp_path / "raw-graph-noise.json").read_text())["records"] if r["noise"] != "none"]
    assert noisy and all("edges_added" in r and "edges_dropped" in r for r in noisy)


def test_module_entry_point_renders_the_report(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dsgc_bench", "report", "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "REPORT.md").read_text().startswith("# dsgc benchmark report")


@pytest.mark.sentence
def test_sentence_main_suite_reuses_its_encodings(tmp_path, capsys):
    args = ("main", "--seeds", "1", "--encoder", "sentence", "--out", str(tmp_path))
    assert bench(*args) == 0
    cache = tmp_path / "cache" / "encodings-sentence.npz"
    first, written = (tmp_path / "raw-main-paper.json").read_bytes(), cache.stat().st_mtime_ns
    capsys.readouterr()
    assert bench(*args) == 0
    assert re.search(r"^main: [0-9.]+ s \(encoding 0\.0 s\)$", capsys.readouterr().out, re.MULTILINE)
    assert cache.stat().st_mtime_ns == written  # nothing new was encoded, so the cache was not rewritten
    assert (tmp_path / "raw-main-paper.json").read_bytes() == first
