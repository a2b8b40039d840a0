"""The candidate lines of a value table, C(S), from interned line ids (one kernel).

A store's own structure, not a retention stage: the rule is ``memory.value_table``'s (its
module docstring, **Candidates**); the twin is the walk over line texts in
``tests/test_value_table.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT


@numba.njit(**JIT)
def candidate_entries(starts, counts, ids, chars, order, longest, round_lines, n_ids, out_source, out_line):
    """Write C(S) to ``out_source``/``out_line`` (position, line id); return how many entries.

    Block k's lines are the ids ``ids[starts[k] : starts[k] + counts[k]]``; id i's text has
    ``chars[i]`` characters.  ``order`` holds S, newest (highest position) first, and is
    overwritten.  Round t takes lines ``t * round_lines`` to ``(t + 1) * round_lines - 1`` of
    each block of S that has them, in ``order``; a line of more than ``longest`` characters, or
    whose id came before, is left out.  The outputs hold at least ``counts[order].sum()`` entries.
    """
    seen = np.zeros(n_ids, dtype=np.bool_)
    m = order.shape[0]
    start = 0
    k = 0
    while m > 0:
        end = start + round_lines
        more = 0
        for j in range(m):
            s = order[j]
            c = counts[s]
            if c <= start:
                continue
            if c > end:
                order[more] = s  # more <= j: the blocks still to read this round are untouched
                more += 1
            base = starts[s]
            for t in range(base + start, base + min(c, end)):
                i = ids[t]
                if chars[i] <= longest and not seen[i]:
                    seen[i] = True
                    out_source[k] = s
                    out_line[k] = i
                    k += 1
        m = more
        start = end
    return k
