"""One error tree: every exception class of the three packages derives from ``dsgc_fast.DsgcError``
and keeps its builtin parent, and every refusal raised in ``src/`` is one of them."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref
from dsgc_fast import DsgcError, DsgcRuntimeError, DsgcTypeError, DsgcValueError
from dsgc_ref import contract
from tests._requires import skip_or_fail

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = ("dsgc_ref", "dsgc_fast", "dsgc_bench")
#: builtin exceptions the package must not raise itself (a ``Dsgc*Error`` twin exists for each)
BUILTIN_REFUSALS = {"ValueError": DsgcValueError, "TypeError": DsgcTypeError, "RuntimeError": DsgcRuntimeError}


def exception_classes() -> dict[str, type[BaseException]]:
    """``module.Class`` -> class for every exception class defined in a module of the three packages."""
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if info.name.endswith("__main__"):
                continue
            try:
                module = importlib.import_module(info.name)
            except ImportError as exc:  # an adapter whose framework (an extra) is not installed
                skip_or_fail(f"{info.name} does not import: {exc}")
            for name, value in vars(module).items():
                if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                    found[f"{info.name}.{name}"] = value
    return found


def test_every_exception_class_of_the_package_derives_from_dsgc_error():
    found = exception_classes()
    named = {
        "dsgc_ref.contract.ReferentEvictionError": RuntimeError,
        "dsgc_fast.memory.records.SessionError": ValueError,
        "dsgc_fast.memory._access.ArchiveLockedError": RuntimeError,
        "dsgc_fast.memory._nesting.NotCanonical": ValueError,
        "dsgc_bench.suite.Unavailable": RuntimeError,
    }
    assert set(named) <= set(found)  # the walk sees the classes it must check
    assert sorted(name for name, cls in found.items() if not issubclass(cls, DsgcError)) == []
    for name, parent in named.items():  # existing except clauses still catch them
        assert issubclass(found[name], parent), name


def test_the_tree_is_exported_from_both_front_doors():
    for name in ("DsgcError", "DsgcValueError", "DsgcTypeError", "DsgcRuntimeError", "SessionError"):
        assert name in dsgc_fast.__all__
    assert (
        dsgc_fast.DsgcError is contract.DsgcError and dsgc_fast.ReferentEvictionError is dsgc_ref.ReferentEvictionError
    )
    for twin, builtin in [(DsgcValueError, ValueError), (DsgcTypeError, TypeError), (DsgcRuntimeError, RuntimeError)]:
        assert twin.__bases__ == (DsgcError, builtin)


def builtin_raises(package: str) -> list[str]:
    """``file:line`` of each ``raise ValueError(...)`` (TypeError, RuntimeError) in ``package``'s source."""
    out = []
    for path in sorted((SRC / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id in BUILTIN_REFUSALS:
                    out.append(f"{path.relative_to(SRC)}:{node.lineno} {target.id}")
    return out


@pytest.mark.parametrize("package", ["dsgc_ref", "dsgc_fast"])
def test_no_refusal_is_a_bare_builtin(package):
    assert builtin_raises(package) == []


def test_refusals_from_every_layer_are_caught_as_dsgc_error():
    calls = [
        lambda: dsgc_fast.retain(np.zeros(2), np.zeros((2, 2)), [1, 1], -1),  # engine: a negative budget
        lambda: dsgc_ref.retain([0.0, 0.0], [[0.0, 0.0]], [1], -1),  # the oracle
        lambda: dsgc_fast.select("not a list", 10),  # selection: the wrong type
        lambda: dsgc_fast.select([{"role": "robot", "content": "x"}], 10),  # a SessionError
        lambda: dsgc_fast.MemoryStore().add(3),  # the store
    ]
    for call in calls:
        with pytest.raises(DsgcError):
            call()
