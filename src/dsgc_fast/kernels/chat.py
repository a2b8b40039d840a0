"""The working ages of a store's active chat blocks from its per-slot chat facts (one kernel).

A store's own structure, not a retention stage: its twin is ``memory.chat.ChatUnits`` over the
same blocks (``dsgc_fast.memory.chat`` states the rule; ``tests/test_store_gathers.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


@numba.njit(**JIT)
def working_ages(slots, active, role, has_calls, caller, user, tool, out):
    """Write the working age of each block ``slots[k]`` (ascending) to ``out[k]``; return the newest user's position.

    ``role``/``has_calls``/``caller`` are per-slot facts (``role`` ``user`` or ``tool`` marks a
    user message or a tool result; ``caller``: the slot of the call a tool result answers, -1
    none); ``active`` flags every slot.  A tool result whose caller is active joins its unit;
    every other block is a unit of its own, numbered in order.  Returns -1 (and all ages 0)
    without a user message.
    """
    n = slots.shape[0]
    base = np.empty(n, dtype=np.int64)
    joins = np.zeros(n, dtype=np.bool_)
    units = 0
    newest_user = -1
    for k in range(n):
        s = slots[k]
        c = caller[s]
        joins[k] = role[s] == tool and c >= 0 and active[c]
        if not joins[k]:
            units += 1
        base[k] = units
        if role[s] == user:
            newest_user = k
    if newest_user < 0:
        out[:] = 0
        return -1
    query_unit = base[newest_user]
    for k in range(n):
        unit = base[np.searchsorted(slots, caller[slots[k]])] if joins[k] else base[k]
        out[k] = query_unit - unit if (joins[k] or has_calls[slots[k]]) and unit < query_unit else 0
    return newest_user
