"""Shared data and size handling for the asv benchmarks.

Stores come from ``dsgc_bench.synthetic`` (the same generator as the peer table), cached per
process.  ``DSGC_ASV_MAX_N`` skips every size above it (the smoke run uses a small value):
``setup`` raises ``NotImplementedError``, which asv records as skipped.
"""

from __future__ import annotations

import functools
import os

from dsgc_bench.synthetic import RaggedStores, Store, make_ragged, make_store

#: block counts of every size-parametrized benchmark (the issue's list)
SIZES = [20, 50, 1_000, 100_000, 1_000_000]
#: embedding dimension (all-MiniLM-L6-v2's)
D = 384


def max_n() -> int:
    return int(os.environ.get("DSGC_ASV_MAX_N", str(10**12)))


def skip_above(n: int) -> None:
    """Skip this parameter combination when n exceeds DSGC_ASV_MAX_N."""
    if n > max_n():
        raise NotImplementedError(f"N = {n} is above DSGC_ASV_MAX_N = {max_n()}")


@functools.lru_cache(maxsize=2)
def store(n: int, d: int = D) -> Store:
    """The benchmark store of n blocks (seed 0, average in-degree 2, budget 5%)."""
    skip_above(n)
    return make_store(n, d, seed=0)


@functools.lru_cache(maxsize=1)
def ragged(n_stores: int, blocks: int = 20, d: int = 256) -> RaggedStores:
    """n_stores independent stores of ``blocks`` blocks each, laid end to end."""
    skip_above(n_stores * blocks)
    return make_ragged(n_stores, blocks, d, seed=0)
