"""Padded points: each BFCL scoring point behind the histories of earlier sessions.

A robustness probe for agent policies whose ranking depends on the number of blocks (a
z-score of the best match, for one, cannot exceed sqrt(N - 1), so on BFCL's short
histories of 5-25 blocks a z >= 3 gate rarely fires).  ``padded(points, back)`` puts before
every point the history (every block but the query) of the last scoring point of each of
the ``back`` sessions before its own in its split, oldest first, with their call ids made
unique; the point's own blocks follow unchanged.  The needed values and their holders are
the point's own (a value that a padding block also holds does not count there), and the
budget stays the original point's (``Point.budget_history``), so the padding only adds
blocks to rank, never room.  The padding is taken from the same development splits, so its
texts are those the suite encodes anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .points import Point, make_point


def _renamed(messages: Sequence[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """The messages with every tool call id prefixed by ``tag`` (copies; the input is kept)."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [dict(c, id=tag + c["id"]) for c in m["tool_calls"]]
        if m.get("role") == "tool":
            m["tool_call_id"] = tag + m["tool_call_id"]
        out.append(m)
    return out


def padded(points: Sequence[Point], back: int = 2) -> list[Point]:
    """Every point behind the histories of the ``back`` sessions before its own (module docstring)."""
    last: dict[str, Point] = {}
    sessions: dict[str, list[str]] = {}
    for p in points:
        if p.session not in last:
            sessions.setdefault(p.split, []).append(p.session)
        last[p.session] = p
    out = []
    for p in points:
        order = sessions[p.split]
        k = order.index(p.session)
        messages: list[dict[str, Any]] = []
        turns: list[int] = []
        kinds: list[str] = []
        for tag, earlier in enumerate(order[max(0, k - back) : k]):
            q = last[earlier]
            messages += _renamed(q.messages[: q.query], f"pad{tag}_")
            kinds += q.kinds[: q.query]
            turns += q.turns[: q.query]
        shift = len(messages)
        oldest = max(turns, default=-1) + 1  # padding turns come before the point's turn 0
        made = make_point(
            p.session,
            p.split,
            p.turn,
            messages + list(p.messages),
            [t - oldest for t in turns] + list(p.turns),
            kinds + list(p.kinds),
            list(p.needed),
        )
        out.append(
            dataclasses.replace(
                made,
                needed=p.needed,
                holders={v: tuple(h + shift for h in p.holders[v]) for v in p.needed},
                budget_history=int(p.costs[: p.query].sum()),
            )
        )
    return out
