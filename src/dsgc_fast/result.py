"""``Retention``: what ``retain`` decided, with every intermediate quantity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import POLICIES, SELECTIONS, BindingTable, DsgcTypeError, Reason

from . import _validate
from ._deferred import deferred

selection_kernels = deferred("dsgc_fast.kernels.selection")

#: the fields ``Retention.made`` leaves to their first read: name -> its view of the buffers (float rows,
#: index rows, kept count)
_MADE_FIELDS: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "similarity": lambda rows, positions, count: rows[0],
    "relevance": lambda rows, positions, count: rows[1],
    "propagated": lambda rows, positions, count: rows[2],
    "scores": lambda rows, positions, count: rows[3],
    "working": lambda rows, positions, count: rows[4],
    "_rank": lambda rows, positions, count: positions[0],
    "retained": lambda rows, positions, count: positions[1, :count],
    "pinned": lambda rows, positions, count: positions[1, :0],
}


def _absent() -> None:
    """The default of ``working`` and ``_rank``, made per instance: a class attribute would answer for
    the fields ``Retention.made`` leaves to ``__getattr__``."""


@dataclass
class Retention:
    """What ``retain`` decided, with every intermediate quantity (NumPy arrays).

    Attributes
    ----------
    retained : ndarray of int64
        Sorted indices of the kept blocks.
    mask : ndarray of bool
        Keep flag per block.
    rank : ndarray of int64
        All indices by descending score, ties in ``order`` (computed on first access when the
        selection did not need the whole ranking; the same array either way).
    scores : ndarray of float64
        The ranking score I_i.
    relevance, propagated, similarity : ndarray of float64
        r_i = softmax(a / tau)_i, the support pi_i, and a_i = <q, e_i>.
    working : ndarray of float64
        The agent policy's working-set support rho_i (zeros for the other policies).
    reasons : ndarray of int8
        One ``Reason`` code per block (``reason(i)`` gives the enum).
    used, budget : int
        Total cost kept, and the budget given.
    policy, selection : str
        The policy and selection rule that decided.
    pinned : ndarray of int64
        Sorted indices pinned (the live roots and their referent closure).
    binding_table : BindingTable or None
        The escalation's table, when pinned non-roots were replaced by one.
    order : ndarray of int64 or None
        The tie order (None: the input order).  A private, read-only copy: a result never
        changes when the caller's arrays change afterwards.
    """

    retained: npt.NDArray[np.int64]
    mask: npt.NDArray[np.bool_]
    scores: npt.NDArray[np.float64]
    relevance: npt.NDArray[np.float64]
    propagated: npt.NDArray[np.float64]
    similarity: npt.NDArray[np.float64]
    reasons: npt.NDArray[np.int8]
    used: int
    budget: int
    policy: str
    selection: str
    working: npt.NDArray[np.float64] | None = field(default_factory=_absent, repr=False)
    pinned: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    binding_table: BindingTable | None = None
    order: npt.NDArray[np.int64] | None = field(default=None, repr=False)
    _rank: npt.NDArray[np.int64] | None = field(default_factory=_absent, repr=False)

    def __post_init__(self) -> None:
        """Check every field (types, lengths, index ranges): a hand-built result must not reach a kernel unchecked."""
        owner, v = "Retention", _validate
        v.result_field(owner, "mask", self.mask, v.BOOL, None)
        n = self.mask.shape[0]
        fields = [
            ("scores", self.scores, v.F64, True), ("relevance", self.relevance, v.F64, True),
            ("propagated", self.propagated, v.F64, True), ("similarity", self.similarity, v.F64, True),
            ("reasons", self.reasons, v.I8, True), ("retained", self.retained, v.I64, False),
            ("pinned", self.pinned, v.I64, False),
        ]  # fmt: skip
        fields += [
            (name, x, v.I64, True) for name, x in (("_rank", self._rank), ("order", self.order)) if x is not None
        ]
        if self.working is not None:
            fields.append(("working", self.working, v.F64, True))
        v.result_fields(owner, n, fields)
        v.result_sorted_indices(owner, "retained", self.retained, n)
        v.result_sorted_indices(owner, "pinned", self.pinned, n)
        if self.order is not None:  # the one field a kernel reads by index (``rank``)
            v.result_indices(owner, "order", self.order, n)
        _validate.result_scalars(
            owner,
            {"used": self.used, "budget": self.budget},
            {"policy": (self.policy, POLICIES), "selection": (self.selection, SELECTIONS)},
        )
        if self.binding_table is not None and not isinstance(self.binding_table, BindingTable):
            raise DsgcTypeError(
                f"Retention.binding_table must be a BindingTable or None, got {type(self.binding_table).__name__}"
            )
        if self.working is None:
            self.working = np.zeros(self.scores.shape[0])
        if self.order is not None:
            self.order = self.order.copy()
            self.order.flags.writeable = False

    @property
    def rank(self) -> npt.NDArray[np.int64]:
        """All indices by descending score, ties in ``order`` (int64)."""
        if self._rank is None:
            seq = self.order if self.order is not None else np.arange(self.scores.shape[0], dtype=np.int64)
            self._rank = selection_kernels.rank(self.scores, seq)
        return self._rank

    @property
    def evicted(self) -> npt.NDArray[np.int64]:
        """Sorted int64 indices not kept."""
        return np.flatnonzero(~self.mask)

    def reason(self, i: int) -> Reason:
        """The ``Reason`` for block ``i``."""
        return Reason(int(self.reasons[i]))

    @classmethod
    def made(
        cls, rows: np.ndarray, positions: np.ndarray, count: int, mask: np.ndarray, reasons: np.ndarray, used: int,
        budget: int, policy: str, selection: str,
    ) -> Retention:  # fmt: skip
        """The result a kernel has just written, without ``__post_init__``'s checks (which guard hand-built results).

        ``rows`` (5, N) float64: similarity, relevance, propagated, scores, working;
        ``positions`` (2, N) int64: every index best first, then the kept indices ascending in
        the first ``count`` places; fresh arrays of these types and lengths, shared with nobody
        (no pinning, the input order).  The fields are views of them, each made at its first
        read (``__getattr__``): a caller that reads ``retained`` pays for no other view.
        """
        result = object.__new__(cls)
        result.__dict__ = {
            "mask": mask, "reasons": reasons, "used": used, "budget": budget, "policy": policy, "selection": selection,
            "_buffers": (rows, positions, count),
        }  # fmt: skip
        return result

    if not TYPE_CHECKING:  # to mypy, an unknown attribute stays an error

        def __getattr__(self, name: str) -> Any:
            """A field of a ``made`` result read for the first time: its view of the kernel's buffers, kept."""
            buffers = self.__dict__.get("_buffers")
            if buffers is None or name not in _MADE_FIELDS:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            value = _MADE_FIELDS[name](*buffers)
            self.__dict__[name] = value
            return value

    @classmethod
    def empty(cls, budget: int, policy: str, selection: str) -> Retention:
        """The result for a store of no blocks."""
        i, f = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        return cls(
            i,
            np.empty(0, dtype=np.bool_),
            f,
            f,
            f,
            f,
            np.empty(0, dtype=np.int8),
            0,
            budget,
            policy,
            selection,
            _rank=i,
        )
