"""Start-up latency of a fresh process: ``import dsgc_fast`` plus the first ``retain``.

``timeraw_`` benchmarks run their returned code in a new interpreter.  The warm case uses
the package's Numba cache (filled by the setup run); the cold case points ``NUMBA_CACHE_DIR``
at an empty directory, so every kernel the first call needs is compiled.
"""

from __future__ import annotations

_FIRST_CALL = """
import numpy as np
import dsgc_fast
embs = np.random.default_rng(0).random((20, 384), dtype=np.float32)
dsgc_fast.retain(embs[0], embs, np.arange(1, 21), 50, edges=[(1, 0), (2, 1)])
"""

_COLD = (
    """
import os, tempfile
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
"""
    + _FIRST_CALL
)


def timeraw_import_and_first_retain_warm():
    return _FIRST_CALL


def timeraw_import_and_first_retain_cold():
    return _COLD


timeraw_import_and_first_retain_cold.repeat = 2
timeraw_import_and_first_retain_cold.number = 1
