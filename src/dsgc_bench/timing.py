"""Timing helpers for the developer scripts: interleaved best-of-k wall-clock timing."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def per_call(fn: Callable[[], object], min_seconds: float) -> float:
    """Seconds per call of ``fn``, averaged over enough calls to last ``min_seconds``."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return elapsed / calls
        calls = max(calls * 2, int(calls * min_seconds / max(elapsed, 1e-9)) + 1)


#: seconds to wait, untimed, before each contender: thread pools spin after a parallel call
#: (OpenBLAS workers for 2^28 cycles by default, about 0.1 s; OpenMP workers shorter), and a
#: contender timed while the previous one's workers still spin shares the cores with them
SETTLE = 0.2


def interleaved(
    fns: Sequence[Callable[[], object]], rounds: int = 5, min_seconds: float = 0.05, settle: float = SETTLE
) -> list[float]:
    """Best per-call time of each function over ``rounds`` rounds, run A B C, A B C, ...

    Interleaving spreads any load from other processes over all contenders alike; the best
    round is the least disturbed estimate of each.  Each contender starts after ``settle``
    idle seconds, so no contender pays for another's spinning worker threads.
    """
    for fn in fns:  # warm-up: JIT compilation, caches, page faults
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            time.sleep(settle)
            best[k] = min(best[k], per_call(fn, min_seconds))
    return best
