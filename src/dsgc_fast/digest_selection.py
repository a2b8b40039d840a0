"""Whole / digest / evict per block under a budget: validated inputs -> the Numba greedy.

The rule is ``dsgc_ref.digest_selection``'s, bit for bit (same forms, same ``used``, same
``value`` on every input):

    ratio(g, k)  = g / k if k > 0, else +inf
    a_i = ratio(w_i, d_i)    h_i = ratio(v_i, c_i)    u_i = ratio(v_i - w_i, c_i - d_i)

    floor WHOLE:             no step (charged c_i)
    floor DIGEST:            U_i (digest -> whole, key u_i)             (charged d_i)
    floor EVICT, a_i >= h_i: D_i (evict -> digest, key a_i), U_i (key min(u_i, a_i))
    floor EVICT, a_i <  h_i: W_i (evict -> whole, key h_i),  D_i (key a_i)

Steps are ranked by descending key, ties in layout order (block index, then the step's
place above); the walk takes a step from its source form when ``used + cost <= budget``
(first fit).  See the oracle's module docstring for why and for what is guaranteed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, Form, check_budget

from . import _validate
from ._deferred import deferred

kernel = deferred("dsgc_fast.kernels.digest_selection")


@dataclass(frozen=True)
class FormSelection:
    """What ``select_forms`` decided.

    ``forms``  int8 (N,), read-only: a ``Form`` code per block (0 evict, 1 digest, 2 whole);
    ``used``   the cost of the forms, sum_i cost(forms[i]);
    ``value``  sum_i value(forms[i]), accumulated in index order from 0.0;
    ``budget`` the budget given (``used`` exceeds it only when the floors alone do).
    """

    forms: np.ndarray
    used: int
    value: float
    budget: int

    def __post_init__(self) -> None:
        forms = self.forms
        if not isinstance(forms, np.ndarray) or forms.ndim != 1 or forms.dtype != np.int8:
            raise DsgcTypeError(f"forms must be a 1-D int8 array, got {type(forms).__name__}")
        if forms.size and not (int(forms.min()) >= 0 and int(forms.max()) <= int(Form.WHOLE)):
            raise DsgcValueError(f"forms must hold Form codes 0..{int(Form.WHOLE)}")
        for name in ("used", "budget"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise DsgcValueError(f"{name} must be a non-negative int, got {value!r}")
        if not isinstance(self.value, float) or not np.isfinite(self.value):
            raise DsgcValueError(f"value must be a finite float, got {self.value!r}")

    def indices(self, form: Form) -> np.ndarray:
        """Sorted int64 indices of the blocks sent in ``form``."""
        return np.flatnonzero(self.forms == int(form)).astype(np.int64)


def select_forms(
    whole_costs: Any,
    digest_costs: Any,
    whole_values: Any,
    digest_values: Any,
    budget: Any,
    *,
    floor: Any = None,
) -> FormSelection:
    """Whole, digest or evict per block under ``budget`` (the module docstring's greedy).

    Parameters
    ----------
    whole_costs, digest_costs, whole_values, digest_values, budget, floor
        c_i, d_i, v_i, w_i, B and the floors f_i with the meaning and bounds of
        ``dsgc_ref.digest_selection.select_forms`` (0 <= d_i <= c_i, 0 <= w_i <= v_i,
        B >= 0, f_i a ``Form`` code 0..2, default all 0), the per-block ones as array_like
        of shape (N,).  A block without a digest: d_i = c_i, w_i = v_i (whole or nothing).

    Returns
    -------
    FormSelection
        ``forms`` as a read-only int8 array of ``Form`` codes.

    Raises
    ------
    TypeError
        A non-integral cost or floor, a non-numeric array, a budget not an integer.
    ValueError
        Not 1-D, lengths that differ, a negative cost or value, NaN or inf, d_i > c_i,
        w_i > v_i, a floor outside 0..2, a negative budget, costs whose total overflows.
    """
    b = check_budget(budget)
    c0 = _validate.integer_vector("whole_costs", whole_costs)
    n = c0.shape[0]
    c, _ = _validate.costs(c0, n, "whole_costs")
    d, _ = _validate.costs(digest_costs, n, "digest_costs")
    v = _validate.nonnegative_values("whole_values", whole_values, n)
    w = _validate.nonnegative_values("digest_values", digest_values, n)
    if (d > c).any():
        i = int(np.flatnonzero(d > c)[0])
        raise DsgcValueError(f"digest_costs[{i}] = {int(d[i])} exceeds whole_costs[{i}] = {int(c[i])}")
    if (w > v).any():
        i = int(np.flatnonzero(w > v)[0])
        raise DsgcValueError(f"digest_values[{i}] = {float(w[i])!r} exceeds whole_values[{i}] = {float(v[i])!r}")
    if floor is None:
        f = np.zeros(n, dtype=np.int8)
    else:
        f64 = _validate.integer_vector("floor", floor, n)
        if f64.size and (f64.min() < 0 or f64.max() > 2):
            i = int(np.flatnonzero((f64 < 0) | (f64 > 2))[0])
            raise DsgcValueError(f"floor[{i}] must be a Form (0 evict, 1 digest, 2 whole), got {int(f64[i])}")
        f = f64.astype(np.int8)
    forms = np.empty(n, dtype=np.int8)
    used, value = kernel.select_forms(c, d, v, w, f, b, forms)
    forms.flags.writeable = False
    return FormSelection(forms, int(used), float(value), b)
