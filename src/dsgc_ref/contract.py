"""The shared vocabulary of the retention contract.

Both implementations (``dsgc_ref``, the pure-Python oracle, and ``dsgc_fast``, the Numba
engine) import these names so that a policy, a selection rule, a reason code or a parameter
check means the same thing everywhere.  Pure Python only: no NumPy here.
"""

from __future__ import annotations

import math
import numbers
from enum import IntEnum
from typing import Any

POLICIES: tuple[str, ...] = ("similarity", "no_graph", "dsgc", "recency")
SELECTIONS: tuple[str, ...] = ("first_fit", "prefix")


class Reason(IntEnum):
    """Why a block was kept or evicted (one code per block in ``Retention.reasons``).

    KEPT_RELEVANCE    kept; its own relevance ``r_i`` is at least its propagated share
                      ``lambda_pi * pi_i`` (a root by relevance).
    KEPT_PROPAGATION  kept; the propagated share ``lambda_pi * pi_i`` exceeds ``r_i``
                      (kept because blocks that depend on it are relevant).
    KEPT_RECENCY      kept by the recency policy (newest first).
    KEPT_PINNED       kept because it is a live root or in the referent closure of one.
    KEPT_CLOSURE      kept because a block admitted by the ranking uses a referent it binds
                      (closure-aware selection admits the unit all or nothing).
    SKIPPED_NO_FIT    evicted: the ranking reached it but it (or its closure unit) did not fit.
    EVICTED_CUTOFF    evicted: ``selection="prefix"`` stopped before the ranking reached it.
    TABLED            evicted, but its bindings survive in the binding table (escalation).
    """

    KEPT_RELEVANCE = 0
    KEPT_PROPAGATION = 1
    KEPT_RECENCY = 2
    KEPT_PINNED = 3
    KEPT_CLOSURE = 4
    SKIPPED_NO_FIT = 5
    EVICTED_CUTOFF = 6
    TABLED = 7

    @property
    def kept(self) -> bool:
        return self <= Reason.KEPT_CLOSURE

    @property
    def label(self) -> str:
        return _REASON_LABELS[self]


_REASON_LABELS = {
    Reason.KEPT_RELEVANCE: "kept: root by relevance",
    Reason.KEPT_PROPAGATION: "kept: by propagation from dependents",
    Reason.KEPT_RECENCY: "kept: recency",
    Reason.KEPT_PINNED: "kept: pinned (live root or referent closure)",
    Reason.KEPT_CLOSURE: "kept: binds a referent of an admitted block",
    Reason.SKIPPED_NO_FIT: "evicted: did not fit the budget",
    Reason.EVICTED_CUTOFF: "evicted: below the prefix cutoff",
    Reason.TABLED: "evicted: replaced by the binding table",
}


def whitespace_cost(text: str) -> int:
    """The paper's token cost of a text: ``max(len(text.split()), 1)``."""
    return max(len(text.split()), 1)


class ReferentEvictionError(RuntimeError):
    """Raised when even the live roots plus the binding table exceed the budget.

    Evicting a pinned block would orphan a referent that a live block still uses, so the
    engine refuses instead of answering with a silently broken context.
    """


def is_integer_scalar(value: Any) -> bool:
    """True for Python/NumPy integers and integral finite floats, never for bools."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    if isinstance(value, numbers.Real):
        f = float(value)
        return math.isfinite(f) and f.is_integer()
    return False


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    f = float(value)
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return f


def check_budget(budget: Any) -> int:
    """Return the budget as an int; it must be a non-negative integer."""
    if not is_integer_scalar(budget):
        raise TypeError(f"budget must be a non-negative integer token count, got {budget!r}")
    b = int(budget)
    if b < 0:
        raise ValueError(f"budget must be >= 0, got {b}")
    return b


def check_parameters(
    *,
    policy: Any,
    selection: Any,
    lambda_pi: Any,
    tau: Any,
    hops: Any,
    decay: Any,
    density_exponent: Any,
) -> tuple[str, str, float, float, int, float, float]:
    """Validate the scalar parameters of ``retain``; return them canonicalized.

    Returns ``(policy, selection, lambda_pi, tau, hops, decay, density_exponent)``.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    lam = _real("lambda_pi", lambda_pi)
    if lam < 0:
        raise ValueError(f"lambda_pi must be >= 0, got {lam}")
    t = _real("tau", tau)
    if t <= 0:
        raise ValueError(f"tau must be > 0, got {t}")
    if not is_integer_scalar(hops):
        raise TypeError(f"hops must be an integer >= 1, got {hops!r}")
    h = int(hops)
    if h < 1:
        raise ValueError(f"hops must be >= 1, got {h}")
    dec = _real("decay", decay)
    if dec < 0:
        raise ValueError(f"decay must be >= 0, got {dec}")
    p = _real("density_exponent", density_exponent)
    if p < 0:
        raise ValueError(f"density_exponent must be >= 0, got {p}")
    return policy, selection, lam, t, h, dec, p
