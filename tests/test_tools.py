"""The developer scripts run as ``python tools/<script>.py`` (tiny sizes; timings are not checked)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # make test-fast skips it; make test runs it

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def run_script(name: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``tools/<name>`` as ``__main__`` with ``args``, as the command line would."""
    monkeypatch.setattr(sys, "argv", [str(TOOLS / name), *args])
    runpy.run_path(str(TOOLS / name), run_name="__main__")


def test_peer_table_sections_run(capsys, monkeypatch):
    run_script(
        "peer_table.py",
        ["peer", "scaling", "memory", "batch", "pins", "--sizes", "20", "300", "--scaling-sizes", "200", "400",
         "--memory-n", "500", "--batch-stores", "40", "--batch-peer-stores", "10", "--pins-n", "500"],
        monkeypatch,
    )  # fmt: skip
    out = capsys.readouterr().out
    for heading in ("### peer", "### scaling", "### memory", "### batch", "### pins"):
        assert heading in out
    assert "| 300 |" in out and "retain_batch (exact)" in out and "breadth_first_order" in out


def test_profile_stages_runs(capsys, monkeypatch):
    run_script("profile_stages.py", ["2000", "--d", "16", "--rounds", "1"], monkeypatch)
    out = capsys.readouterr().out
    assert "budgeted walk" in out and "retain (whole call)" in out


def test_thread_scaling_runs(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))  # as when run as a script: it imports profile_stages beside it
    run_script("thread_scaling.py", ["2000", "--d", "16", "--rounds", "1", "--threads", "1", "2"], monkeypatch)
    out = capsys.readouterr().out
    assert "| budgeted walk |" in out and "| whole call / floor |" in out and "x2/x1" in out
    with pytest.raises(SystemExit):
        run_script("thread_scaling.py", ["2000", "--threads", "0"], monkeypatch)


def test_floor_precision_and_edges_sections_run(capsys, monkeypatch):
    run_script(
        "peer_table.py",
        ["floor", "precision", "edges", "--precision-sizes", "300", "--edges-n", "400", "--edges-degrees", "1"],
        monkeypatch,
    )
    out = capsys.readouterr().out
    for heading in ("### floor", "### precision", "### edges"):
        assert heading in out
    assert "| 300 | int8, per-row scale | 384 |" in out and "| 400 | 400 | same array again |" in out


def test_the_streaming_floor_reads_every_stored_element():
    import dsgc_fast
    from dsgc_bench.floor import stored_matrix, streaming_floor

    rng = np.random.default_rng(0)
    embs = rng.normal(size=(50, 7)).astype(np.float32)
    for form in (embs, embs.astype(np.float16), dsgc_fast.TiledEmbeddings.from_array(embs),
                 dsgc_fast.QuantizedEmbeddings(np.ones((50, 7), np.int8))):  # fmt: skip
        assert stored_matrix(form).dtype in (np.float32, np.uint16, np.int8)
        streaming_floor(form)()
    from dsgc_bench import floor

    out = np.empty(50, np.int64)
    floor._INT[0](np.ones((50, 7), np.int8), out)
    assert (out == 7).all()


def test_select_speed_runs(capsys, monkeypatch):
    pytest.importorskip("langchain_core", reason="trim_messages needs langchain-core (the langchain extra)")
    run_script("select_speed.py", ["--sizes", "40", "--rounds", "1"], monkeypatch)
    out = capsys.readouterr().out
    assert "| trim_messages | select, grown |" in out and "\n| 40 | " in out


def test_the_feature_table_s_dsgc_rows_are_what_the_tool_measures():
    from tests._requires import require

    require("langgraph", "langchain")
    require("agents", "openai-agents")
    from tools import feature_table

    names = [name for name, _ in feature_table.TOOLS if name.startswith("dsgc ")]
    rows = tuple(f"| {name} |" for name in names)
    measured = [
        line for line in feature_table.render(*feature_table.measure(names)).splitlines() if line.startswith(rows)
    ]
    written = (TOOLS.parent / "docs" / "FEATURES.md").read_text(encoding="utf-8").splitlines()
    assert len(measured) == len(names) and measured == [line for line in written if line.startswith(rows)]


def test_agent_turn_runs(capsys, monkeypatch):
    run_script("agent_turn.py", ["turn", "--archived", "0", "300", "--turns", "5"], monkeypatch)
    run_script("agent_turn.py", ["chain", "--n", "300", "--rounds", "1"], monkeypatch)
    out = capsys.readouterr().out
    assert "| archived blocks | active blocks |" in out and "| chain blocks | retain | compact |" in out
    assert out.count("\n| ") >= 6
