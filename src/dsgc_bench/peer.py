"""The NumPy/SciPy peer: the retention contract (policy dsgc, one hop, first_fit) written
the way a careful NumPy user would, to measure ``dsgc_fast.retain`` against.

BLAS scores in the embeddings' own dtype (``E @ q``), a max-shifted softmax, one-hop
propagation as a SciPy CSR mat-vec, a stable argsort of the negated scores (ties keep input
order), and first_fit as a cumulative-sum prefix followed by a greedy loop over the tail.
It is not bit-identical to the exact engine (float32 BLAS dot products, another summation
order), so it is a speed reference only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class PeerRetention:
    """``retained`` sorted kept indices, ``rank`` all indices best first, ``scores``, ``used``."""

    retained: np.ndarray
    rank: np.ndarray
    scores: np.ndarray
    used: int


def peer_graph(n: int, edges: np.ndarray) -> sp.csr_matrix:
    """A[i, j] = 1 when block j depends on block i; duplicates count once, self-loops dropped."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    e = e[e[:, 0] != e[:, 1]]
    a = sp.csr_matrix((np.ones(e.shape[0]), (e[:, 1], e[:, 0])), shape=(n, n))
    a.sum_duplicates()
    a.data[:] = 1.0
    return a


def first_fit(rank: np.ndarray, costs: np.ndarray, budget: int) -> np.ndarray:
    """Keep mask of first_fit over ``rank``: the longest fitting prefix, then the greedy tail.

    After the prefix the remaining budget only shrinks, so a tail block costing more than
    what is left can never be kept: each step keeps the first tail block that fits and
    filters the rest against the new remainder.  Zero-cost blocks always fit.
    """
    n = rank.shape[0]
    c = costs[rank]
    cum = np.cumsum(c)
    p = int(np.searchsorted(cum, budget, side="right"))
    mask = np.zeros(n, dtype=np.bool_)
    mask[rank[:p]] = True
    rem = budget - (int(cum[p - 1]) if p else 0)
    tail = np.arange(p, n)
    mask[rank[tail[c[tail] == 0]]] = True
    tail = tail[(c[tail] > 0) & (c[tail] <= rem)]
    while tail.size:
        k = tail[0]
        mask[rank[k]] = True
        rem -= int(c[k])
        tail = tail[1:]
        tail = tail[c[tail] <= rem]
    return mask


def peer_retain(
    query: np.ndarray,
    embs: np.ndarray,
    costs: np.ndarray,
    budget: int,
    graph: sp.csr_matrix,
    *,
    tau: float = 0.25,
    lambda_pi: float = 1.0,
) -> PeerRetention:
    """DSGC retention: r = softmax(E q / tau), pi = A r, I = r + lambda_pi * pi, first_fit."""
    a = (embs @ query.astype(embs.dtype, copy=False)).astype(np.float64)
    r = np.exp((a - a.max()) / tau)
    r /= r.sum()
    scores = r + lambda_pi * (graph @ r)
    rank = np.argsort(-scores, kind="stable")
    mask = first_fit(rank, costs, budget)
    return PeerRetention(np.flatnonzero(mask), rank, scores, int(costs[mask].sum()))
