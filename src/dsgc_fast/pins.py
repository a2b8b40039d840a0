"""Referent pinning over arrays: the referent index, pin closure, escalation, orphans.

The model (``dsgc_ref.pins``, the oracle these functions must agree with): block i uses
referents and binds referents; the live binder of a referent is its binder latest in
``order`` (overridable per referent); closure(S) follows use -> live-binder links from S,
transitively.  Here referents become integer ids, uses a CSR (block -> referent ids, first
occurrence order, duplicates dropped) and live binders an array (referent id -> block, -1
when nobody binds it); closures walk the precomputed block -> needed-binder CSR.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import (
    BindingTable,
    DsgcTypeError,
    DsgcValueError,
    ReferentEvictionError,
    check_binders,
    check_referent_lists,
    referent_block_count,
    render_table,
    whitespace_cost,
)

from . import _validate
from ._deferred import deferred

closure_kernels = deferred("dsgc_fast.kernels.closure")

Indices = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ReferentIndex:
    """Uses and live binders of ``n`` blocks as arrays (build once, reuse across calls).

    Parameters
    ----------
    n : int
        Number of blocks.
    use_indptr, use_ids : array_like of int
        CSR: block u uses referent ids ``use_ids[use_indptr[u]:use_indptr[u + 1]]``.
    live_binder : array_like of int
        Referent id -> its live binder block (-1: unbound).
    names : sequence
        Referent id -> referent (the list form's keys; the ids themselves in the array form).
    values : sequence
        Referent id -> the live binder's value (None when unbound or unknown).

    Notes
    -----
    The arrays are validated and copied (read-only) when the index is made, so a hand-built
    index cannot send an out-of-range index to a kernel and later edits of the caller's
    arrays change nothing.  ``need_indptr``/``need_blocks`` is the derived CSR of block ->
    the live binders of its bound uses (int32 when the store fits), which closures walk.
    """

    n: int
    use_indptr: Indices
    use_ids: Indices
    live_binder: Indices
    names: Sequence[Hashable]
    values: Sequence[Any]
    need_indptr: np.ndarray = field(init=False, repr=False)
    need_blocks: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = _validate.block_count(self.n)
        binder = _validate.integer_vector("live_binder", self.live_binder).copy()
        m = binder.shape[0]
        if binder.size and (binder.min() < -1 or binder.max() >= n):
            raise DsgcValueError(f"live_binder must hold block indices in [0, {n}) or -1 (unbound)")
        binder.flags.writeable = False
        indptr, ids = _validate.csr("use", self.use_indptr, self.use_ids, n, m)
        if len(self.names) != m or len(self.values) != m:
            raise DsgcValueError(
                f"names and values need one entry per referent ({m}), got {len(self.names)} and {len(self.values)}"
            )
        for name, value in (("n", n), ("live_binder", binder), ("use_indptr", indptr), ("use_ids", ids)):
            object.__setattr__(self, name, value)
        self._derive_needs()

    @classmethod
    def built(
        cls, n: int, use_indptr: np.ndarray, use_ids: np.ndarray, live_binder: np.ndarray, names: Sequence[Hashable],
        values: Sequence[Any],
    ) -> ReferentIndex:  # fmt: skip
        """An index over arrays a caller in this package has just built, valid by construction: no re-check.

        The arrays (int64, ``use_ids`` in range, binders in [-1, n)) become the index's own,
        read-only: the caller must not keep them.
        """
        index = object.__new__(cls)
        for name, value in (("n", n), ("use_indptr", use_indptr), ("use_ids", use_ids), ("live_binder", live_binder)):
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(index, name, value)
        object.__setattr__(index, "names", names)
        object.__setattr__(index, "values", values)
        index._derive_needs()
        return index

    def _derive_needs(self) -> None:
        """``need_indptr``/``need_blocks`` from the validated arrays."""
        need_indptr, need_blocks = closure_kernels.need_links(self.live_binder, self.use_indptr, self.use_ids)
        dtype = np.int32 if max(self.n, need_blocks.shape[0]) < np.iinfo(np.int32).max else np.int64
        object.__setattr__(self, "need_indptr", need_indptr.astype(dtype))
        object.__setattr__(self, "need_blocks", need_blocks.astype(dtype))
        for a in (self.need_indptr, self.need_blocks):
            a.flags.writeable = False

    @cached_property
    def need_referents(self) -> Indices:
        """The referent id of each ``need_blocks`` link (what explanations name)."""
        ids = self.use_ids[self.live_binder[self.use_ids] >= 0] if self.use_ids.size else self.use_ids
        ids.flags.writeable = False
        return ids

    @classmethod
    def from_lists(
        cls, uses: Any, binds: Any, *, order: Any = None, binders: Mapping[Hashable, int] | None = None
    ) -> ReferentIndex:
        """From ``uses[i]`` (referent names) and ``binds[i]`` (referent -> value) lists."""
        n = referent_block_count(uses, binds)
        use_lists, bind_maps = check_referent_lists(uses, binds, n)
        pos = _positions(_validate.order(order, n))
        ids: dict[Hashable, int] = {}
        live: list[int] = []
        for i, b in enumerate(bind_maps):
            for x in b:
                k = ids.setdefault(x, len(ids))
                if k == len(live):
                    live.append(i)
                elif pos[i] > pos[live[k]]:
                    live[k] = i
        for x, i in check_binders(binders, bind_maps).items():
            live[ids[x]] = i
        indptr = np.zeros(n + 1, dtype=np.int64)
        flat: list[int] = []
        for u, xs in enumerate(use_lists):
            for x in dict.fromkeys(xs):
                flat.append(ids.setdefault(x, len(ids)))
            indptr[u + 1] = len(flat)
        names = list(ids)
        binder = live + [-1] * (len(names) - len(live))
        values = [bind_maps[b][x] if b >= 0 else None for x, b in zip(names, binder)]
        return cls(n, indptr, np.asarray(flat, dtype=np.int64), np.asarray(binder, dtype=np.int64), names, values)

    @classmethod
    def from_arrays(
        cls,
        n: int,
        use_indptr: Any,
        use_ids: Any,
        bind_blocks: Any,
        bind_ids: Any,
        *,
        n_referents: int | None = None,
        order: Any = None,
        values: Sequence[Any] | None = None,
    ) -> ReferentIndex:
        """The array form for large stores: uses as CSR, binds as parallel (block, referent id) arrays.

        The live binder of a referent is its binder latest in ``order``.  Referent ids must be
        in [0, n_referents) (default: one more than the largest id seen); ``values``, if given,
        has one entry per id.  The caller must list each block's referents at most once in
        ``use_ids`` (duplicates are harmless).

        The index numbers the referents the arrays touch 0, 1, ... in id order and keeps the
        caller's ids as their ``names``, so its memory grows with the links, never with the
        largest id.
        """
        n = _validate.block_count(n)
        uses = _validate.integer_vector("use_ids", use_ids)
        blocks = _validate.indices("bind_blocks", bind_blocks, n)
        bound = _validate.integer_vector("bind_ids", bind_ids, blocks.shape[0])
        touched, local = np.unique(np.concatenate([uses, bound]), return_inverse=True)
        m = int(touched[-1]) + 1 if touched.size else 0
        if n_referents is not None:
            m = _validate.block_count(n_referents, "n_referents")
        for name, ids in (("use_ids", uses), ("bind_ids", bound)):
            if ids.size and (ids.min() < 0 or ids.max() >= m):
                raise DsgcValueError(f"{name} has a referent id out of range [0, {m})")
        if values is not None and len(values) != m:
            raise DsgcValueError(f"values has {len(values)} entries, expected {m} (one per referent id)")
        names = touched.tolist()
        vals = [values[x] for x in names] if values is not None else [None] * len(names)
        local_uses, local_bound = local[: uses.shape[0]], local[uses.shape[0] :]
        pos = _positions(_validate.order(order, n))
        binder = np.full(len(names), -1, dtype=np.int64)
        if blocks.size:
            by = np.lexsort((pos[blocks], local_bound))  # by referent, then position: the last wins
            last = np.r_[local_bound[by][1:] != local_bound[by][:-1], True]
            binder[local_bound[by][last]] = blocks[by][last]
        return cls(n, use_indptr, local_uses, binder, names, vals)

    @classmethod
    def empty(cls, n: int) -> ReferentIndex:
        """An index of ``n`` blocks without referents."""
        none = np.empty(0, dtype=np.int64)
        return cls(n, np.zeros(n + 1, dtype=np.int64), none, none, [], [])

    def needs(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (indptr, blocks) of block -> blocks it needs: the live binders of its bound uses."""
        return self.need_indptr, self.need_blocks

    @property
    def has_links(self) -> bool:
        """True if some block uses a referent that some block binds."""
        return bool(self.need_blocks.shape[0])


def _positions(seq: Indices) -> Indices:
    pos = np.empty(seq.shape[0], dtype=np.int64)
    pos[seq] = np.arange(seq.shape[0], dtype=np.int64)
    return pos


def as_index(n: int | None, uses: Any, binds: Any, referents: Any, order: Any, binders: Any) -> ReferentIndex:
    """Accept a prebuilt ``ReferentIndex`` (``referents=``) or the ``uses``/``binds`` lists.

    ``n`` is the number of blocks the index must cover; None: as many as it describes.
    """
    if n is None:
        n = referents.n if referents is not None else referent_block_count(uses, binds)
    if referents is not None:
        if uses is not None or binds is not None or binders is not None:
            raise DsgcValueError("pass either referents (a ReferentIndex) or uses/binds/binders, not both")
        if not isinstance(referents, ReferentIndex):
            raise DsgcTypeError(f"referents must be a ReferentIndex, got {type(referents).__name__}")
        if referents.n != n:
            raise DsgcValueError(f"referents is a ReferentIndex over {referents.n} blocks, but there are {n} blocks")
        return referents
    if uses is None and binds is None:
        return ReferentIndex.empty(n)
    index = ReferentIndex.from_lists(uses, binds, order=order, binders=binders)
    if index.n != n:
        raise DsgcValueError(f"uses/binds describe {index.n} blocks, but there are {n} blocks")
    return index


def closure(index: ReferentIndex, roots: Indices) -> npt.NDArray[np.bool_]:
    """Boolean mask of the roots and everything they pin (transitively)."""
    mask = np.zeros(index.n, dtype=np.bool_)
    closure_kernels.closure_mask(roots, index.need_indptr, index.need_blocks, mask)
    return mask


def pin_closure(
    roots: Any,
    uses: Any = None,
    binds: Any = None,
    *,
    referents: ReferentIndex | None = None,
    order: Any = None,
    binders: Mapping[Hashable, int] | None = None,
) -> Indices:
    """Sorted int64 indices that must stay while ``roots`` stay: the roots and their closure."""
    index = as_index(None, uses, binds, referents, order, binders)
    return np.flatnonzero(closure(index, _validate.indices("roots", roots, index.n)))


def binding_table(
    index: ReferentIndex, pinned: npt.NDArray[np.bool_], roots: Indices, cost_fn: Callable[[str], int]
) -> BindingTable:
    """One entry per referent whose live binder is a pinned non-root (the blocks it replaces).

    Every live binding those blocks held survives, so a block that uses any of them, pinned
    or admitted later, still resolves it.
    """
    replaced = pinned.copy()
    replaced[roots] = False
    binder = index.live_binder
    refs = np.flatnonzero(binder >= 0)
    refs = refs[replaced[binder[refs]]]
    entries = [(index.names[x], index.values[x], int(binder[x])) for x in refs.tolist()]
    return render_table(entries, cost_fn)


@dataclass(frozen=True)
class Escalation:
    """What the pinned set costs the walk: blocks kept first, blocks tabled, tokens reserved."""

    preset: npt.NDArray[np.bool_]
    excluded: npt.NDArray[np.bool_]
    table: BindingTable | None

    @property
    def reserved(self) -> int:
        return 0 if self.table is None else self.table.cost


def escalate(
    index: ReferentIndex,
    cost: Indices,
    pinned: npt.NDArray[np.bool_],
    roots: Indices,
    budget: int,
    cost_fn: Callable[[str], int] | None,
) -> Escalation:
    """Pinned-set subtraction, escalating to a binding table when the pinned set does not fit.

    If sum(cost[pinned]) <= budget every pinned block is kept first; otherwise the pinned
    non-roots are replaced by ``binding_table`` (charged its cost) and only the roots are
    kept first; if the roots plus the table still exceed the budget,
    ``ReferentEvictionError`` (as ``dsgc_ref.pins.escalate``).
    """
    pinned_cost = int(cost[pinned].sum())
    if pinned_cost <= budget:
        return Escalation(pinned, np.zeros(index.n, dtype=np.bool_), None)
    table = binding_table(index, pinned, roots, cost_fn or whitespace_cost)
    root_cost = int(cost[roots].sum())
    if root_cost + table.cost > budget:
        raise ReferentEvictionError.over_budget(
            np.flatnonzero(pinned).tolist(), pinned_cost, roots.tolist(), root_cost, table.cost, budget
        )
    preset = np.zeros(index.n, dtype=np.bool_)
    preset[roots] = True
    return Escalation(preset, pinned & ~preset, table)


def orphans(
    retained: Any,
    uses: Any = None,
    binds: Any = None,
    *,
    referents: ReferentIndex | None = None,
    order: Any = None,
    binders: Mapping[Hashable, int] | None = None,
    table: BindingTable | None = None,
) -> list[tuple[int, Hashable, int]]:
    """(kept block, referent, evicted live binder) for every broken reference, sorted by block.

    Works for the retained set of any policy; a referent resolved by ``table`` is not orphaned.
    """
    index = as_index(None, uses, binds, referents, order, binders)
    n = index.n
    kept = np.zeros(n, dtype=np.bool_)
    kept[_validate.indices("retained", retained, n)] = True
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(index.use_indptr))
    binder = index.live_binder[index.use_ids]
    bad = kept[owner] & (binder >= 0)
    bad[bad] = ~kept[binder[bad]]
    tabled = {e[0] for e in table.entries} if table is not None else set()
    out = []
    for u, x, b in zip(owner[bad].tolist(), index.use_ids[bad].tolist(), binder[bad].tolist()):
        name = index.names[x]
        if name not in tabled:
            out.append((u, name, b))
    return out
