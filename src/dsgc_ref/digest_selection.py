"""Whole / digest / evict per block under a budget (pure Python; the oracle of
``dsgc_fast.select_forms``).

Each block i may be sent whole (cost c_i, value v_i), as its digest (cost d_i, value w_i)
or not at all (0, 0), with 0 <= d_i <= c_i and 0 <= w_i <= v_i: a multiple-choice knapsack.
It is solved by a greedy over upgrade *steps* ranked by value per token:

    ratio(g, k)  = g / k if k > 0, else +inf          (a free step comes first)
    a_i = ratio(w_i, d_i)                              evict -> digest
    h_i = ratio(v_i, c_i)                              evict -> whole
    u_i = ratio(v_i - w_i, c_i - d_i)                  digest -> whole

The steps of block i, by its floor f_i (the least form it must have; pinned blocks and live
roots have floor WHOLE):

    f_i = WHOLE              none; charged c_i before the walk
    f_i = DIGEST             U_i = (digest -> whole, cost c_i - d_i, key u_i); charged d_i
    f_i = EVICT, a_i >= h_i  D_i = (evict -> digest, cost d_i, key a_i),
                             U_i = (digest -> whole, cost c_i - d_i, key min(u_i, a_i))
    f_i = EVICT, a_i <  h_i  W_i = (evict -> whole, cost c_i, key h_i),
                             D_i = (evict -> digest, cost d_i, key a_i)

When the digest earns at least the whole's value per token (a_i >= h_i), upgrading is two
steps, the digest first (U_i's key is capped at a_i so that it never comes before D_i).
Otherwise the digest lies below the line from evict to whole (it is LP-dominated): the
block is offered whole first, W_i, and the digest only as a fallback, D_i, at its own lower
key.  ``+inf`` keys: a step costing nothing (a block of cost 0, or a digest as dear as the
whole) is taken as soon as it applies.

**Walk.**  Lay the steps out block by block in index order, each block's steps in the order
listed, and rank them by descending key, ties keeping that layout order (a stable sort: the
lower block index first, then a block's first step).  ``used`` starts at the floors' cost,
``sum_i cost(f_i)``.  Walk the ranking: a step applies only from its source form (D_i and
W_i from EVICT, U_i from DIGEST; a step whose block has moved past its source is passed
over), and it is taken when ``used + cost <= budget`` (first fit: one that does not fit is
skipped and the walk goes on).  Taking it adds its cost to ``used`` and moves the block to
the step's target form.

Floors are kept even when their cost alone exceeds the budget (``used > budget``; then no
step is taken): the caller decides what to do then (the store escalates).

A block without a digest is passed with d_i = c_i and w_i = v_i: then a_i = h_i, D_i then
U_i (free, right after it), so it ends whole or evicted, never DIGEST (unless its floor is
DIGEST and the floors already exceed the budget).

**Result.**  ``forms[i]`` the form of block i, ``used`` the cost of the forms,
``value = sum_i value(forms[i])`` accumulated in float64 from 0.0 in index order.

**Guarantees** (tested): every form is at least its floor; ``used <= budget`` when the
floors fit; no single upgrade left fits (for an evicted block d_i > budget - used; for a
digested one c_i - d_i > budget - used), since what is left only shrinks during the walk
and a fallback D_i follows a W_i that did not fit.  Like every first-fit greedy, the value
is not monotone in the budget in general (a larger budget can admit an early dear step that
crowds out later ones); it is when every step costs 0 or 1 token.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .contract import DsgcTypeError, DsgcValueError, Form, check_budget, is_integer_scalar
from .equations import rank

#: step kinds: (source form, target form)
_DIGEST_STEP = (Form.EVICT, Form.DIGEST)
_UPGRADE_STEP = (Form.DIGEST, Form.WHOLE)
_WHOLE_STEP = (Form.EVICT, Form.WHOLE)


@dataclass
class FormSelection:
    """What ``select_forms`` decided: a ``Form`` per block, the cost and value of the forms."""

    forms: list[Form]
    used: int
    value: float
    budget: int


def _costs(name: str, values: Sequence[Any]) -> list[int]:
    out = []
    for k, x in enumerate(values):
        if not is_integer_scalar(x):
            raise DsgcTypeError(f"{name} must hold integers, got {x!r} at index {k}")
        if int(x) < 0:
            raise DsgcValueError(f"{name} must be >= 0, got {int(x)} at index {k}")
        out.append(int(x))
    return out


def _values(name: str, values: Sequence[Any]) -> list[float]:
    out = []
    for k, x in enumerate(values):
        if isinstance(x, (bool, str, bytes, complex)) or not hasattr(x, "__float__"):
            raise DsgcTypeError(f"{name} must hold real numbers, got {x!r} at index {k}")
        f = float(x)
        if not (math.isfinite(f) and f >= 0.0):
            raise DsgcValueError(f"{name} must be finite and >= 0, got {x!r} at index {k}")
        out.append(f)
    return out


def _floors(floor: Sequence[Any] | None, n: int) -> list[Form]:
    if floor is None:
        return [Form.EVICT] * n
    floor = list(floor)
    if len(floor) != n:
        raise DsgcValueError(f"floor has {len(floor)} entries, expected {n} (one per block)")
    out = []
    for k, x in enumerate(floor):
        if not is_integer_scalar(x) or int(x) not in (0, 1, 2):
            raise DsgcValueError(f"floor[{k}] must be a Form (0 evict, 1 digest, 2 whole), got {x!r}")
        out.append(Form(int(x)))
    return out


def _ratio(gain: float, cost: int) -> float:
    """gain / cost, +inf for a step that costs nothing."""
    return math.inf if cost == 0 else gain / float(cost)


def select_forms(
    whole_costs: Sequence[int],
    digest_costs: Sequence[int],
    whole_values: Sequence[float],
    digest_values: Sequence[float],
    budget: int,
    *,
    floor: Sequence[int] | None = None,
) -> FormSelection:
    """Whole, digest or evict per block under ``budget`` by the greedy of the module docstring.

    Parameters
    ----------
    whole_costs, digest_costs : sequence of int
        c_i and d_i, integers with 0 <= d_i <= c_i.
    whole_values, digest_values : sequence of float
        v_i and w_i, finite reals with 0 <= w_i <= v_i.
    budget : int
        B, a non-negative integer.
    floor : sequence of int, optional
        The least ``Form`` of each block (default: all EVICT).

    Returns
    -------
    FormSelection

    Raises
    ------
    TypeError
        A cost not an integer, a value not a real number, a budget not an integer.
    ValueError
        Lengths that differ, a negative cost or value, NaN or inf, d_i > c_i, w_i > v_i,
        a floor outside 0..2, a negative budget.
    """
    budget = check_budget(budget)
    c = _costs("whole_costs", whole_costs)
    n = len(c)
    d = _costs("digest_costs", digest_costs)
    v = _values("whole_values", whole_values)
    w = _values("digest_values", digest_values)
    for name, seq in (("digest_costs", d), ("whole_values", v), ("digest_values", w)):
        if len(seq) != n:
            raise DsgcValueError(f"{name} has {len(seq)} entries, expected {n} (one per block)")
    for i in range(n):
        if d[i] > c[i]:
            raise DsgcValueError(f"digest_costs[{i}] = {d[i]} exceeds whole_costs[{i}] = {c[i]}")
        if w[i] > v[i]:
            raise DsgcValueError(f"digest_values[{i}] = {w[i]!r} exceeds whole_values[{i}] = {v[i]!r}")
    forms = _floors(floor, n)
    cost_of = [[0, d[i], c[i]] for i in range(n)]
    used = 0
    steps: list[tuple[int, tuple[Form, Form]]] = []
    keys: list[float] = []
    for i in range(n):
        used += cost_of[i][forms[i]]
        up = _ratio(v[i] - w[i], c[i] - d[i])
        if forms[i] == Form.DIGEST:
            block_steps = [(_UPGRADE_STEP, up)]
        elif forms[i] == Form.EVICT:
            a = _ratio(w[i], d[i])
            h = _ratio(v[i], c[i])
            if a >= h:
                block_steps = [(_DIGEST_STEP, a), (_UPGRADE_STEP, min(up, a))]
            else:
                block_steps = [(_WHOLE_STEP, h), (_DIGEST_STEP, a)]
        else:
            block_steps = []
        for kind, key in block_steps:
            steps.append((i, kind))
            keys.append(key)
    for s in rank(keys, range(len(keys))):
        i, (source, target) = steps[s]
        if forms[i] != source:
            continue
        cost = cost_of[i][target] - cost_of[i][source]
        if used + cost <= budget:
            used += cost
            forms[i] = target
    value = 0.0
    for i in range(n):
        value += (0.0, w[i], v[i])[forms[i]]
    return FormSelection(forms, used, value, budget)
