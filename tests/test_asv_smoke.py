"""The asv suite cannot rot: asv accepts it, and every benchmark runs once at its smallest size.

Each benchmark class (or function) is set up and called once with the first value of its
first parameter (the smallest N) and every value of the others, exactly as asv would call
it; ``timeraw_`` benchmarks run their code in a fresh interpreter.  Numbers are not
measured here (speed lives in asv and tools/peer_table.py).
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # make test-fast skips it; make test runs it

ROOT = Path(__file__).resolve().parents[1]
ASV_DIR = ROOT / "asv_bench"
PREFIXES = ("time_", "timeraw_", "mem_", "peakmem_", "track_")

sys.path.insert(0, str(ASV_DIR))


def _modules():
    for info in pkgutil.iter_modules([str(ASV_DIR / "benchmarks")]):
        yield importlib.import_module(f"benchmarks.{info.name}")


def _smallest(params):
    if not params:
        return [()]
    if not isinstance(params[0], list):  # a single parameter list
        params = [params]
    return list(itertools.product(params[0][:1], *params[1:]))


def _cases():
    for module in _modules():
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj) and not name.startswith("_"):
                for method in sorted(m for m in dir(obj) if m.startswith(PREFIXES)):
                    for args in _smallest(getattr(obj, "params", [])):
                        yield pytest.param(obj, method, args, id=f"{module.__name__}.{name}.{method}{list(args)}")
            elif inspect.isfunction(obj) and name.startswith(PREFIXES):
                yield pytest.param(None, obj, (), id=f"{module.__name__}.{name}")


def test_asv_accepts_the_suite():
    asv = Path(sys.executable).with_name("asv")
    out = subprocess.run([str(asv), "check", "--python=same"], cwd=ASV_DIR, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout


@pytest.mark.parametrize(("cls", "method", "args"), list(_cases()))
def test_benchmark_runs_once(cls, method, args):
    if cls is None:
        func = method
        if func.__name__.startswith("timeraw_"):
            code = func()
            if isinstance(code, tuple):  # asv's (statement, setup) form
                code = f"{code[1]}\n{code[0]}"
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr
        else:
            func()
        return
    bench = cls()
    if hasattr(bench, "setup"):
        try:
            bench.setup(*args)
        except NotImplementedError as exc:  # asv's "skip this combination"
            pytest.skip(str(exc))
    result = getattr(bench, method)(*args)
    if method.startswith("track_"):
        assert isinstance(result, (int, float))
    if hasattr(bench, "teardown"):
        bench.teardown(*args)
