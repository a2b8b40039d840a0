"""The oracles: the best choice of whole tool units, and the best choice that may digest.

**Unit oracle.**  Given the point's units (a tool call with its result, or a single block),
the live roots (``Point.roots``: system messages and the query) kept first, and the remaining
budget ``B - cost(roots)``, the oracle keeps the set of other units that covers the most needed values (a value is covered when a kept block
holds it), and among those the cheapest; ties go to the set found first in unit order.
Only units holding at least one needed value can matter.  This is a budgeted maximum
coverage problem, solved exactly by dynamic programming over coverage bitmasks:
``best[mask]`` = least cost of a set of units covering exactly ``mask`` (a value a unit
holds is always covered), updated unit by unit; the answer is the mask with the most
values among those whose cost fits.  The state space has ``2^V`` masks for V needed
values; above ``EXACT_LIMIT`` values the oracle falls back to greedy (most new values per
token first) and says so (``exact=False``).

**Digest oracle** (value level).  The same optimum with one more kind of item: a needed value
held by a tool result may be kept as just that value, one ``key: value`` line, charged the
line's own cost (``counter(line)``: its tokens, no message framing, no call kept with it).
The line is the holder's JSON leaf holding the value, verbatim, after its innermost key
(``"result"`` for a leaf outside any object; a result that is not JSON gives one leaf per
line of its text); among the tool results holding the value the cheapest line counts.  It is
an optimistic bound on what any policy that digests tool results could keep: a real digest
also pays its message's framing and its call.  Values held only outside tool results (a user
message, a call's arguments) are kept only by keeping their unit whole.

**In-place oracle** (``inplace_oracle``).  The unit oracle where a unit may also be kept as the
store's own digest: every tool result of the unit that has one (``digest_blocks.block_digest``,
block id ``m<k>`` as ``select`` names it) sent as that digest, in place, at its framed cost, the
rest of the unit (its call) whole; a needed value counts when the digest message's view holds
it.  Both forms of a unit are offered as items, so the optimum is over whole / digest / evict
per unit (taking both is never better than the whole when the digest's values are the whole's;
if it happens the unit is sent whole).  It bounds what any policy that sends the store's digests
in place can keep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgc_fast.memory.block import Block
from dsgc_fast.memory.digest_blocks import block_digest
from dsgc_fast.memory.messages import message_text
from dsgc_fast.memory.token_counts import TokenCounter

from .points import Point
from .values import Value, View, message_view, normal_view

#: the most needed values solved exactly (2^V coverage states)
EXACT_LIMIT = 16


@dataclass(frozen=True)
class OracleChoice:
    """Kept blocks (sorted, the roots included), whether the optimum is exact, and the digest
    lines kept (the digest oracle's; none for the unit oracle)."""

    retained: np.ndarray
    exact: bool
    lines: tuple[str, ...] = ()


#: one item of the choice: (mask of the needed values it keeps, cost, blocks kept whole)
Item = tuple[int, int, tuple[int, ...]]


def _unit_masks(point: Point) -> list[Item]:
    """``(mask, cost, members)`` of every unit without a live root that holds a needed value."""
    bit = {v: 1 << k for k, v in enumerate(point.needed)}
    holder_mask = np.zeros(point.n, dtype=np.int64)
    for v, blocks in point.holders.items():
        holder_mask[list(blocks)] |= bit[v]
    out = []
    roots = set(point.roots)
    for members in point.units:
        if roots.intersection(members):
            continue
        mask = int(np.bitwise_or.reduce(holder_mask[list(members)])) if members else 0
        if mask:
            out.append((mask, int(point.costs[list(members)].sum()), members))
    return out


def _exact(units: list[Item], room: int) -> list[int]:
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


def _greedy(units: list[Item], room: int) -> list[int]:
    chosen: list[int] = []
    covered, left = 0, room
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


def _choose(point: Point, budget: int, items: list[Item]) -> tuple[list[int], bool]:
    """The picked items within ``budget`` after the roots, and whether exactly."""
    room = budget - int(point.costs[list(point.roots)].sum())
    exact = len(point.needed) <= EXACT_LIMIT
    return ([] if room < 0 else (_exact if exact else _greedy)(items, room)), exact


def _kept(point: Point, items: list[Item], picked: list[int]) -> np.ndarray:
    return np.array(sorted({*point.roots, *(i for u in picked for i in items[u][2])}), dtype=np.int64)


def unit_oracle(point: Point, budget: int) -> OracleChoice:
    """The unit oracle's choice at ``budget`` (module docstring)."""
    units = _unit_masks(point)
    picked, exact = _choose(point, budget, units)
    return OracleChoice(_kept(point, units, picked), exact)


def keyed_leaves(value: Any, key: str = "result") -> Iterator[tuple[str, Any]]:
    """``(innermost key, leaf)`` of every leaf of a parsed JSON value (``key`` outside any object)."""
    if isinstance(value, dict):
        for k, item in value.items():
            yield from keyed_leaves(item, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from keyed_leaves(item, key)
    else:
        yield key, value


def _leaf_text(leaf: Any) -> str:
    return leaf if isinstance(leaf, str) else json.dumps(leaf)


def result_lines(content: str) -> list[tuple[str, str]]:
    """``(line, leaf text)`` of every leaf of a tool result's text (module docstring)."""
    try:
        leaves = list(keyed_leaves(json.loads(content)))
    except (ValueError, RecursionError):
        leaves = [("result", line) for line in content.splitlines()]
    return [(f"{key}: {_leaf_text(leaf)}", _leaf_text(leaf)) for key, leaf in leaves]


def digest_lines(point: Point, counter: Callable[[str], int]) -> dict[Value, tuple[str, int]]:
    """Per needed value held by a tool result: its cheapest ``key: value`` line and that line's cost."""
    out: dict[Value, tuple[str, int]] = {}
    for value in point.needed:
        for i in point.holders[value]:
            message = point.messages[i]
            if message.get("role") != "tool" or not isinstance(message.get("content"), str):
                continue
            for line, leaf in result_lines(message["content"]):
                if View(normal_view(leaf)).holds(value):
                    cost = int(counter(line))
                    if value not in out or cost < out[value][1]:
                        out[value] = (line, cost)
    return out


def digest_oracle(point: Point, budget: int, counter: Callable[[str], int]) -> OracleChoice:
    """The digest oracle's choice at ``budget``, lines charged by ``counter`` (module docstring)."""
    lines = digest_lines(point, counter)
    digests = [(k, lines[v]) for k, v in enumerate(point.needed) if v in lines]
    items = _unit_masks(point) + [(1 << k, cost, ()) for k, (_, cost) in digests]
    picked, exact = _choose(point, budget, items)
    first = len(items) - len(digests)
    kept_lines = tuple(digests[u - first][1][0] for u in sorted(picked) if u >= first)
    return OracleChoice(_kept(point, items, picked), exact, kept_lines)


def _needed_mask(point: Point, view: View) -> int:
    return sum(1 << k for k, value in enumerate(point.needed) if view.holds(value))


def inplace_oracle(point: Point, budget: int, counter: TokenCounter) -> tuple[OracleChoice, dict[int, dict[str, Any]]]:
    """The in-place oracle's choice at ``budget`` (module docstring) and the messages it sends as
    digests (position -> the digest message)."""
    items, digested = _unit_masks(point), []
    roots = set(point.roots)
    for members in point.units:
        if roots.intersection(members):
            continue
        mask, cost, sent = 0, 0, {}
        for i in members:
            message = point.messages[i]
            block = Block(
                id=f"m{i}", text=message_text(message), cost=int(point.costs[i]), seq=i,
                meta={"role": message.get("role"), "message": dict(message)},
            )  # fmt: skip
            digest = block_digest(block, counter)
            if digest is None:
                mask, cost = mask | _needed_mask(point, point.views[i]), cost + int(point.costs[i])
            else:
                sent[i] = digest.message
                mask, cost = mask | _needed_mask(point, View(message_view(digest.message))), cost + digest.cost
        if sent and mask:
            digested.append((mask, cost, tuple(members), sent))
    first = len(items)
    picked, exact = _choose(point, budget, [*items, *((m, c, u) for m, c, u, _ in digested)])
    whole = {i for u in picked if u < first for i in items[u][2]}
    replaced = {i: m for u in picked if u >= first for i, m in digested[u - first][3].items() if i not in whole}
    kept = {*point.roots, *whole, *(i for u in picked if u >= first for i in digested[u - first][2])}
    return OracleChoice(np.array(sorted(kept), dtype=np.int64), exact), replaced
