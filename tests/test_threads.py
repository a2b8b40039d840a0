"""Same result with 1 and 2 Numba threads, serial and parallel dispatchers, run after run."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import hashlib, numpy as np, dsgc_fast
rng = np.random.default_rng(11)
n = 60_000
embs = rng.normal(size=(n, 24)).astype(np.float32)
q = rng.normal(size=(2, 24))
costs = rng.integers(1, 40, size=n)
edges = rng.integers(0, n, size=(3 * n, 2))
h = hashlib.sha256()
for policy in ("dsgc", "similarity", "recency"):
    for hops in (1, 3):
        r = dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 10, edges=edges, policy=policy, hops=hops)
        for a in (r.retained, r.rank, r.scores, r.relevance, r.propagated, r.reasons):
            h.update(np.ascontiguousarray(a).tobytes())
print(h.hexdigest())
"""


def _digest(threads: int, parallel_min_n: int) -> str:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), DSGC_PARALLEL_MIN_N=str(parallel_min_n))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_thread_count_and_dispatcher_do_not_change_results():
    digests = {
        _digest(1, 0),  # parallel kernels on one thread
        _digest(2, 0),  # parallel kernels on two threads
        _digest(2, 0),  # again: run after run
        _digest(2, 10**9),  # serial kernels only
    }
    assert len(digests) == 1
