"""Per-stage wall and CPU time of exact ``retain`` on one synthetic store.

    .venv/bin/python tools/profile_stages.py 1000000
    .venv/bin/python tools/profile_stages.py 100000 --rounds 9

Runs the helpers ``retain`` itself calls (similarity, softmax, the fused one-hop pass that
forms support, scores and kept-reason codes, the budgeted walk) one by one, back to back in
the order ``retain`` runs them, then the whole call, and prints the best round of each.
The floor ``E @ q`` is timed in its own rounds first, and the stages start ``SETTLE``
seconds later, so BLAS threads no longer spin beside them; there is no pause between stages
(after one, a parallel region waits for threads to wake: see the README).  CPU time sums all
threads, so a CPU/wall ratio near 2 means both cores were busy.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import dsgc_fast
from dsgc_bench.synthetic import make_store
from dsgc_bench.timing import SETTLE
from dsgc_fast.kernels import selection
from dsgc_fast.stages import SELECTION_CODES, mixture, row_parts, similarity_rows, weighted_one_hop


def stage_times(n: int, d: int, rounds: int) -> dict[str, tuple[float, float]]:
    """{stage: (best wall seconds, best CPU seconds)} over ``rounds`` rounds."""
    s = make_store(n, d, seed=1)
    graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
    queries, weights = s.query[None, :].astype(np.float64), np.ones(1)
    parts = row_parts(n)
    best: dict[str, tuple[float, float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        old = best.get(name, (np.inf, np.inf))
        best[name] = (min(old[0], wall), min(old[1], cpu))
        return out

    for _ in range(rounds + 1):
        timed("floor E @ q", lambda: s.embs @ s.query)
    time.sleep(SETTLE)
    for _ in range(rounds + 1):  # the first round warms up (JIT, caches, threads)
        a = timed("similarity", lambda: similarity_rows(queries, s.embs))
        r = timed("softmax", lambda a=a: mixture(a, weights, 0.25))
        support, scores, kept = timed(
            "one hop + scores + kept codes", lambda r=r: weighted_one_hop(r, graph, s.costs, 1.0, 0.0)
        )
        mask, reasons = np.zeros(n, dtype=np.bool_), np.empty(n, dtype=np.int8)
        timed(
            "budgeted walk",
            lambda scores=scores, kept=kept, mask=mask, reasons=reasons: selection.select_budgeted(
                scores,
                None,
                s.costs,
                s.budget,
                SELECTION_CODES["first_fit"],
                kept,
                np.int8(5),
                np.int8(6),
                parts,
                mask,
                reasons,
            ),
        )
        del a, r, support, scores, kept, mask, reasons  # freed, as ``retain`` frees its own: no page faults
        timed("retain (whole call)", lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=graph))
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"| stage (N = {args.n:,}, d = {args.d}) | wall | CPU |")
    print("|---|---:|---:|")
    for name, (wall, cpu) in stage_times(args.n, args.d, args.rounds).items():
        print(f"| {name} | {wall * 1e3:.2f} ms | {cpu * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
