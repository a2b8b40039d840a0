"""Synthetic memory stores for benchmarks: unit-norm float32 embeddings, token costs, a DAG.

Shared by ``tools/peer_table.py`` and the asv benchmarks so that both measure the same data.
Every store is a pure function of its arguments (explicit seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np


@dataclass(frozen=True)
class Store:
    """One memory store: a query, N block embeddings, costs, prerequisite edges and a budget.

    ``edges`` are (dependent, prerequisite) pairs with the prerequisite older than the
    dependent (``prerequisite < dependent``), ``in_degree`` of them per block on average.
    ``budget`` is ``budget_fraction`` of the total cost, rounded down.
    """

    query: np.ndarray
    embs: np.ndarray
    costs: np.ndarray
    edges: np.ndarray
    budget: int

    @property
    def n(self) -> int:
        return int(self.embs.shape[0])


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """(n, d) float32 rows uniform on [-0.5, 0.5) scaled to unit L2 norm, in place."""
    x = rng.random((n, d), dtype=np.float32)
    x -= np.float32(0.5)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


class Draws(TypedDict, total=False):
    """The draws ``make_store`` passes on to ``make_ragged`` (whose defaults they take)."""

    seed: int
    in_degree: float
    cost_range: tuple[int, int]


def make_store(n: int, d: int = 384, *, budget_fraction: float = 0.05, **draws: Unpack[Draws]) -> Store:
    """A store of ``n`` blocks in ``d`` dimensions (see ``Store``); costs uniform in ``cost_range``.

    The one store of ``make_ragged(1, n, d, budget_fraction=budget_fraction, **draws)``: the
    same draws from the same seed, with ``make_ragged``'s ``seed``, ``in_degree`` and
    ``cost_range`` unless ``draws`` names them.
    """
    return make_ragged(1, n, d, budget_fraction=budget_fraction, **draws).store(0)


@dataclass(frozen=True)
class RaggedStores:
    """Many independent stores laid end to end (the input layout of ``retain_batch``).

    Store s owns rows ``offsets[s]:offsets[s+1]`` of ``embs``/``costs`` and edges
    ``edge_offsets[s]:edge_offsets[s+1]`` (indices local to the store); ``queries[s]`` is
    its query and ``budgets[s]`` its budget.
    """

    queries: np.ndarray
    embs: np.ndarray
    offsets: np.ndarray
    costs: np.ndarray
    budgets: np.ndarray
    edges: np.ndarray
    edge_offsets: np.ndarray

    def store(self, s: int) -> Store:
        lo, hi = self.offsets[s], self.offsets[s + 1]
        e = self.edges[self.edge_offsets[s] : self.edge_offsets[s + 1]]
        return Store(self.queries[s], self.embs[lo:hi], self.costs[lo:hi], e, int(self.budgets[s]))


def make_ragged(
    n_stores: int,
    blocks: int = 20,
    d: int = 256,
    *,
    seed: int = 0,
    in_degree: float = 2.0,
    budget_fraction: float = 0.25,
    cost_range: tuple[int, int] = (8, 256),
) -> RaggedStores:
    """``n_stores`` stores of exactly ``blocks`` blocks each (local DAG edges per store)."""
    rng = np.random.default_rng(seed)
    queries = unit_rows(rng, n_stores, d)
    embs = unit_rows(rng, n_stores * blocks, d)
    offsets = np.arange(n_stores + 1, dtype=np.int64) * blocks
    costs = rng.integers(cost_range[0], cost_range[1] + 1, size=n_stores * blocks, dtype=np.int64)
    budgets = (costs.reshape(n_stores, blocks).sum(axis=1) * budget_fraction).astype(np.int64)
    per_store = int(round(in_degree * blocks)) if blocks >= 2 else 0
    dependent = rng.integers(1, max(blocks, 2), size=(n_stores, per_store), dtype=np.int64)
    prerequisite = (rng.random((n_stores, per_store)) * dependent).astype(np.int64)
    edges = np.stack([dependent.ravel(), prerequisite.ravel()], axis=1)
    edge_offsets = np.arange(n_stores + 1, dtype=np.int64) * per_store
    return RaggedStores(queries, embs, offsets, costs, budgets, edges, edge_offsets)


@dataclass(frozen=True)
class Referents:
    """Referent links in array form (the input of ``dsgc_fast.ReferentIndex.from_arrays``).

    Block b binds referent b; block u uses ``uses_per_block`` referents on average, each
    bound by an older block (so the needs graph is a DAG), listed in ``use_ids`` (CSR by
    ``use_indptr``).  ``roots`` are the newest ``n_roots`` blocks (the live ones).
    """

    n: int
    use_indptr: np.ndarray
    use_ids: np.ndarray
    bind_blocks: np.ndarray
    bind_ids: np.ndarray
    roots: np.ndarray


def make_referents(n: int, uses_per_block: float = 4.0, *, n_roots: int = 8, seed: int = 0) -> Referents:
    """Random referent links over n blocks: about ``uses_per_block * n`` use links."""
    rng = np.random.default_rng(seed)
    m = int(round(uses_per_block * n)) if n > 1 else 0
    user = np.sort(rng.integers(1, max(n, 2), size=m, dtype=np.int64))
    used = (rng.random(m) * user).astype(np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(user, minlength=n)[:n], out=indptr[1:])
    blocks = np.arange(n, dtype=np.int64)
    roots = np.arange(max(n - n_roots, 0), n, dtype=np.int64)
    return Referents(n, indptr, used, blocks, blocks.copy(), roots)
