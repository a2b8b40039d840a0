"""The built wheel next to the lowest and the newest framework versions it declares (``make check-ranges``).

For each framework extra, the wheel is installed with that extra into two fresh virtual
environments: one with every requirement of the extra at its lower bound (``>=X`` pinned to
``==X``), one left to pip, which takes the newest versions the ranges allow.  Each runs the
extra's integration tests from ``tests/`` against the installed wheel (never ``src/``; the extras
the tests also need, ``BESIDE``, come at their newest versions), and the script prints the
framework versions it tested and the outcome of each run.

    python tools/check_ranges.py --wheel dist/dsgc-0.1.0-py3-none-any.whl
    python tools/check_ranges.py --wheel dist/*.whl --extras langchain

The environments live under ``build/check-ranges/`` (``--work``); pip's cache makes a rerun quick.
pytest and hypothesis (what the tests import beside the extra) come at their constraints.txt pins.
"""

from __future__ import annotations

import argparse
import email.parser
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: the integration tests of each framework extra
TESTS: dict[str, tuple[str, ...]] = {
    "langchain": ("tests/test_integrations_langchain.py",),
    "openai-agents": ("tests/test_integrations_openai_agents.py",),
}
#: extras installed beside each framework extra, at the newest versions: the tests count o200k_base
#: tokens, and the Agents SDK's tests share scripted models built on langchain-core
BESIDE: dict[str, tuple[str, ...]] = {"langchain": ("tokens",), "openai-agents": ("tokens", "langchain")}
#: what the tests import beside the extra (installed at their constraints.txt versions)
TEST_TOOLS = ("pytest", "hypothesis")
ENDS = ("lowest", "newest")


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` entries of ``wheel``'s metadata."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))
    return [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]


def extra_requirements(requirements: list[Requirement], extra: str, project: str = "dsgc") -> list[Requirement]:
    """The requirements only ``extra`` adds (a reference to another extra of ``project`` left out)."""
    return [
        r
        for r in requirements
        if r.marker is not None
        and "extra" in str(r.marker)
        and r.marker.evaluate({"extra": extra})
        and canonicalize_name(r.name) != project
    ]


def lowest_pins(requirements: list[Requirement]) -> list[str]:
    """``name==X`` for each requirement's lower bound ``>=X`` (a requirement without one is refused)."""
    pins = []
    for r in requirements:
        lows = [s.version for s in r.specifier if s.operator == ">="]
        if len(lows) != 1:
            raise SystemExit(f"{r}: a framework requirement needs exactly one lower bound (>=)")
        pins.append(f"{r.name}=={lows[0]}")
    return pins


def constraint_pins(names: tuple[str, ...], constraints: Path = ROOT / "constraints.txt") -> list[str]:
    """The ``name==version`` lines of ``constraints`` for ``names``."""
    wanted = {canonicalize_name(n) for n in names}
    lines = [line.strip() for line in constraints.read_text(encoding="utf-8").splitlines()]
    pins = [line for line in lines if "==" in line and canonicalize_name(line.split("==")[0]) in wanted]
    if len(pins) != len(wanted):
        raise SystemExit(f"{constraints} must pin each of {sorted(wanted)}")
    return pins


def outside_env() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH`` (a source tree on it would hide the installed wheel)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def fresh_env(where: Path, wheel: Path, extras: tuple[str, ...], more: list[str]) -> Path:
    """A new virtual environment at ``where`` holding ``wheel[extras]`` and the requirements ``more``; its interpreter.

    pip is this interpreter's (``pip --python``), so the environment itself needs none.
    """
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    subprocess.run([*install, f"{wheel.resolve()}[{','.join(extras)}]", *more], check=True, env=outside_env())
    return python


def installed(python: Path, names: list[str]) -> dict[str, str]:
    """The versions of ``names`` installed for ``python``."""
    code = "import sys, importlib.metadata as m; print('\\n'.join(m.version(n) for n in sys.argv[1:]))"
    out = subprocess.run([python, "-c", code, *names], check=True, capture_output=True, text=True).stdout
    return dict(zip(names, out.split()))


def run_tests(python: Path, extra: str) -> int:
    """The extra's integration tests run by ``python`` from the repository root against the installed wheel."""
    env = outside_env()
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", NUMBA_CACHE_DIR=str(python.parents[1] / "numba-cache"))
    home = subprocess.run(
        [python, "-c", "import dsgc_fast; print(dsgc_fast.__file__)"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    if not Path(home).is_relative_to(python.parents[1]):
        raise SystemExit(f"the tests would import dsgc_fast from {home}, not from the installed wheel")
    return subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS[extra]], cwd=ROOT, env=env
    ).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the built wheel (make dist)")
    parser.add_argument("--extras", nargs="+", default=list(TESTS), choices=list(TESTS))
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "check-ranges", help="where the environments go")
    args = parser.parse_args(argv)
    requirements = wheel_requirements(args.wheel)
    tools = constraint_pins(TEST_TOOLS)
    outcomes = []
    for extra in args.extras:
        frameworks = extra_requirements(requirements, extra)
        for end in ENDS:
            pins = lowest_pins(frameworks) if end == "lowest" else []
            python = fresh_env(args.work / f"{extra}-{end}", args.wheel, (extra, *BESIDE[extra]), [*pins, *tools])
            versions = installed(python, [r.name for r in frameworks])
            print(f"== [{extra}] {end}: " + ", ".join(f"{n}=={v}" for n, v in versions.items()), flush=True)
            code = run_tests(python, extra)
            outcomes.append((extra, end, versions, code))
    print("\nframework ranges:")
    for extra, end, versions, code in outcomes:
        pinned = " ".join(f"{n}=={v}" for n, v in versions.items())
        print(f"  [{extra}] {end:<6} {'passed' if code == 0 else f'FAILED (pytest exit {code})'}  {pinned}")
    return 0 if all(code == 0 for *_, code in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
