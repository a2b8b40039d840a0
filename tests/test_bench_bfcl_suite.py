"""``dsgc-bench bfcl``: the BFCL replay as a suite of the protocol, on a few sessions.

Skipped without bfcl-eval (``make`` installs it, so CI runs it).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (pip install --no-deps bfcl-eval==2026.3.23)")

from dsgc_bench import cli
from dsgc_bench.bfcl import data
from dsgc_bench.bfcl.agent import CANDIDATES
from dsgc_bench.bfcl.anchors import POLICIES
from dsgc_bench.bfcl.compare import ANY, SHARES
from dsgc_bench.bfcl.suite import DEFAULT, LABELS, PADDED, UNITS_TITLE, BfclSuite
from dsgc_bench.suite import RunConfig, Suite, SuiteSequence, execute

SMALL = BfclSuite(sessions=2)
CONFIG = dict(seeds=(0,), encoders=("lexical",))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The small suite run twice into two folders."""
    outs = [tmp_path_factory.mktemp(f"bfcl{k}") for k in range(2)]
    for out in outs:
        execute(SMALL, RunConfig(**CONFIG), out)
    return outs


def test_implements_the_protocol_and_is_registered():
    assert isinstance(SMALL, Suite)
    (suite_arg,) = [a for a in cli._parser()._actions if a.dest == "suite"]
    assert "bfcl" in suite_arg.choices and "longrange" in suite_arg.choices


def test_files_are_deterministic_and_complete(folders):
    a, b = folders
    for name in ("raw-bfcl.json", "summary-bfcl.json", "raw-bfcl-units.json", "summary-bfcl-units.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    raw = json.loads((a / "raw-bfcl.json").read_text())
    assert raw["sessions"] == 4 and raw["check"]["mismatches"] == []
    assert {c["policy"] for c in raw["cells"] if c["table"] == "policies"} == set(LABELS)
    assert {c["policy"] for c in raw["cells"] if c["table"] == "candidates"} == set(CANDIDATES)
    assert all(len(c["kept"]) == len(raw["points"]) for c in raw["cells"] if c["table"] in ("policies", "candidates"))
    assert {c["policy"] for c in raw["cells"] if c["table"] == "padded"} == set(PADDED)
    assert all(
        len(c["kept"]) == len(raw["padded_points"]) == len(raw["points"])
        for c in raw["cells"]
        if c["table"] == "padded"
    )
    assert "units" not in raw  # the old file keeps its bytes; the product-unit tables have their own
    units = json.loads((a / "raw-bfcl-units.json").read_text())
    assert units["clear_tool_uses"].startswith("langchain ")  # LangChain's own edit decides where installed
    cells = {(c["unit"], c["encoder"], c["share"], c["policy"]) for c in units["cells"]}
    assert cells == {
        (unit, "lexical" if reads else ANY, share, policy)
        for unit in ("whitespace", "tokens")
        for share in SHARES
        for policy, (_, _, reads) in POLICIES.items()
    }
    assert all(len(c["kept"]) == len(units["points"]) == len(raw["points"]) for c in units["cells"])


def test_summary_claims_and_report(folders):
    out = folders[0]
    summary = SMALL.load(out)
    same = summary["same_as_prototype"]
    assert same["points"] == 2 * summary["points"] and same["same"] == same["points"]
    for enc_cells in summary["policies"].values():
        for cell in enc_cells.values():
            default = cell[DEFAULT]["pooled"]
            assert default["broken"] == 0 and default["used"] <= default["budget"]
            assert 0.0 <= default["recall"] <= 1.0
    claims = {c["claim"]: c["passed"] for c in summary["checks"]}
    assert claims["every replayed tool result equals BFCL's own executor"] is True
    assert claims["the engine's agent policy (without induction) keeps what prototype (R) keeps"] is True
    assert "induction helps: store default >= the agent policy without induction, pooled (lexical)" in claims
    units = summary["units"]
    unit_claims = {c["claim"]: c["passed"] for c in units["checks"]}
    assert unit_claims["the charged cost of what `select` sends equals its `used`, at every point"] is True
    assert unit_claims["every policy and anchor stays within its budget whenever the live roots fit"] is True
    assert [c["passed"] for c in units["checks"]][0] is True  # whitespace cells equal the old ones
    for share, cell in units["tables"]["tokens"]["lexical"].items():
        pooled = {policy: cell[policy]["pooled"] for policy in POLICIES}
        assert pooled["oracle-digest"]["recall"] >= pooled["oracle-units"]["recall"] >= pooled[DEFAULT]["recall"]
        assert all(p["broken"] == 0 and p["invalid"] == 0 for p in pooled.values()), share
    sections = SMALL.render(summary, out)
    assert [s.title for s in sections] == [UNITS_TITLE, SMALL.title, "BFCL: the agent-policy candidates measured"]
    assert "| `clear-tool-uses` |" in sections[0].text and "ws / tokens" in sections[0].text
    text = sections[1].text
    assert "Apache-2.0" in text and "bfcl-eval` 2026.3.23" in text and "gorilla.cs.berkeley.edu" in text
    assert "**today**" in text and "the agent policy" in text
    assert (out / "plots" / "bfcl-recall.png").stat().st_size > 1000


def test_missing_bfcl_eval_is_a_clear_message_and_reproduce_skips_it(tmp_path, monkeypatch):
    def missing():
        raise data.BfclUnavailable(data.INSTALL)

    monkeypatch.setattr(data, "data_dir", missing)
    with pytest.raises(SystemExit, match=r"bfcl: bfcl-eval is not installed: pip install --no-deps"):
        cli.main(["bfcl", "--encoder", "lexical", "--out", str(tmp_path), "--no-progress"])
    lines = []
    both = SuiteSequence("both", "both", (SMALL, Echo()))
    execute(both, RunConfig(**CONFIG, log=lines.append), tmp_path)
    assert any(line.startswith("bfcl: skipped: bfcl-eval is not installed") for line in lines)
    assert SMALL.load(tmp_path) is None and Echo().load(tmp_path) == {"seeds": [0]}


def test_held_out_splits_are_refused_without_the_flag(tmp_path):
    with pytest.raises(ValueError, match="held out"):
        BfclSuite(splits=("miss_func",))
    with pytest.raises(ValueError, match="at least one split"):
        BfclSuite(splits=())
    for argv in (["bfcl", "--split", "miss_param"], ["bfcl", "--split", "composite"]):
        with pytest.raises(SystemExit, match="held out"):
            cli.main([*argv, "--encoder", "lexical", "--out", str(tmp_path), "--no-progress"])
    with pytest.raises(SystemExit, match="apply to 'bfcl' only"):
        cli.main(["main", "--split", "base", "--out", str(tmp_path), "--no-progress"])
    assert not list(tmp_path.glob("*bfcl*"))


class Echo:
    """A minimal suite: its summary is the run's seeds."""

    name, title = "echo", "Echo"

    def build(self, config):
        return list(config.seeds)

    def run(self, plan, config):
        return {"seeds": plan}

    def summarize(self, raw, config):
        return raw

    def render(self, summary, out):
        return []

    def save(self, out, raw, summary):
        (out / "echo.json").write_text(json.dumps(summary))

    def load(self, out):
        path = out / "echo.json"
        return json.loads(path.read_text()) if path.exists() else None
