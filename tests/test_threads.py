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


BOUNDS_SCRIPT = r"""
import numpy as np, dsgc_fast, dsgc_ref
rng = np.random.default_rng(5)
for n in (0, 1, 2, 17, 60):
    embs, q = rng.normal(size=(n, 3)), rng.normal(size=(2, 3))
    costs = rng.integers(0, 6, size=n)
    edges = rng.integers(0, max(n, 1), size=(2 * n, 2)) if n else None
    uses = [[int(x) for x in rng.integers(0, 5, size=2)] for _ in range(n)]
    binds = [{int(rng.integers(0, 5)): i} for i in range(n)]
    for hops in (1, 3):
        for live in (None, [n - 1] if n else None):
            try:
                dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 3, edges=edges, hops=hops,
                                 live=live, uses=uses, binds=binds, selection="prefix")
            except dsgc_fast.ReferentEvictionError:
                pass
print("ok")
"""


def test_kernels_stay_in_bounds_under_numba_boundscheck():
    """NUMBA_BOUNDSCHECK=1 turns a silent out-of-bounds read into an IndexError."""
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", DSGC_NUMBA_CACHE="0", DSGC_PARALLEL_MIN_N="0")
    out = subprocess.run([sys.executable, "-c", BOUNDS_SCRIPT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
