"""The peer table: ``dsgc_fast`` against the NumPy/SciPy peer and the ``E @ q`` floor.

    .venv/bin/python tools/peer_table.py                 # every section, the issue's sizes
    .venv/bin/python tools/peer_table.py peer --sizes 20 1000
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/peer_table.py

Everything is measured in one process and one run, contenders interleaved round by round
(best round reported).  Sections:

peer      per-call time of the two floors, ``E @ q`` (one BLAS pass over the float32 matrix)
          and the streaming floor (``dsgc_bench.floor``: a fast-math row sum over the same
          bytes), the peer (``dsgc_bench.peer``), exact ``retain`` and fast-mode
          ``retain`` (d = 384, float32, average in-degree 2, budget 5% of the total cost; both
          sides get their graph prebuilt: a ``DependencyGraph`` and a SciPy CSR matrix), and
          the ratios against both floors.
floor     the candidates for the streaming floor on the float32 matrix: ``E @ q``, the
          fast-math row sum and the fast-mode dot product.
precision exact ``retain`` on the float64, float32, float16 and int8 (per-row scale) forms of
          one store and on float32/float16 ``TiledEmbeddings``: time, the row-sum floor over
          the bytes each form stores, the ratio to the float32 call, and how far the kept
          set moves from the float64 one (intersection over union).
edges     ``retain`` with a raw (E, 2) edge array, the same array again (its graph is reused)
          and a new array every call (built every time), against a prebuilt graph and both
          floors.
scaling   exact ``retain`` time per block from N = 1,000 to 1,000,000 (linear = flat).
memory    peak extra memory of one ``retain`` call per block (tracemalloc; NumPy and Numba
          allocations are both traced), with a prebuilt graph and with a raw edge list.
latency   a fresh process: ``import dsgc_fast`` + the first ``retain``, with a cold (empty)
          and a warm Numba cache.
batch     ``retain_batch`` over 100,000 stores of 20 blocks (d = 256) against the peer called
          in a loop (timed on the first ``--batch-peer-stores`` stores, graph built per call,
          as each call gets a new store) and ``retain`` in a loop; throughput in stores/s.
pins      pin closure over 1,000,000 blocks with 4,000,000 use links against SciPy's
          ``breadth_first_order`` from a virtual source linked to the live roots.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tracemalloc

import numpy as np

import dsgc_fast
from dsgc_bench.peer import peer_graph, peer_retain
from dsgc_bench.synthetic import make_ragged, make_referents, make_store
from dsgc_bench.timing import interleaved

D = 384


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def _row(*cells: object) -> None:
    """Print one Markdown table row."""
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def _header(*names: str, text: tuple[int, ...] = ()) -> None:
    """Print a Markdown table header; columns are right-aligned except those listed in ``text``."""
    _row(*names)
    _row(*("---" if k in text else "---:" for k in range(len(names))))


def _times(*seconds: float) -> list[str]:
    return [_fmt_time(t) for t in seconds]


def _ratios(pairs: list[tuple[float, float]]) -> list[str]:
    return [f"{a / b:.2f}x" for a, b in pairs]


#: interleaved rounds per size (best round reported)
ROUNDS = 7


def environment() -> str:
    """One line naming the BLAS kernel and thread counts the numbers were taken with."""
    from threadpoolctl import threadpool_info

    blas = [
        f"{i['internal_api']} {i['version']} {i.get('architecture', '')} x{i['num_threads']}" for i in threadpool_info()
    ]
    notes = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ]
    return f"numpy {np.__version__}; BLAS {', '.join(blas)}; numba threads {dsgc_fast_threads()}" + (
        f"; set: {' '.join(notes)}" if notes else ""
    )


def dsgc_fast_threads() -> int:
    import numba

    return numba.get_num_threads()


def peer_section(sizes: list[int]) -> None:
    from dsgc_bench.floor import streaming_floor

    _header("N", "E @ q", "row-sum floor", "NumPy/SciPy peer", "retain (exact)", "retain (fast)", "exact / E@q",
            "exact / row sum", "fast / E@q", "fast / row sum", "peer / exact", "peer / fast")  # fmt: skip
    for n in sizes:
        s = make_store(n, D, seed=1)
        q32 = s.query
        graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
        csr = peer_graph(n, s.edges)

        def floor() -> object:
            return s.embs @ q32

        def peer() -> object:
            return peer_retain(q32, s.embs, s.costs, s.budget, csr)

        def exact() -> object:
            return dsgc_fast.retain(q32, s.embs, s.costs, s.budget, edges=graph)

        def fast() -> object:
            return dsgc_fast.retain(q32, s.embs, s.costs, s.budget, edges=graph, mode="fast")

        t_floor, t_sum, t_peer, t_exact, t_fast = interleaved(
            [floor, streaming_floor(s.embs), peer, exact, fast], rounds=ROUNDS
        )
        ratios = [
            (t_exact, t_floor),
            (t_exact, t_sum),
            (t_fast, t_floor),
            (t_fast, t_sum),
            (t_peer, t_exact),
            (t_peer, t_fast),
        ]
        _row(f"{n:,}", *_times(t_floor, t_sum, t_peer, t_exact, t_fast), *_ratios(ratios))


def floor_section(sizes: list[int]) -> None:
    """Which single read of the float32 matrix is fastest: BLAS, the row sum, the fast-mode dot product."""
    from dsgc_bench.floor import streaming_floor
    from dsgc_fast.kernels import scoring

    _header("N", "E @ q", "row sum (fast-math)", "fast-mode dot product", "row sum / E @ q", "dot / row sum")
    for n in sizes:
        s = make_store(n, D, seed=1)
        q, out = s.query.astype(np.float64), np.empty(n)
        kernel = scoring.similarity_fast_par if n >= 32768 else scoring.similarity_fast
        t_blas, t_sum, t_dot = interleaved(
            [lambda: s.embs @ s.query, streaming_floor(s.embs), lambda: kernel(s.embs, q, out)], rounds=ROUNDS
        )
        _row(f"{n:,}", *_times(t_blas, t_sum, t_dot), *_ratios([(t_sum, t_blas), (t_dot, t_sum)]))


def precision_section(sizes: list[int]) -> None:
    """Exact ``retain`` on float64 / float32 / float16 / int8 forms of one store, and tiled ones."""
    from dsgc_bench.floor import stored_matrix, streaming_floor
    from dsgc_bench.forms import FORMS, embedding_form

    _header("N", "embeddings", "bytes per block", "retain (exact)", "row-sum floor (same bytes)", "retain / floor",
            "vs float32 retain", "kept set vs float64", text=(1,))  # fmt: skip
    for n in sizes:
        s = make_store(n, D, seed=1)
        graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
        forms = {name: embedding_form(s.embs, name) for name in FORMS}

        def call(embs: object) -> object:
            return dsgc_fast.retain(s.query, embs, s.costs, s.budget, edges=graph)

        names = list(forms)
        times = interleaved(
            [*(lambda e=forms[k]: call(e) for k in names), *(streaming_floor(forms[k]) for k in names)], rounds=ROUNDS
        )
        t_retain, t_floor = dict(zip(names, times[: len(names)])), dict(zip(names, times[len(names) :]))
        kept64 = set(call(forms["float64"]).retained.tolist())
        for k in names:
            kept = set(call(forms[k]).retained.tolist())
            overlap = len(kept & kept64) / max(len(kept | kept64), 1)
            per_block = stored_matrix(forms[k]).nbytes / n
            ratios = [(t_retain[k], t_floor[k]), (t_retain[k], t_retain["float32"])]
            _row(f"{n:,}", k, f"{per_block:,.0f}", *_times(t_retain[k], t_floor[k]), *_ratios(ratios), f"{overlap:.4f}")
        del forms


def edges_section(n: int, in_degrees: list[float]) -> None:
    """``retain`` given a raw (E, 2) edge array: the same array again (the graph is reused)
    and a new array on every call (built each time), beside a prebuilt graph and both floors.

    The two raw-array cases run in separate interleaved groups (each with the floors and the
    prebuilt graph): a new array per call replaces the one the cache holds.
    """
    from dsgc_bench.floor import streaming_floor

    _header("N", "edges", "case", "E @ q", "row-sum floor", "prebuilt graph", "raw edge array", "raw / E@q",
            "raw / row sum", "raw / prebuilt", text=(2,))  # fmt: skip
    for degree in in_degrees:
        s = make_store(n, D, seed=1, in_degree=degree)
        graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
        flipped = np.ascontiguousarray(s.edges[::-1])  # the same graph in other bytes: never the cached array
        turn = [0]

        def alternate() -> object:
            turn[0] ^= 1
            return dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=flipped if turn[0] else s.edges)

        def same() -> object:
            return dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)

        for case, raw in (("same array again", same), ("new array each call", alternate)):
            t_blas, t_sum, t_pre, t_raw = interleaved(
                [
                    lambda: s.embs @ s.query,
                    streaming_floor(s.embs),
                    lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=graph),
                    raw,
                ],
                rounds=ROUNDS,
            )
            ratios = [(t_raw, t_blas), (t_raw, t_sum), (t_raw, t_pre)]
            _row(f"{n:,}", f"{s.edges.shape[0]:,}", case, *_times(t_blas, t_sum, t_pre, t_raw), *_ratios(ratios))


def scaling_section(sizes: list[int]) -> None:
    print("| N | retain (exact) | ns per block | per block vs smallest N |")
    print("|---:|---:|---:|---:|")
    base = None
    for n in sizes:
        s = make_store(n, D, seed=2)
        graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
        (t,) = interleaved([lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=graph)], ROUNDS)
        per = t / n * 1e9
        base = base or per
        print(f"| {n:,} | {_fmt_time(t)} | {per:.1f} | {per / base:.2f} |", flush=True)


def _peak_extra(fn) -> int:
    fn()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def memory_section(n: int) -> None:
    s = make_store(n, D, seed=3)
    graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
    rows = [
        ("retain, prebuilt DependencyGraph", lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=graph)),
        ("retain, raw (E, 2) edge list", lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)),
        (
            "retain fast mode, prebuilt graph",
            lambda: dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=graph, mode="fast"),
        ),
    ]
    print(f"N = {n:,}, d = {D}, float32 embeddings ({s.embs.nbytes / n:.0f} bytes per block, not counted)\n")
    print("| call | peak extra memory | bytes per block |")
    print("|---|---:|---:|")
    for name, fn in rows:
        extra = _peak_extra(fn)
        print(f"| {name} | {extra / 2**20:.1f} MiB | {extra / n:.1f} |", flush=True)


_LATENCY_CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np
import dsgc_fast
rng = np.random.default_rng(0)
embs = rng.random((20, 384), dtype=np.float32)
t1 = time.perf_counter()
dsgc_fast.retain(embs[0], embs, np.arange(1, 21), 50, edges=[(1, 0), (2, 1)])
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _child(env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _LATENCY_CHILD], env=env, capture_output=True, text=True, check=True)
    imp, first = out.stdout.split()
    return float(imp), float(first)


def latency_section() -> None:
    print("| Numba cache | import dsgc_fast | first retain (N = 20) | total |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold (empty cache)", "warm"):
            imp, first = _child(env)
            print(f"| {label} | {_fmt_time(imp)} | {_fmt_time(first)} | {_fmt_time(imp + first)} |", flush=True)


def batch_section(n_stores: int, peer_stores: int) -> None:
    r = make_ragged(n_stores, 20, 256, seed=4)
    stores = [r.store(s) for s in range(peer_stores)]

    def batch() -> object:
        return dsgc_fast.retain_batch(
            r.queries, r.embs, r.offsets, r.costs, r.budgets, edges=r.edges, edge_offsets=r.edge_offsets
        )

    def batch_fast() -> object:
        return dsgc_fast.retain_batch(
            r.queries, r.embs, r.offsets, r.costs, r.budgets, edges=r.edges, edge_offsets=r.edge_offsets, mode="fast"
        )

    def peer_loop() -> None:
        for s in stores:
            peer_retain(s.query, s.embs, s.costs, s.budget, peer_graph(s.n, s.edges))

    def retain_loop() -> None:
        for s in stores:
            dsgc_fast.retain(s.query, s.embs, s.costs, s.budget, edges=s.edges)

    t_batch, t_fast, t_peer, t_loop = interleaved(
        [batch, batch_fast, peer_loop, retain_loop], rounds=3, min_seconds=0.01
    )
    rate = {
        "retain_batch (exact)": n_stores / t_batch,
        "retain_batch (fast)": n_stores / t_fast,
        "peer in a loop": peer_stores / t_peer,
        "retain in a loop": peer_stores / t_loop,
    }
    print(f"{n_stores:,} stores x 20 blocks, d = 256 (loops timed on {peer_stores:,} stores)\n")
    print("| contender | stores per second | vs peer loop |")
    print("|---|---:|---:|")
    for name, value in rate.items():
        print(f"| {name} | {value:,.0f} | {value / rate['peer in a loop']:.1f}x |", flush=True)


def pins_section(n: int) -> None:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    from dsgc_fast.pins import closure

    r = make_referents(n, 4.0, seed=5)
    index = dsgc_fast.ReferentIndex.from_arrays(n, r.use_indptr, r.use_ids, r.bind_blocks, r.bind_ids)
    indptr, needs = index.needs()
    # the needs graph plus a virtual source n linked to every live root
    graph = sp.csr_matrix(
        (
            np.ones(needs.shape[0] + r.roots.shape[0]),
            np.concatenate([needs, r.roots]),
            np.r_[indptr, needs.shape[0] + r.roots.shape[0]],
        ),
        shape=(n + 1, n + 1),
    )
    mine = np.flatnonzero(closure(index, r.roots))
    theirs = np.sort(breadth_first_order(graph, n, directed=True, return_predecessors=False)[1:])
    assert np.array_equal(mine, theirs), "closure and breadth_first_order disagree"
    t_mine, t_scipy = interleaved(
        [
            lambda: closure(index, r.roots),
            lambda: breadth_first_order(graph, n, directed=True, return_predecessors=False),
        ],
        rounds=5,
    )
    print(
        f"{n:,} blocks, {needs.shape[0]:,} use links, {r.roots.shape[0]} live roots, closure of {mine.shape[0]:,} blocks\n"
    )
    print("| contender | time | vs breadth_first_order |")
    print("|---|---:|---:|")
    print(f"| dsgc_fast pin closure | {_fmt_time(t_mine)} | {t_mine / t_scipy:.2f}x |")
    print(f"| scipy breadth_first_order | {_fmt_time(t_scipy)} | 1.00x |", flush=True)


SECTIONS = ("peer", "floor", "precision", "edges", "scaling", "memory", "latency", "batch", "pins")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", choices=[*SECTIONS, []], help="sections to run (default: all)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 1_000, 100_000, 1_000_000])
    parser.add_argument("--scaling-sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--memory-n", type=int, default=1_000_000)
    parser.add_argument("--batch-stores", type=int, default=100_000)
    parser.add_argument("--batch-peer-stores", type=int, default=5_000)
    parser.add_argument("--pins-n", type=int, default=1_000_000)
    parser.add_argument("--precision-sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--edges-n", type=int, default=1_000_000)
    parser.add_argument("--edges-degrees", type=float, nargs="+", default=[1.0, 2.0])
    args = parser.parse_args(argv)
    sections = args.sections or SECTIONS
    print(environment() + "\n")
    for name in sections:
        print(f"### {name}\n", flush=True)
        {
            "peer": lambda: peer_section(args.sizes),
            "floor": lambda: floor_section(args.precision_sizes),
            "precision": lambda: precision_section(args.precision_sizes),
            "edges": lambda: edges_section(args.edges_n, args.edges_degrees),
            "scaling": lambda: scaling_section(args.scaling_sizes),
            "memory": lambda: memory_section(args.memory_n),
            "latency": latency_section,
            "batch": lambda: batch_section(args.batch_stores, args.batch_peer_stores),
            "pins": lambda: pins_section(args.pins_n),
        }[name]()
        print()


if __name__ == "__main__":
    main()
