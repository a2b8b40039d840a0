"""Budgeted greedy selection over a ranking (pure Python)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .contract import Reason


def select(
    ranking: Sequence[int],
    costs: Sequence[int],
    budget: int,
    selection: str,
    kept_reason: Sequence[Reason],
    *,
    preset: Sequence[int] = (),
    excluded: Sequence[bool] | None = None,
    reserved: int = 0,
    unit_of: Callable[[int, Sequence[bool]], Sequence[int]] | None = None,
) -> tuple[list[bool], list[Reason | None], int]:
    """Walk ``ranking`` and keep blocks while the budget allows.

    ``preset`` blocks (pinned) are kept and charged first, together with ``reserved``
    tokens (a binding table); ``excluded`` blocks are not candidates.  For every other block
    ``i`` in ranking order the candidate unit is ``[i] + unit_of(i, mask)``: ``unit_of``
    gives the not-yet-kept part of the referent closure of ``i``; without it the unit is
    ``[i]``.
    ``first_fit``: a unit that fits (used + cost <= budget) is kept whole, one that does
    not is skipped and the walk continues.  ``prefix``: the walk stops at the first unit
    that does not fit; every block after it is evicted by the cutoff.

    Returns ``(mask, reasons, used)``; ``reasons[i]`` is None for blocks not yet decided
    (only preset blocks, which the caller labels).
    """
    n = len(costs)
    mask = [False] * n
    reasons: list[Reason | None] = [None] * n
    used = reserved
    for i in preset:
        mask[i] = True
        used += costs[i]
    stopped = False
    for i in ranking:
        if mask[i] or (excluded is not None and excluded[i]):
            continue
        if stopped:
            reasons[i] = Reason.EVICTED_CUTOFF
            continue
        unit = [i] if unit_of is None else [i, *unit_of(i, mask)]
        cost = 0
        for k in unit:
            cost += costs[k]
        if used + cost <= budget:
            used += cost
            for k in unit:
                mask[k] = True
            reasons[i] = kept_reason[i]
            for k in unit[1:]:
                reasons[k] = Reason.KEPT_CLOSURE
        else:
            reasons[i] = Reason.SKIPPED_NO_FIT
            if selection == "prefix":
                stopped = True
    return mask, reasons, used
