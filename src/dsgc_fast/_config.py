"""Numba options for every kernel, read once from the environment.

DSGC_NUMBA_CACHE      "0" disables the on-disk compile cache (default: enabled; see ``cache_dir``)
DSGC_PARALLEL_MIN_N   smallest N for which the parallel dispatchers are used (default 32768);
                      below it the serial twins run, avoiding thread start-up cost.  Results
                      are identical either way: parallel loops only write row-owned outputs.
DSGC_THREADING_LAYER  Numba's threading layer: "auto" (default), "tbb", "omp" or "workqueue"

Threading layers.  ``tbb`` (the ``tbb`` package) is safe with threads and with ``fork``.
``omp`` (GNU OpenMP on Linux) is safe with threads, but a process forked after its threads
started aborts at its first parallel region; ``workqueue`` survives ``fork`` but aborts when
two threads run parallel code at once.  "auto" takes tbb if it loads, else omp; if neither
loads, the serial twins run (on workqueue, which Numba still needs to load kernels that hold
a parallel loop).  A layer named in ``NUMBA_THREADING_LAYER`` is kept under "auto", and one
that cannot load is replaced by auto's choice, with a warning.  Whatever layer runs, a
process forked after a fork-unsafe layer started its threads runs only the serial twins, so
prefork servers and ``multiprocessing`` pools work (serially in their children under omp).
The layer is chosen at this module's import (at the first kernel's load: the modules that call
kernels defer them, ``dsgc_fast._deferred``), before Numba starts its threads (it cannot change
after).

The exact path never uses fastmath (no reassociation, no FMA contraction), so each dot
product accumulates left to right exactly like ``dsgc_ref``.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sysconfig
import types
import warnings
from collections.abc import Callable

import numba

from dsgc_ref.contract import DsgcValueError


def cache_dir() -> str | None:
    """The directory Numba keeps the compiled kernels in (the first writable one), None if none is.

    ``NUMBA_CACHE_DIR`` when set; else ``dsgc_fast/kernels/__pycache__`` (a source checkout, a
    user or virtual-environment install); else Numba's user cache directory (``~/.cache/numba``
    on Linux), where Numba itself goes when the package's directory is read-only (a system
    install).  Numba tries the same locations in the same order.
    """
    from numba.misc.appdirs import AppDirs

    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
    candidates = [numba.config.CACHE_DIR] if numba.config.CACHE_DIR else []
    candidates += [os.path.join(kernels, "__pycache__"), AppDirs("numba", appauthor=False).user_cache_dir]
    for path in candidates:
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    return None


#: whether kernels are cached on disk: off with DSGC_NUMBA_CACHE=0, or when no location is writable
#: (then every process compiles what it runs; Numba would refuse to define a cached kernel)
CACHE: bool = os.environ.get("DSGC_NUMBA_CACHE", "1") != "0"
if CACHE and cache_dir() is None:
    warnings.warn("no writable directory for Numba's cache: kernels are compiled in every process; "
                  "set NUMBA_CACHE_DIR to a writable directory to keep them", RuntimeWarning, stacklevel=2)  # fmt: skip
    CACHE = False
PARALLEL_MIN_N: int = int(os.environ.get("DSGC_PARALLEL_MIN_N", "32768"))
THREADING_LAYERS = ("auto", "tbb", "omp", "workqueue")
THREADING_LAYER: str = os.environ.get("DSGC_THREADING_LAYER", "auto")
if THREADING_LAYER not in THREADING_LAYERS:
    raise DsgcValueError(f"DSGC_THREADING_LAYER must be one of {THREADING_LAYERS}, got {THREADING_LAYER!r}")
#: layers whose threads do not survive ``fork`` (GNU OpenMP)
FORK_UNSAFE_LAYERS = ("omp",)
_POOLS = {"tbb": "tbbpool", "omp": "omppool", "workqueue": "workqueue"}


def _load_pip_tbb() -> None:
    """Load the TBB library of the ``tbb`` package, if installed, so that Numba finds it by name.

    pip puts it in the environment's ``lib`` directory, which the dynamic loader does not
    search; once loaded, Numba's lookup of ``libtbb.so.12`` resolves to it.
    """
    for data in (sysconfig.get_path("data"), sysconfig.get_path("data", f"{os.name}_user")):
        path = os.path.join(data, "lib", "libtbb.so.12")
        if os.path.exists(path):
            try:
                ctypes.CDLL(path)
            except OSError:  # a broken install: the layer does not load and the next one is taken
                continue
            return


def _loads(layer: str) -> bool:
    try:
        importlib.import_module(f"numba.np.ufunc.{_POOLS[layer]}")
    except ImportError:
        return False
    return True


def _choose_layer(requested: str) -> tuple[str, bool]:
    """(Numba layer name, whether the parallel dispatchers may run) for ``DSGC_THREADING_LAYER``."""
    if requested == "auto" and numba.config.THREADING_LAYER in _POOLS:
        requested = numba.config.THREADING_LAYER  # the user's NUMBA_THREADING_LAYER
    if requested != "auto":
        if _loads(requested):
            return requested, True
        warnings.warn(f"threading layer {requested!r} does not load; choosing one as DSGC_THREADING_LAYER=auto does",
                      RuntimeWarning, stacklevel=2)  # fmt: skip
    for layer in ("tbb", "omp"):
        if _loads(layer):
            return layer, True
    return "workqueue", False


def _numba_threads_started() -> bool:
    try:
        numba.threading_layer()
    except ValueError:  # "Threading layer is not initialized"
        return False
    return True


if THREADING_LAYER in ("auto", "tbb"):
    _load_pip_tbb()
if _numba_threads_started():  # someone started Numba's threads before this import: keep them
    _parallel_allowed = True
else:
    numba.config.THREADING_LAYER, _parallel_allowed = _choose_layer(THREADING_LAYER)


_threads_started = False


def parallel(n: int) -> bool:
    """True if a store of ``n`` blocks takes the parallel dispatchers (same bits as the serial ones).

    False below ``PARALLEL_MIN_N``, when no thread-safe layer loads, and in a process forked
    after a fork-unsafe layer started its threads.  The first call starts Numba's threads:
    a kernel that calls a parallel kernel (``select_budgeted``) can be cached without the
    hook that starts them on loading (Numba drops it when the callee came from the cache),
    and run without them it crashes; so every path asks ``parallel`` before such a kernel.
    """
    global _threads_started
    if not _threads_started:
        numba.get_num_threads()  # starts the layer; a no-op if it runs already
        _threads_started = True
    return _parallel_allowed and n >= PARALLEL_MIN_N


def _after_fork_in_child() -> None:
    global _parallel_allowed
    if _numba_threads_started() and numba.threading_layer() in FORK_UNSAFE_LAYERS:
        _parallel_allowed = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

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
