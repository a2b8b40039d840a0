"""Trace diagnostics for failing runs (the paper's Table 3) and failure classification.

For a run that lost at least one chain block this records the 1-based rank of every chain
block, the top-ranked non-chain block, and for each displaced (evicted) chain block ``b``
the *displacing competitor*: the lowest-ranked retained non-chain block ranked above ``b``
(the last block admitted ahead of ``b`` that ``b`` had to beat), with the score margin
``score(competitor) - score(b)`` in the policy's own score (``<q, e>`` for similarity-only,
``I = r + lambda_pi * pi`` otherwise).  When no non-chain block ranks above ``b``, the budget
went to the chain alone and the competitor is None.  ``ahead`` lists every retained
non-chain block ranked above ``b`` (all the blocks that took budget ``b`` needed).

Each displaced block is classified by the paper's definitions, with ``sim = <q, e>`` and the
scenario's *true* prerequisite edges (also under graph-noise runs):

- ``def2`` (Definition 2, retention-stage failure): ``b`` is structurally indirect under
  Definition 1 (a chain block ``j`` with ``(j, b)`` in E has ``sim(b) < sim(j)``) and such a
  witness ``j`` was retained;
- ``beyond_one_hop``: not Definition 2, but a retained chain block that depends on ``b``
  through a longer path of chain edges is more query-similar than ``b`` (the two-hop
  residual the paper attributes to the one-hop radius);
- ``surface`` (surface forgetting): neither; ``b`` was dropped without a more query-similar
  retained dependent (e.g. the query-facing block itself, or its dependents were lost too).

A run's class is its most structural displaced block's class (def2, then beyond_one_hop).

``by_size`` lists, for any run, the chain blocks kept *by size*: retained although a block
ranked above them was skipped for lack of room, so first-fit selection (skip and continue)
kept them where prefix selection (stop at the first block that does not fit) would not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

CLASSES: tuple[str, ...] = ("def2", "beyond_one_hop", "surface")
CLASS_LABELS = {
    "def2": "retention-stage failure (Def. 2)",
    "beyond_one_hop": "indirect beyond one hop",
    "surface": "surface forgetting",
}


def _dependents(chain: Sequence[int], edges: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    members = set(chain)
    deps: dict[int, list[int]] = {i: [] for i in chain}
    for j, i in edges:
        if i in members and j in members:
            deps[i].append(j)
    return deps


def _transitive(start: int, deps: dict[int, list[int]]) -> set[int]:
    seen: set[int] = set()
    stack = list(deps[start])
    while stack:
        j = stack.pop()
        if j not in seen:
            seen.add(j)
            stack.extend(deps[j])
    return seen


def structurally_indirect(
    block: int, chain: Sequence[int], edges: Sequence[tuple[int, int]], sim: Sequence[float]
) -> bool:
    """Definition 1: some chain block j with (j, block) in E has sim[block] < sim[j]."""
    return any(sim[block] < sim[j] for j in _dependents(chain, edges)[block])


def classify(
    block: int, chain: Sequence[int], edges: Sequence[tuple[int, int]], sim: Sequence[float], mask: Sequence[bool]
) -> str:
    """``def2``, ``beyond_one_hop`` or ``surface`` for an evicted chain block (module docstring)."""
    deps = _dependents(chain, edges)
    if any(mask[j] and sim[block] < sim[j] for j in deps[block]):
        return "def2"
    if any(mask[j] and sim[block] < sim[j] for j in _transitive(block, deps) - set(deps[block])):
        return "beyond_one_hop"
    return "surface"


def by_size(ids: Sequence[str], chain: Sequence[int], rank: np.ndarray, mask: np.ndarray) -> list[str]:
    """The chain blocks retained after the first skipped block in rank order (module docstring)."""
    skipped = np.flatnonzero(~mask[rank])
    if not len(skipped):
        return []
    position = np.empty(len(rank), dtype=np.int64)
    position[rank] = np.arange(len(rank))
    return [ids[i] for i in chain if mask[i] and position[i] > skipped[0]]


def trace(
    ids: Sequence[str],
    chain: Sequence[int],
    edges: Sequence[tuple[int, int]],
    rank: np.ndarray,
    mask: np.ndarray,
    scores: np.ndarray,
    sim: np.ndarray,
) -> dict[str, Any] | None:
    """The diagnostic record of a run, or None when every chain block was retained."""
    displaced = [i for i in chain if not mask[i]]
    if not displaced:
        return None
    position = np.empty(len(rank), dtype=np.int64)
    position[rank] = np.arange(len(rank))
    members = set(chain)
    top = next((int(i) for i in rank if int(i) not in members), None)
    rows = []
    for b in sorted(displaced, key=lambda i: position[i]):
        above = [int(i) for i in rank[: position[b]] if mask[i] and int(i) not in members]
        competitor = above[-1] if above else None
        rows.append(
            {
                "block": ids[b],
                "rank": int(position[b]) + 1,
                "score": float(scores[b]),
                "ahead": [ids[i] for i in above],
                "competitor": ids[competitor] if competitor is not None else None,
                "competitor_rank": int(position[competitor]) + 1 if competitor is not None else None,
                "margin": float(scores[competitor] - scores[b]) if competitor is not None else None,
                "indirect": structurally_indirect(b, chain, edges, sim),
                "class": classify(b, chain, edges, sim, mask),
            }
        )
    run_class = next(c for c in CLASSES if c == "surface" or any(r["class"] == c for r in rows))
    return {
        "ranks": {ids[i]: int(position[i]) + 1 for i in chain},
        "top_non_chain": ids[top] if top is not None else None,
        "top_non_chain_score": float(scores[top]) if top is not None else None,
        "displaced": rows,
        "class": run_class,
    }
