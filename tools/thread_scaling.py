"""Per-stage thread scaling of exact ``retain``: each stage's best wall time at several thread counts.

    .venv/bin/python tools/thread_scaling.py 1000000 --threads 1 2
    .venv/bin/python tools/thread_scaling.py 1000000 --threads 1 2 4 8 16 --rounds 7

For each thread count t, Numba's threads (``numba.set_num_threads``) and the BLAS threads of
the floor ``E @ q`` (``threadpoolctl``) are both limited to t, and ``profile_stages.stage_times``
times the stages ``retain`` runs, one by one, then the whole call.  The table gives each
stage's best wall time per t and its speed-up ``time(1 thread) / time(t threads)`` (1.00 for a
stage that does not scale; t for one that scales perfectly), and the whole call over the floor
at each t.  Stages are timed in one process, thread counts in ascending order.
"""

from __future__ import annotations

import argparse
import os
import platform

import numba
from profile_stages import stage_times
from threadpoolctl import threadpool_limits

FLOOR = "floor E @ q"
WHOLE = "retain (whole call)"


def scaling(n: int, d: int, rounds: int, threads: list[int]) -> dict[int, dict[str, float]]:
    """{threads: {stage: best wall seconds}} for each thread count of ``threads``."""
    out: dict[int, dict[str, float]] = {}
    for t in threads:
        numba.set_num_threads(t)
        with threadpool_limits(limits=t):
            out[t] = {name: wall for name, (wall, _cpu) in stage_times(n, d, rounds).items()}
    return out


def table(times: dict[int, dict[str, float]]) -> str:
    """A markdown table: per stage, milliseconds at each thread count and the speed-up from the first."""
    counts = sorted(times)
    base = counts[0]
    head = " | ".join(f"{t} thr (ms) | x{t}/x{base}" for t in counts[1:])
    lines = [f"| stage | {base} thr (ms) | {head} |", "|---|" + "---:|" * (1 + 2 * (len(counts) - 1))]
    for name in times[base]:
        cells = [f"{times[base][name] * 1e3:.2f}"]
        for t in counts[1:]:
            cells += [f"{times[t][name] * 1e3:.2f}", f"{times[base][name] / times[t][name]:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ratios = [f"{times[base][WHOLE] / times[base][FLOOR]:.2f}"]
    for t in counts[1:]:
        ratios += [f"{times[t][WHOLE] / times[t][FLOOR]:.2f}", ""]
    lines.append("| whole call / floor | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    limit = numba.config.NUMBA_NUM_THREADS
    if any(t < 1 or t > limit for t in args.threads):
        parser.error(f"--threads must lie in 1..{limit} (NUMBA_NUM_THREADS on this machine)")
    times = scaling(args.n, args.d, args.rounds, sorted(args.threads))
    print(f"N = {args.n:,}, d = {args.d}, best of {args.rounds} rounds, {os.cpu_count()} CPUs, {platform.machine()}")
    print(f"Numba {numba.__version__}, threading layer {numba.threading_layer()}\n")
    print(table(times))


if __name__ == "__main__":
    main()
