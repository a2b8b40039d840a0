"""Per-point scores of a selection, and their aggregation.

For a selection (kept blocks, plus any binding-table text the store added):

- ``kept``: needed values of the point that occur in the view of a kept history block (or
  of the added table); ``needed``: all needed values.  Recall pools values over points
  (``sum kept / sum needed``, a micro average); ``all_kept`` is the share of points with
  at least one needed value that keep every one.
- ``broken``: tool calls whose assistant message and result are not both kept or both
  evicted, counted over the history.
- ``used`` / ``budget``: token cost kept (the query included) and the budget;
  ``over_budget``: the engine refused (the query alone was kept).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .points import Point
from .policies import Selection


@dataclass(frozen=True)
class Score:
    session: str
    split: str
    turn: int
    needed: int
    kept: int
    broken: int
    used: int
    budget: int
    over_budget: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kept_values(point: Point, selection: Selection) -> list[bool]:
    """Per needed value: does a kept block (or added text) hold it?"""
    kept = set(selection.retained.tolist()) - {point.query}
    out = []
    for value in point.needed:
        held = any(i in kept for i in point.holders[value]) or any(v.holds(value) for v in selection.extra)
        out.append(held)
    return out


def broken_pairs(point: Point, retained: Iterable[int]) -> int:
    """Calls whose call message and result message are split by the selection."""
    kept = set(retained)
    call_at: dict[str, int] = {}
    broken = 0
    for i, message in enumerate(point.messages):
        for call in message.get("tool_calls") or ():
            call_at[call["id"]] = i
        if message.get("role") == "tool":
            caller = call_at.get(message.get("tool_call_id"))
            if caller is not None and ((caller in kept) != (i in kept)):
                broken += 1
    return broken


def score(point: Point, selection: Selection, budget: int) -> Score:
    retained = selection.retained
    used = int(point.costs[retained].sum()) + selection.extra_cost
    return Score(
        session=point.session,
        split=point.split,
        turn=point.turn,
        needed=len(point.needed),
        kept=sum(kept_values(point, selection)),
        broken=broken_pairs(point, retained.tolist()),
        used=used,
        budget=budget,
        over_budget=selection.over_budget,
    )


def summarize(scores: Iterable[Score]) -> dict[str, Any]:
    """Pooled figures of a list of point scores (module docstring)."""
    rows = list(scores)
    needed = sum(s.needed for s in rows)
    scored = [s for s in rows if s.needed]
    return {
        "points": len(rows),
        "points_with_needed": len(scored),
        "needed": needed,
        "kept": sum(s.kept for s in rows),
        "recall": (sum(s.kept for s in rows) / needed) if needed else float("nan"),
        "all_kept": (sum(s.kept == s.needed for s in scored) / len(scored)) if scored else float("nan"),
        "broken": sum(s.broken for s in rows),
        "used": int(sum(s.used for s in rows)),
        "budget": int(sum(s.budget for s in rows)),
        "used_share": (sum(s.used for s in rows) / sum(s.budget for s in rows)) if rows else float("nan"),
        "over_budget": sum(s.over_budget for s in rows),
    }


def gap_closed(value: float, low: float, high: float) -> float:
    """Share of the gap from ``low`` (recency) to ``high`` (oracle) that ``value`` closes."""
    return (value - low) / (high - low) if high != low else float("nan")


def by_split(
    scores: Iterable[Score], summary: Callable[[list[Any]], dict[str, Any]] = summarize
) -> Mapping[str, dict[str, Any]]:
    """``summary`` (default ``summarize``) per split and pooled (``"pooled"``)."""
    rows = list(scores)
    out = {split: summary([s for s in rows if s.split == split]) for split in sorted({s.split for s in rows})}
    out["pooled"] = summary(rows)
    return out
