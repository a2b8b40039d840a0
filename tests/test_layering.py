"""The import direction between the three packages (read from their source with ``ast``).

* ``dsgc_ref`` (the oracle) imports nothing of ours but itself, and no NumPy: it must stay an
  independent second implementation, so equivalence tests can catch a bug on either side.
* ``dsgc_fast`` (the engine) imports from ``dsgc_ref`` only ``dsgc_ref.contract``: the shared
  names, reason codes, errors and the parameter object, never computation.
* ``dsgc_bench`` (the harness) uses the public API only: top-level names of ``dsgc_fast`` and
  ``dsgc_ref`` and the public modules listed below, never engine internals.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
OURS = ("dsgc_ref", "dsgc_fast", "dsgc_bench")
#: modules of dsgc_fast whose names are public API (everything else is internal)
PUBLIC_FAST = {
    "dsgc_fast",
    "dsgc_fast.encoders",
    "dsgc_fast.induction",
    "dsgc_fast.memory",
    "dsgc_fast.memory.messages",
    "dsgc_fast.memory.token_counts",
}


def _is_module(dotted: str) -> bool:
    path = SRC.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(package: str) -> list[tuple[str, str]]:
    """(file, absolute module imported) for every import of ours or of NumPy in ``package``.

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module.
    """
    out = []
    for path in sorted((SRC / package).rglob("*.py")):
        home = path.relative_to(SRC).parts[:-1]  # the package the file belongs to
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(home[: len(home) - node.level + 1]) if node.level else ""
                module = ".".join(x for x in (base, node.module or "") if x)
                names = [f"{module}.{a.name}" if _is_module(f"{module}.{a.name}") else module for a in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in (*OURS, "numpy"):
                    out.append((path.relative_to(SRC).as_posix(), name))
    return out


def test_the_oracle_imports_only_itself_and_no_numpy():
    bad = [(f, m) for f, m in imports("dsgc_ref") if not m.startswith("dsgc_ref")]
    assert bad == []


def test_the_engine_shares_only_the_contract_with_the_oracle():
    bad = [(f, m) for f, m in imports("dsgc_fast") if m.startswith("dsgc_ref") and m != "dsgc_ref.contract"]
    assert bad == []
    assert [(f, m) for f, m in imports("dsgc_fast") if m.startswith("dsgc_bench")] == []


def test_the_harness_uses_the_public_api_only():
    if not (SRC / "dsgc_bench").is_dir():
        pytest.skip("no dsgc_bench package in this tree")
    bad = [
        (f, m)
        for f, m in imports("dsgc_bench")
        if (m.startswith("dsgc_fast") and m not in PUBLIC_FAST and not m.startswith("dsgc_fast.induction"))
        or (m.startswith("dsgc_ref") and m not in ("dsgc_ref", "dsgc_ref.contract"))
    ]
    assert bad == []


def test_the_walk_resolves_relative_and_submodule_imports():
    found = set(imports("dsgc_fast"))
    assert ("dsgc_fast/engine.py", "dsgc_fast.stages") in found  # from . import stages
    assert ("dsgc_fast/engine.py", "dsgc_ref.contract") in found
    assert ("dsgc_fast/kernels/pipeline.py", "dsgc_fast._config") in found  # from .._config import JIT
    assert ("dsgc_fast/kernels/pipeline.py", "dsgc_fast.kernels.scoring") in found


def test_the_harness_reads_only_exported_names():
    """``dsgc_fast.X`` / ``dsgc_ref.X`` attribute reads in the harness name exported API."""
    import dsgc_fast
    import dsgc_ref

    if not (SRC / "dsgc_bench").is_dir():
        pytest.skip("no dsgc_bench package in this tree")
    exported = {"dsgc_fast": set(dsgc_fast.__all__), "dsgc_ref": set(dsgc_ref.__all__)}
    bad = []
    for path in sorted((SRC / "dsgc_bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in exported
                and node.attr not in exported[node.value.id]
            ):
                bad.append((path.relative_to(SRC).as_posix(), f"{node.value.id}.{node.attr}"))
            if isinstance(node, ast.ImportFrom) and node.module in exported and not node.level:
                bad += [
                    (path.relative_to(SRC).as_posix(), f"{node.module}.{a.name}")
                    for a in node.names
                    if a.name not in exported[node.module] and not _is_module(f"{node.module}.{a.name}")
                ]
    assert bad == []


def test_the_engine_core_never_imports_the_framework_adapters():
    """``dsgc_fast.integrations`` needs the extras' libraries; nothing outside it may import it."""
    bad = [
        (f, m)
        for f, m in imports("dsgc_fast")
        if m.startswith("dsgc_fast.integrations") and not f.startswith("dsgc_fast/integrations/")
    ]
    assert bad == []
