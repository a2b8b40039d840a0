"""The harness's seams: every suite implements the protocol, the command line offers exactly
the registry, and importing or plotting changes no matplotlib state."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from dsgc_bench.cli import REPORT, _parser
from dsgc_bench.registry import ALL, REPORTED, REPRODUCE, SUITES
from dsgc_bench.suite import RunConfig, Suite

STAGES = ("build", "run", "summarize", "render", "save", "load")


@pytest.mark.parametrize("name", list(SUITES))
def test_every_registered_suite_implements_the_protocol(name):
    suite = SUITES[name]
    assert isinstance(suite, Suite) and suite.name == name and suite.title
    for stage in STAGES:
        want = list(inspect.signature(getattr(Suite, stage)).parameters)[1:]
        assert list(inspect.signature(getattr(suite, stage)).parameters) == want, stage


def test_reproduce_is_the_sequence_of_every_other_suite():
    assert REPRODUCE.members[: len(ALL)] == ALL
    assert [(s.name, s.scenarios) for s in REPRODUCE.members[len(ALL) :]] == [("scaling", "neutral")]
    assert set(SUITES) == {s.name for s in ALL} | {REPRODUCE.name}
    assert len({s.name for s in ALL}) == len(ALL)


def test_suites_switch_scenario_families():
    switched = REPRODUCE.with_scenarios("neutral")
    families = {s.name: getattr(s, "scenarios", None) for s in switched.members}
    assert families["main"] == families["scaling"] == families["induction"] == "neutral"
    assert families["referents"] is None and len(switched.members) == len(ALL)  # the two scaling runs merge
    assert {s.stem for s in REPORTED.members if hasattr(s, "stem")} >= {"main", "main-paper", "khop", "khop-paper"}
    with pytest.raises(ValueError, match="scenarios must be one of"):
        SUITES["main"].with_scenarios("artifact")


def test_the_command_line_lists_exactly_the_registry():
    (suite_arg,) = [a for a in _parser()._actions if a.dest == "suite"]
    assert list(suite_arg.choices) == [*SUITES, REPORT]


def test_run_config_rejects_bad_settings():
    with pytest.raises(ValueError, match="seeds"):
        RunConfig(seeds=())
    with pytest.raises(ValueError, match="encoders"):
        RunConfig(encoders=("bag",))
    with pytest.raises(ValueError, match="impl"):
        RunConfig(impl="gpu")


def test_importing_and_plotting_leave_matplotlib_alone(tmp_path):
    code = f"""
import importlib, pathlib, pkgutil, sys
import matplotlib
def settings():  # every setting but the backend, read without resolving the backend
    return {{k: matplotlib.rcParams[k] for k in list(matplotlib.rcParams.keys()) if k != "backend"}}
backend, before = matplotlib.rcParams._get_backend_or_none(), settings()
import dsgc_bench
for info in pkgutil.iter_modules(dsgc_bench.__path__):
    if info.name != "__main__":
        importlib.import_module("dsgc_bench." + info.name)
from dsgc_bench import plots
cells = [{{"encoder": "lexical", "template": "role", "method": "dsgc", "full_chain": 1.0, "full_chain_std": 0.0}}]
plots.bars(cells, ["dsgc"], pathlib.Path({str(tmp_path)!r}) / "bars.png", "t")
assert matplotlib.rcParams._get_backend_or_none() == backend, "the backend was set or resolved"
assert settings() == before, "matplotlib settings changed"
assert "matplotlib.pyplot" not in sys.modules, "pyplot was imported"
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bars.png").stat().st_size > 1000
