"""``dsgc-bench longrange`` on one seed, and the agent policy equal to DSGC where there are no tools."""

from __future__ import annotations

import json

import pytest

from dsgc_bench import grid
from dsgc_bench.longrange_suite import HUB_POLICIES, LABELS, LongRangeSuite, main_records
from dsgc_bench.scenarios import generate
from dsgc_bench.suite import RunConfig, Suite, execute

SMALL = LongRangeSuite(fractions=(0.05, 0.25))


def test_suite_runs_and_reports(tmp_path):
    assert isinstance(SMALL, Suite)
    summary = execute(SMALL, RunConfig(seeds=(0,), encoders=("lexical",)), tmp_path)
    raw = json.loads((tmp_path / "raw-longrange.json").read_text())
    assert {r["policy"] for r in raw["facts"]} == set(LABELS)
    assert len(raw["facts"]) == 2 * 3 * 2 * len(LABELS)  # variants x kinds x budgets x policies
    assert {r["policy"] for r in raw["hubs"]} == set(HUB_POLICIES)
    for r in raw["facts"]:
        if r["policy"].startswith("store"):
            assert r["broken"] == 0  # the store keeps tool units whole
    assert all(r["same"] for r in raw["main"]) and len(raw["main"]) == 4
    claims = {c["claim"]: c["passed"] for c in summary["checks"]}
    assert claims["main suite: the store default (agent policy) keeps exactly what DSGC keeps, run by run"] is True
    assert claims["referent sessions: the agent policy with pins leaves 0% orphans, every figure as DSGC's"] is True
    assert claims["induced edges make no block kept for every question (hub check)"] is True
    loaded = SMALL.load(tmp_path)
    assert loaded["checks"] == json.loads(json.dumps(summary["checks"]))
    (section,) = SMALL.render(loaded, tmp_path)
    assert "### tool-heavy, lexical encoder" in section.text and "### Hubs" in section.text
    assert (tmp_path / "plots" / "longrange.png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("encoder", "seeds"), [("lexical", 15), pytest.param("sentence", 3, marks=pytest.mark.sentence)]
)
def test_store_default_keeps_what_dsgc_keeps_on_every_main_suite_run(encoder, seeds):
    """No tool units, so no working ages: the agent policy ranks and selects as the paper's rule."""
    runs = [
        (c, generate(c.template, seed, total_blocks=c.total_blocks, honeypot=c.honeypot))
        for c in grid.main_grid((encoder,), "neutral")
        if c.method == "dsgc"
        for seed in range(seeds)
    ]
    records = main_records(runs, RunConfig(encoders=(encoder,)))
    assert len(records) == 4 * seeds and all(r["same"] for r in records)
    targets = [r["full_chain"] for r in records if r["regime"] == "target"]
    assert sum(targets) / len(targets) >= 0.95
