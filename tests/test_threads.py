"""Same result with 1 and 2 Numba threads, serial and parallel dispatchers, run after run;
parallel retains from 8 threads at once and in forked children and pools, per threading layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numba
import pytest

from dsgc_fast import _config

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


@pytest.mark.slow
def test_kernels_stay_in_bounds_under_numba_boundscheck():
    """NUMBA_BOUNDSCHECK=1 turns a silent out-of-bounds read into an IndexError."""
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", DSGC_NUMBA_CACHE="0", DSGC_PARALLEL_MIN_N="0")
    out = subprocess.run([sys.executable, "-c", BOUNDS_SCRIPT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


LAYER_SCRIPT = r"""
import hashlib, json, os, threading
import multiprocessing as mp
import numpy as np, numba, dsgc_fast
from dsgc_fast import _config

N = 5_000  # above the small-store path; DSGC_PARALLEL_MIN_N=0 sends it to the parallel kernels


def digest(seed):
    rng = np.random.default_rng(seed)
    embs, q = rng.normal(size=(N, 8)), rng.normal(size=(2, 8))
    costs = rng.integers(1, 9, size=N)
    edges = rng.integers(0, N, size=(2 * N, 2))
    h = hashlib.sha256()
    for hops in (1, 3):
        r = dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 3, edges=edges, hops=hops)
        for a in (r.retained, r.scores, r.reasons):
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def threads():  # eight threads call retain at once
    out = [None] * 8
    def work(k):
        out[k] = digest(k % 2)
    workers = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return out


def forks():  # a forked child (a prefork server's worker) and a fork-started Pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, json.dumps([digest(0), digest(1), _config.parallel(N)]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    _, status = os.waitpid(pid, 0)
    with mp.get_context("fork").Pool(2) as pool:
        pooled = pool.map_async(digest, [0, 1]).get(timeout=60)
    return {"child_status": status, "child": json.loads(child or "null"), "pool": pooled}


parent = [digest(0), digest(1)]  # parallel kernels: the layer's threads are running now
print(json.dumps({"layer": numba.threading_layer(), "parent": parent, "threads": threads(), **forks()}))
"""


#: "auto" (tbb where the ``tbb`` package loads) and omp (fork-unsafe: its children run serially),
#: omp only once if that is what auto chose here
LAYERS = ["auto"] + (["omp"] if numba.config.THREADING_LAYER != "omp" else [])


@pytest.mark.parametrize("layer", LAYERS)
def test_parallel_retains_in_threads_forked_children_and_pools(layer):
    """Regression: after a parallel retain, a forked child aborted at its first parallel retain
    (GNU OpenMP) and a fork-started Pool hung.  Also 8 threads at once.  A hang fails through
    the timeouts."""
    env = dict(os.environ, DSGC_PARALLEL_MIN_N="0", DSGC_THREADING_LAYER=layer)
    out = subprocess.run([sys.executable, "-c", LAYER_SCRIPT], env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])  # TBB may print a note on forking right after threads ran
    assert got["layer"] == layer if layer != "auto" else got["layer"] in ("tbb", "omp")
    assert got["threads"] == got["parent"] * 4
    assert got["child_status"] == 0, f"the forked child died (status {got['child_status']})"
    assert got["child"][:2] == got["parent"] and got["pool"] == got["parent"]
    assert got["child"][2] is (got["layer"] not in _config.FORK_UNSAFE_LAYERS)  # omp children run serially


def test_the_first_parallel_question_starts_numbas_threads():
    """Regression: ``select_budgeted`` (which calls a parallel kernel) could be cached without
    Numba's hook that starts the threads on loading; a process that loaded it before any
    thread start crashed.  Every path asks ``_config.parallel`` first, which starts them."""
    script = "import numba; from dsgc_fast import _config; _config.parallel(1); print(numba.threading_layer())"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() in _config.THREADING_LAYERS, out.stderr


COLD_CACHE_SCRIPT = r"""
import sys, numpy as np, dsgc_fast
rng = np.random.default_rng(0)
n = 3000  # the large-store path, through select_budgeted
embs, q, costs = rng.normal(size=(n, 4)), rng.normal(size=4), rng.integers(1, 9, size=n)
order = rng.permutation(n) if sys.argv[1] == "order" else None
print(len(dsgc_fast.retain(q, embs, costs, int(costs.sum()) // 3, order=order).retained))
"""


@pytest.mark.skipif(os.environ.get("DSGC_HYPOTHESIS_PROFILE") != "long", reason="cold compiles: make fuzz only")
def test_fuzz_cold_cache_parallel_then_new_signature_then_load(tmp_path):
    """The crash itself, on an empty cache: a parallel retain caches the kernels; a retain with
    ``order`` compiles a new ``select_budgeted`` signature around the cached callee (without
    the reload hook); a third process loads it.  Each must return the same result."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [({"DSGC_PARALLEL_MIN_N": "0"}, "none"), ({}, "order"), ({}, "order")]
    outputs = []
    for extra, mode in runs:
        out = subprocess.run([sys.executable, "-c", COLD_CACHE_SCRIPT, mode], env={**env, **extra},
                             capture_output=True, text=True, timeout=600)  # fmt: skip
        assert out.returncode == 0, f"{mode}: status {out.returncode} {out.stderr[-2000:]}"
        outputs.append(out.stdout)
    assert outputs[1] == outputs[2]
