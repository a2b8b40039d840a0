"""Numba options for every kernel, read once from the environment.

DSGC_NUMBA_CACHE     "0" disables the on-disk compile cache (default: enabled)
DSGC_PARALLEL_MIN_N  smallest N for which the parallel dispatchers are used (default 32768);
                     below it the serial twins run, avoiding thread start-up cost.  Results
                     are identical either way: parallel loops only write row-owned outputs.

The exact path never uses fastmath (no reassociation, no FMA contraction), so each dot
product accumulates left to right exactly like ``dsgc_ref``.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable

CACHE: bool = os.environ.get("DSGC_NUMBA_CACHE", "1") != "0"
PARALLEL_MIN_N: int = int(os.environ.get("DSGC_PARALLEL_MIN_N", "32768"))

#: options for serial kernels
JIT = {"cache": CACHE, "nogil": True}
#: options for the parallel twin of a row-owned kernel
JIT_PARALLEL = {**JIT, "parallel": True}

#: LLVM fast-math flags of the opt-in fast mode only (``retain(..., mode="fast")``):
#: reassociation and FMA contraction let a dot product use SIMD partial sums.  nnan/ninf
#: are left out, so NaN and inf still propagate and are caught by the finiteness checks.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
JIT_FAST = {**JIT, "fastmath": FASTMATH}
JIT_FAST_PARALLEL = {**JIT_PARALLEL, "fastmath": FASTMATH}


def cache_twin(impl: Callable, tag: str) -> Callable:
    """``impl`` under its own cache name (``<qualname><tag>``), for a second dispatcher.

    Numba keys its on-disk cache by the function's qualified name, line and bytecode, not
    by compile options, so a serial and a ``parallel=True`` dispatcher of one body would
    overwrite each other's entries, and a serial dispatcher could load parallel machine
    code in a process whose thread pool was never started (a segfault).  Compile the
    parallel twin from ``cache_twin(impl, "_par")`` instead of ``impl`` itself.
    """
    twin = types.FunctionType(impl.__code__, impl.__globals__, impl.__name__ + tag, impl.__defaults__, impl.__closure__)
    twin.__qualname__ = impl.__qualname__ + tag
    twin.__module__ = impl.__module__
    twin.__doc__ = impl.__doc__
    return twin
