"""Packaging: the extras declare ranges (no framework pinned), constraints.txt pins the dev
environment at one point inside them, and the built wheel installs into a fresh environment with
the ``langchain`` extra (``make check-ranges`` runs the adapters' tests at both ends of the ranges)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tools import check_ranges

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: the extras holding the agent frameworks and their drivers
FRAMEWORK_EXTRAS = ("langchain", "postgres", "openai-agents", "peers")
#: the one exact pin the project keeps: torch's CPU build wherever torch is installed
EXACT = {"torch"}


def requirements(extra: str | None) -> list[Requirement]:
    """The requirements of ``extra`` (None: the core dependencies), references to our own extras left out."""
    lines = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != PROJECT["name"]]


def operators(requirement: Requirement) -> set[str]:
    return {s.operator for s in requirement.specifier}


def constraint_pins() -> dict[str, Version]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pins = [line.split("==") for line in lines if line and not line.startswith("#")]
    names = [canonicalize_name(name) for name, _ in pins]
    assert len(names) == len(set(names)), "a package pinned twice"
    return {canonicalize_name(name): Version(version) for name, version in pins}


def test_no_extra_pins_an_exact_version_but_torch():
    for extra in PROJECT["optional-dependencies"]:
        for r in requirements(extra):
            exact = bool(operators(r) & {"==", "==="})
            assert exact == (canonicalize_name(r.name) in EXACT), f"[{extra}] {r}"


def test_each_framework_requirement_declares_its_supported_range():
    for extra in FRAMEWORK_EXTRAS:
        for r in requirements(extra):
            assert {">=", "<"} <= operators(r), f"[{extra}] {r} needs a lower bound (>=) and an upper one (<)"


def test_constraints_pin_every_requirement_make_install_installs_inside_its_range():
    extras = re.search(r'-c constraints\.txt -e "\.\[([^\]]+)\]"', (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert extras is not None, "the Makefile's install line must use constraints.txt"
    pins = constraint_pins()
    for extra in [None, *extras.group(1).split(",")]:
        for r in requirements(extra):
            if r.marker is not None and not r.marker.evaluate():
                continue
            name = canonicalize_name(r.name)
            assert name in pins, f"constraints.txt does not pin {r.name}"
            assert r.specifier.contains(pins[name], prereleases=True), f"{r.name}=={pins[name]} is outside {r}"


def test_check_ranges_pins_each_framework_of_an_extra_at_its_lower_bound():
    metadata = [
        *(Requirement(f'{line}; extra == "langchain"') for line in PROJECT["optional-dependencies"]["langchain"]),
        Requirement('tbb>=2021.6; sys_platform == "linux"'),
        Requirement('dsgc[langchain]; extra == "postgres"'),
        Requirement('openai-agents<0.25,>=0.24; extra == "openai-agents"'),
    ]
    chosen = check_ranges.extra_requirements(metadata, "langchain")
    # the lowest versions docs/install.md names
    want = ["langchain==1.1", "langchain-core==1.1", "langgraph==1.0.2", "langgraph-prebuilt==1.0.2"]
    assert check_ranges.lowest_pins(chosen) == want
    assert [r.name for r in check_ranges.extra_requirements(metadata, "postgres")] == []
    with pytest.raises(SystemExit, match="lower bound"):
        check_ranges.lowest_pins([Requirement("langchain<2")])
    assert [pin.split("==")[0] for pin in check_ranges.constraint_pins(("pytest", "hypothesis"))] == [
        "hypothesis",
        "pytest",
    ]


@pytest.mark.slow
def test_the_built_wheel_installs_with_the_langchain_extra_into_a_fresh_environment(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], check=True, capture_output=True)
    (wheel,) = dist.glob("*.whl")
    pinned = [str(r) for r in check_ranges.wheel_requirements(wheel) if operators(r) & {"==", "==="}]
    assert [r for r in pinned if canonicalize_name(Requirement(r).name) not in EXACT] == []
    python = check_ranges.fresh_env(tmp_path / "env", wheel, ("langchain",), [])
    env = check_ranges.outside_env()
    code = "import dsgc_fast, dsgc_fast.integrations.langchain as m; print(m.__file__); print(dsgc_fast.DsgcError)"
    done = subprocess.run([python, "-c", code], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    home, error = done.stdout.splitlines()
    assert Path(home).is_relative_to(tmp_path / "env") and error == "<class 'dsgc_ref.contract.DsgcError'>"
