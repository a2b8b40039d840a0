"""Wall-clock cost of edge and referent induction on synthetic stores (default 100,000 blocks).

    .venv/bin/python tools/induction_speed.py [--blocks 100000] [--rounds 3] [--seed 0]

Each synthetic block is ~25 words of prose with 0-3 identifiers (tickets, accounts, file
paths, snake-case settings, named customers) drawn with Zipf-skewed reuse, so some keys are
hubs and most are rare, plus the odd definite description ("that account").  The texts are
a pure function of the seed.  Reported: best-of-``rounds`` wall-clock and CPU seconds for
``induce_edges`` (the sparse batch path), ``induce_referents`` and a full
``IncrementalInducer`` replay (CPU time is the steadier figure on a shared machine).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dsgc_fast.induction import IncrementalInducer, induce_edges, induce_referents

_WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "for",
    "on",
    "with",
    "team",
    "service",
    "request",
    "update",
    "check",
    "review",
    "queue",
    "deploy",
    "note",
    "customer",
    "billing",
    "charge",
    "report",
    "weekly",
    "status",
    "owner",
    "backlog",
    "release",
    "window",
    "migration",
    "alert",
    "latency",
    "storage",
    "budget",
    "approval",
    "policy",
    "audit",
    "rollout",
    "config",
    "backup",
    "restore",
    "follow",
    "review",
]
_NAMES = [
    f"{a}{b}" for a in ("Mor", "Lind", "Kov", "Oda", "Vance", "Pell", "Tar", "Quin") for b in ("en", "ax", "ia", "ot")
]


def _identifier(rng: np.random.Generator) -> str:
    kind = int(rng.integers(5))
    k = int(rng.zipf(1.3)) % 50_000
    if kind == 0:
        return f"ticket TKT-{k}"
    if kind == 1:
        return f"account {1000 + k}-{'ABCDEFGH'[k % 8]}"
    if kind == 2:
        return f"/srv/app{k % 900}/config.yaml"
    if kind == 3:
        return f"retry_limit_{k}"
    return f"customer {_NAMES[k % len(_NAMES)]}{k // len(_NAMES)}"


def synthetic_texts(n: int, seed: int) -> list[str]:
    """``n`` block texts (module docstring), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        words = list(rng.choice(_WORDS, size=int(rng.integers(15, 30))))
        for _ in range(int(rng.integers(0, 4))):
            words.insert(int(rng.integers(len(words) + 1)), _identifier(rng))
        if rng.random() < 0.05:
            words.append("about that account")
        texts.append(" ".join(words) + ".")
    return texts


def best_of(fn, rounds: int) -> tuple[float, float, object]:
    """Best wall-clock and best CPU seconds of ``rounds`` calls, and the last result."""
    wall = cpu = float("inf")
    out = None
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def replay(texts: list[str]) -> IncrementalInducer:
    inducer = IncrementalInducer()
    for text in texts:
        inducer.add(text)
    return inducer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    texts = synthetic_texts(args.blocks, args.seed)
    words = sum(len(t.split()) for t in texts)
    print(f"{args.blocks} blocks, {words} words, best of {args.rounds}")
    t_edges, c_edges, edges = best_of(lambda: induce_edges(texts), args.rounds)
    t_refs, c_refs, (binds, uses) = best_of(lambda: induce_referents(texts), args.rounds)
    t_inc, c_inc, inducer = best_of(lambda: replay(texts), args.rounds)
    assert np.array_equal(inducer.edges, edges), "incremental replay differs from batch"
    n_binds = sum(len(b) for b in binds if b)
    n_uses = sum(len(u) for u in uses)
    print("                        wall s   cpu s")
    print(f"induce_edges            {t_edges:6.2f}  {c_edges:6.2f}   {len(edges)} edges")
    print(f"induce_referents        {t_refs:6.2f}  {c_refs:6.2f}   {n_binds} bindings, {n_uses} uses")
    print(
        f"IncrementalInducer.add  {t_inc:6.2f}  {c_inc:6.2f}   {1e6 * t_inc / args.blocks:.1f} us per block (edges + referents)"
    )


if __name__ == "__main__":
    main()
