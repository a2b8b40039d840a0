"""Referent pinning in plain Python: live binders, pin closure, closure units, binding table.

Model.  Block i *uses* referents ``uses[i]`` and *binds* referents ``binds[i]`` (referent ->
value).  When several blocks bind one referent, the live binder is the newest of them: the
one latest in ``order`` (default: the highest index).  ``binders`` overrides the rule per
referent.  A referent nobody binds is unresolvable and pins nothing.

Closure.  closure(S) is the smallest set containing S such that for every block u in it and
every referent x in uses[u], the live binder of x (if any) is in it: the binders' own uses
are followed too (transitive pinning), and cycles terminate because each block enters once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from .contract import (
    BindingTable,
    ReferentEvictionError,
    check_binders,
    check_indices,
    check_referent_lists,
    referent_block_count,
    render_table,
)


def live_binders(
    binds: Sequence[Mapping[Hashable, Any]], order: Sequence[int], binders: Mapping[Hashable, int] | None = None
) -> dict[Hashable, int]:
    """referent -> its live binder: the binder latest in ``order``, unless ``binders`` says otherwise."""
    pos = [0] * len(order)
    for p, i in enumerate(order):
        pos[i] = p
    live: dict[Hashable, int] = {}
    for i, b in enumerate(binds):
        for x in b:
            if x not in live or pos[i] > pos[live[x]]:
                live[x] = i
    live.update(check_binders(binders, binds))
    return live


def closure_from(
    start: Iterable[int],
    uses: Sequence[Sequence[Hashable]],
    live: Mapping[Hashable, int],
    stop: Callable[[int], bool] = lambda b: False,
) -> list[int]:
    """Blocks reachable from ``start`` through use -> live binder links, in discovery order.

    Blocks with ``stop(b)`` True (already kept, or covered by the binding table) are not
    entered; ``start`` blocks are included unless stopped.
    """
    seen: set[int] = set()
    out: list[int] = []
    frontier: list[int] = []
    for s in start:
        if not stop(s) and s not in seen:
            seen.add(s)
            out.append(s)
            frontier.append(s)
    while frontier:
        u = frontier.pop()
        for x in uses[u]:
            b = live.get(x)
            if b is None or stop(b) or b in seen:
                continue
            seen.add(b)
            out.append(b)
            frontier.append(b)
    return out


def resolve(
    uses: Any, binds: Any, order: Sequence[int] | None, binders: Mapping[Hashable, int] | None
) -> tuple[list[list[Hashable]], dict[Hashable, int]]:
    """The checked use lists and the live binders (``live_binders``) of the list form."""
    use_lists, bind_maps = check_referent_lists(uses, binds, referent_block_count(uses, binds))
    return use_lists, live_binders(bind_maps, list(range(len(use_lists))) if order is None else order, binders)


def pin_closure(
    roots: Iterable[int],
    uses: Any,
    binds: Any,
    *,
    order: Sequence[int] | None = None,
    binders: Mapping[Hashable, int] | None = None,
) -> list[int]:
    """Sorted indices that must stay while ``roots`` stay: the roots and their closure."""
    use_lists, live = resolve(uses, binds, order, binders)
    return sorted(closure_from(check_indices("roots", roots, len(use_lists)), use_lists, live))


def binding_table(
    pinned: Sequence[int],
    roots: Sequence[int],
    binds: Sequence[Mapping[Hashable, Any]],
    live: Mapping[Hashable, int],
    cost_fn: Callable[[str], int],
) -> BindingTable:
    """One entry per referent whose live binder is a pinned non-root (the blocks it replaces).

    Every live binding those blocks held survives, so a block that uses any of them, pinned or
    admitted later, still resolves it.
    """
    replaced = set(pinned) - set(roots)
    return render_table(((x, binds[b][x], b) for x, b in live.items() if b in replaced), cost_fn)


def escalate(
    pinned: Sequence[int],
    roots: Sequence[int],
    cost: Sequence[int],
    budget: int,
    binds: Sequence[Mapping[Hashable, Any]],
    live: Mapping[Hashable, int],
    cost_fn: Callable[[str], int],
) -> tuple[list[int], list[bool], BindingTable | None]:
    """Pinned-set subtraction, escalating to a binding table when the pinned set does not fit.

    Returns ``(preset, excluded, table)``: the blocks kept and charged before the walk, the
    blocks that are no candidates (tabled), and the table or None.  If sum(cost[pinned]) <=
    budget, every pinned block is preset and nothing is tabled; otherwise the pinned
    non-roots are replaced by ``binding_table`` (charged ``table.cost``), and if the roots
    plus the table still exceed the budget, ``ReferentEvictionError``.
    """
    n = len(cost)
    pinned_cost = sum(cost[i] for i in pinned)
    if pinned_cost <= budget:
        return list(pinned), [False] * n, None
    table = binding_table(pinned, roots, binds, live, cost_fn)
    root_cost = sum(cost[i] for i in roots)
    if root_cost + table.cost > budget:
        raise ReferentEvictionError.over_budget(list(pinned), pinned_cost, list(roots), root_cost, table.cost, budget)
    root_set = set(roots)
    excluded = [False] * n
    for i in pinned:
        excluded[i] = i not in root_set
    return list(roots), excluded, table


def orphans(
    retained: Iterable[int],
    uses: Any,
    binds: Any,
    *,
    order: Sequence[int] | None = None,
    binders: Mapping[Hashable, int] | None = None,
    table: BindingTable | None = None,
) -> list[tuple[int, Hashable, int]]:
    """(kept block, referent, evicted live binder) for every broken reference, sorted.

    A referent resolved by ``table`` is not orphaned.  Works for any retained set.
    """
    use_lists, live = resolve(uses, binds, order, binders)
    kept = set(check_indices("retained", retained, len(use_lists)))
    tabled = {e[0] for e in table.entries} if table is not None else set()
    out = []
    for u in sorted(kept):
        for x in dict.fromkeys(use_lists[u]):
            b = live.get(x)
            if b is not None and b not in kept and x not in tabled:
                out.append((u, x, b))
    return out
