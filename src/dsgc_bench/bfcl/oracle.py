"""The unit oracle: the best choice of whole tool units for needed-value recall.

Given the point's units (a tool call with its result, or a single block), the query's
unit kept first, and the remaining budget ``B - cost(query)``, the oracle keeps the set of
other units that covers the most needed values (a value is covered when a kept block
holds it), and among those the cheapest; ties go to the set found first in unit order.
Only units holding at least one needed value can matter.  This is a budgeted maximum
coverage problem, solved exactly by dynamic programming over coverage bitmasks:
``best[mask]`` = least cost of a set of units covering exactly ``mask`` (a value a unit
holds is always covered), updated unit by unit; the answer is the mask with the most
values among those whose cost fits.  The state space has ``2^V`` masks for V needed
values; above ``EXACT_LIMIT`` values the oracle falls back to greedy (most new values per
token first) and says so (``exact=False``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .points import Point

#: the most needed values solved exactly (2^V coverage states)
EXACT_LIMIT = 16


@dataclass(frozen=True)
class OracleChoice:
    """Kept blocks (sorted, the query included) and whether the optimum is exact."""

    retained: np.ndarray
    exact: bool


def _unit_masks(point: Point) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(mask, cost, members)`` of every non-query unit that holds a needed value."""
    bit = {v: 1 << k for k, v in enumerate(point.needed)}
    holder_mask = np.zeros(point.n, dtype=np.int64)
    for v, blocks in point.holders.items():
        holder_mask[list(blocks)] |= bit[v]
    out = []
    for members in point.units:
        if point.query in members:
            continue
        mask = int(np.bitwise_or.reduce(holder_mask[list(members)])) if members else 0
        if mask:
            out.append((mask, int(point.costs[list(members)].sum()), members))
    return out


def _exact(units: list[tuple[int, int, tuple[int, ...]]], room: int) -> list[int]:
    best: dict[int, tuple[int, tuple[int, ...]]] = {0: (0, ())}
    for u, (mask, cost, _) in enumerate(units):
        if cost > room:
            continue
        for have, (spent, chosen) in list(best.items()):
            new, total = have | mask, spent + cost
            if total <= room and (new not in best or total < best[new][0]):
                best[new] = (total, chosen + (u,))
    top = max(best, key=lambda m: (bin(m).count("1"), -best[m][0]))
    return list(best[top][1])


def _greedy(units: list[tuple[int, int, tuple[int, ...]]], room: int) -> list[int]:
    chosen, covered, left = [], 0, room
    while True:
        options = [
            (bin(mask & ~covered).count("1") / max(cost, 1), -u, u)
            for u, (mask, cost, _) in enumerate(units)
            if u not in chosen and cost <= left and mask & ~covered
        ]
        if not options:
            return chosen
        _, _, u = max(options)
        chosen.append(u)
        covered |= units[u][0]
        left -= units[u][1]


def unit_oracle(point: Point, budget: int) -> OracleChoice:
    """The oracle's choice at ``budget`` (module docstring)."""
    units = _unit_masks(point)
    room = budget - int(point.costs[point.query])
    exact = len(point.needed) <= EXACT_LIMIT
    picked = [] if room < 0 else (_exact if exact else _greedy)(units, room)
    kept = sorted({point.query, *(i for u in picked for i in units[u][2])})
    return OracleChoice(np.array(kept, dtype=np.int64), exact)
