"""Whole / digest / evict per block: the greedy of ``dsgc_ref.digest_selection``."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT
from .selection import rank

# ``dsgc_ref.contract.Form`` codes
EVICT = 0
DIGEST = 1
WHOLE = 2


@numba.njit(**JIT)
def _ratio(gain, cost):
    """gain / cost, +inf for a step that costs nothing."""
    if cost == 0:
        return np.inf
    return gain / np.float64(cost)


@numba.njit(**JIT)
def _form_cost(form, c, d):
    if form == WHOLE:
        return c
    if form == DIGEST:
        return d
    return 0


@numba.njit(**JIT)
def select_forms(whole_costs, digest_costs, whole_values, digest_values, floor, budget, forms):
    """forms <- the form of each block; returns (used, value).

    ``whole_costs``, ``digest_costs`` int64 (N,), 0 <= d_i <= c_i; ``whole_values``,
    ``digest_values`` float64 (N,), finite, 0 <= w_i <= v_i; ``floor`` int8 (N,) in 0..2;
    ``forms`` int8 (N,), written.  The steps (source, target, key) are laid out block by
    block as in the oracle, ranked by ``rank`` (descending key, ties in layout order) and
    walked first fit from their source form.  value = sum_i value(forms[i]) from 0.0 in
    index order.
    """
    n = whole_costs.shape[0]
    step_block = np.empty(2 * n, dtype=np.int64)
    step_source = np.empty(2 * n, dtype=np.int8)
    step_target = np.empty(2 * n, dtype=np.int8)
    keys = np.empty(2 * n, dtype=np.float64)
    used = 0
    m = 0
    for i in range(n):
        c = whole_costs[i]
        d = digest_costs[i]
        forms[i] = floor[i]
        used += _form_cost(floor[i], c, d)
        up = _ratio(whole_values[i] - digest_values[i], c - d)
        if floor[i] == DIGEST:
            step_block[m], step_source[m], step_target[m], keys[m] = i, DIGEST, WHOLE, up
            m += 1
        elif floor[i] == EVICT:
            a = _ratio(digest_values[i], d)
            h = _ratio(whole_values[i], c)
            if a >= h:
                step_block[m], step_source[m], step_target[m], keys[m] = i, EVICT, DIGEST, a
                step_block[m + 1], step_source[m + 1], step_target[m + 1], keys[m + 1] = i, DIGEST, WHOLE, min(up, a)
            else:
                step_block[m], step_source[m], step_target[m], keys[m] = i, EVICT, WHOLE, h
                step_block[m + 1], step_source[m + 1], step_target[m + 1], keys[m + 1] = i, EVICT, DIGEST, a
            m += 2
    walk = rank(keys[:m], np.arange(m, dtype=np.int64))
    for p in range(m):
        s = walk[p]
        i = step_block[s]
        if forms[i] != step_source[s]:
            continue
        c = whole_costs[i]
        d = digest_costs[i]
        cost = _form_cost(step_target[s], c, d) - _form_cost(step_source[s], c, d)
        if used + cost <= budget:
            used += cost
            forms[i] = step_target[s]
    value = 0.0
    for i in range(n):
        if forms[i] == WHOLE:
            value += whole_values[i]
        elif forms[i] == DIGEST:
            value += digest_values[i]
        else:
            value += 0.0
    return used, value
