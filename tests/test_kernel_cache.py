"""Each Numba dispatcher has its own on-disk cache name.

Numba keys its cache by qualified name, line and bytecode, not by compile options: a
serial and a parallel dispatcher compiled from one function would share entries, and the
serial one could load parallel code in a process without a thread pool (a segfault).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections import Counter

import numba
import numba.core.registry
import pytest

import dsgc_fast.kernels


def _dispatchers():
    for info in pkgutil.iter_modules(dsgc_fast.kernels.__path__):
        module = importlib.import_module(f"dsgc_fast.kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", obj


def test_every_dispatcher_has_its_own_cache_name():
    keys = Counter((d.py_func.__code__.co_filename, d.py_func.__qualname__) for _, d in _dispatchers())
    shared = [k for k, count in keys.items() if count > 1]
    assert not shared, f"dispatchers sharing one cache name: {shared}"


def test_parallel_twins_are_found():
    names = {name for name, _ in _dispatchers()}
    assert {"dsgc_fast.kernels.scoring.similarity_par", "dsgc_fast.kernels.batch.retain_stores_par"} <= names


def test_the_test_run_caches_under_a_hash_of_the_kernel_sources():
    """conftest points Numba's cache at .numba-cache/<hash of kernels/ and _config.py>."""
    from .conftest import _kernel_cache_dir

    if os.environ.get("NUMBA_CACHE_DIR") != str(_kernel_cache_dir()):
        pytest.skip("NUMBA_CACHE_DIR was set from outside the test run")
    assert str(_kernel_cache_dir()) == numba.config.CACHE_DIR
    assert _kernel_cache_dir().parent.name == ".numba-cache" and len(_kernel_cache_dir().name) == 16
