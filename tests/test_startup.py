"""What importing dsgc loads, where Numba caches the kernels, and ``warmup()``.

Each import is checked in a fresh interpreter (``sys.modules`` of this one holds whatever
earlier tests loaded); no timing: the import's cost is ``tools/agent_path.py``'s table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import dsgc_fast


def _fresh(code: str, **env: str) -> str:
    """The stdout of ``code`` run in a new interpreter with this one's ``sys.path``."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **env}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _loaded_after(statement: str, modules: list[str]) -> dict[str, bool]:
    code = f"import json, sys\n{statement}\nprint(json.dumps({{m: m in sys.modules for m in {modules!r}}}))"
    return json.loads(_fresh(code).splitlines()[-1])


def test_import_dsgc_fast_loads_no_submodule_until_a_name_is_used():
    loaded = _loaded_after("import dsgc_fast", ["dsgc_fast.engine", "dsgc_fast.memory.history", "numba"])
    assert loaded == {"dsgc_fast.engine": False, "dsgc_fast.memory.history": False, "numba": False}
    used = _loaded_after("from dsgc_fast import select", ["dsgc_fast.memory.history", "dsgc_fast.batch"])
    assert used == {"dsgc_fast.memory.history": True, "dsgc_fast.batch": False}


def test_the_langchain_adapter_loads_no_agent_stack_and_no_numba_at_import():
    pytest.importorskip("langchain.agents")
    heavy = ["langchain.agents", "langchain_core.language_models.chat_models", "langgraph.config", "dsgc_fast.batch"]
    heavy += ["numba", "dsgc_fast._config", "dsgc_fast.kernels.pipeline", "dsgc_fast.kernels.checks"]
    assert _loaded_after("import dsgc_fast.integrations.langchain", heavy) == dict.fromkeys(heavy, False)


def test_a_deferred_module_is_the_module_at_first_use():
    from dsgc_fast import graph
    from dsgc_fast.kernels import checks

    assert graph.checks.same_words is checks.same_words


def test_every_exported_name_resolves_and_is_listed():
    for name in dsgc_fast.__all__:
        assert getattr(dsgc_fast, name) is not None
    assert set(dsgc_fast.__all__) <= set(dir(dsgc_fast))
    from dsgc_fast import SelectCache, retain  # the from-import form

    assert retain is dsgc_fast.retain
    assert SelectCache is dsgc_fast.SelectCache


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'retian'"):
        dsgc_fast.retian  # noqa: B018
    with pytest.raises(ImportError):
        exec("from dsgc_fast import retian", {})


def test_the_cache_dir_is_numba_cache_dir_when_set(tmp_path):
    code = "from dsgc_fast import _config; print(_config.cache_dir(), _config.CACHE)"
    out = _fresh(code, NUMBA_CACHE_DIR=str(tmp_path)).split()
    assert out == [str(tmp_path), "True"]


def test_warmup_runs_the_agent_path_and_names_the_cache(monkeypatch):
    from dsgc_fast import _config

    assert dsgc_fast.warmup() == _config.cache_dir()
    assert any(name.endswith(".nbi") for _, _, files in os.walk(_config.cache_dir()) for name in files)
    monkeypatch.setattr(_config, "CACHE", False)
    assert dsgc_fast.warmup() is None
