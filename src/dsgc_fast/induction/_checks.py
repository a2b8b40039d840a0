"""Argument checks shared by the induction entry points (clear errors naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar


def positive_int(name: str, value: Any) -> int:
    """An integer >= 1."""
    if not is_integer_scalar(value) or int(value) < 1:
        raise DsgcValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def time_rank(timestamps: Any, n: int) -> np.ndarray:
    """Each block's rank in time order (int64, a permutation of 0..n-1).

    None means block order.  Equal timestamps keep block order (a store appends blocks in
    arrival order, so the lower index arrived first).
    """
    if timestamps is None:
        return np.arange(n, dtype=np.int64)
    try:
        ts = np.asarray(timestamps)
    except (TypeError, ValueError) as exc:
        raise DsgcValueError(f"timestamps is not a numeric array: {exc}") from None
    if ts.dtype.kind == "b" or ts.dtype.kind not in "iuf":
        raise DsgcTypeError(f"timestamps must hold real numbers, got dtype {ts.dtype}")
    if ts.shape != (n,):
        raise DsgcValueError(f"timestamps must have shape ({n},) (one per text), got {ts.shape}")
    if ts.dtype.kind == "f" and not np.isfinite(ts).all():
        raise DsgcValueError("timestamps contains NaN or inf")
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(ts, kind="stable")] = np.arange(n, dtype=np.int64)
    return rank
