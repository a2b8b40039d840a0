"""``python -m dsgc_fast.demo``: its warm-up compiles every kernel the timed call then runs."""

from __future__ import annotations

import gc

from numba.core.registry import CPUDispatcher

from dsgc_fast import demo
from dsgc_fast._config import PARALLEL_MIN_N


def signatures() -> dict[int, int]:
    return {id(f): len(f.signatures) for f in gc.get_objects() if isinstance(f, CPUDispatcher)}


def test_the_warm_up_compiles_what_the_demo_then_times():
    n, d = 2 * PARALLEL_MIN_N, 16
    q, embs, costs, edges, budget = demo.random_store(n, d, seed=0)
    demo.warm_up(n, d, seed=1)
    before = signatures()
    demo.retain(q, embs, costs, budget, edges=edges)
    assert signatures() == before


def test_the_worked_example_keeps_the_chain_only_with_dsgc(capsys):
    demo.worked_example()
    out = capsys.readouterr().out
    assert "policy=similarity" in out and "CHAIN BROKEN" in out and "full chain kept" in out
