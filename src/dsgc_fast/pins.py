"""Referent pinning over arrays: the referent index, pin closure, orphans, binding table.

The model (live binder = newest binder in ``order``, overridable per referent; transitive
closure through use -> live-binder links) is documented in ``dsgc_ref.pins``, the oracle
these functions must agree with.  Referents become integer ids; uses become a CSR
(block -> referent ids, first occurrence order, duplicates dropped) and binders an array
(referent id -> live binder block, -1 when nobody binds it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import whitespace_cost
from dsgc_ref.pins import BindingTable, check_referents, live_binders, n_blocks, render_table

from . import _validate
from .kernels import pins as pin_kernels


@dataclass(frozen=True)
class ReferentIndex:
    """Uses and live binders of ``n`` blocks as arrays (build once, reuse across calls).

    ``use_indptr``/``use_ids``  CSR: block u uses referent ids ``use_ids[use_indptr[u]:use_indptr[u+1]]``
    ``live_binder``             referent id -> live binder block (-1: unbound)
    ``names``                   referent id -> referent (the list form's keys; ids in the array form)
    ``values``                  referent id -> the live binder's value (None when unbound/unknown)
    ``need_indptr``/``need_blocks``  CSR: block u needs the live binders
                                ``need_blocks[need_indptr[u]:need_indptr[u+1]]`` of its bound uses,
                                precomputed so closures walk block -> block links directly
                                (int32 when the store fits, halving what a walk reads)
    """

    n: int
    use_indptr: np.ndarray
    use_ids: np.ndarray
    live_binder: np.ndarray
    names: Sequence[Hashable]
    values: Sequence[Any]
    need_indptr: np.ndarray = field(init=False, repr=False)
    need_blocks: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        binder = self.live_binder[self.use_ids] if self.use_ids.size else np.empty(0, dtype=np.int64)
        bound = binder >= 0
        before = np.concatenate(([0], np.cumsum(bound)))  # bound links before each use link
        dtype = np.int32 if max(self.n, before[-1]) < np.iinfo(np.int32).max else np.int64
        object.__setattr__(self, "need_indptr", before[self.use_indptr].astype(dtype))
        object.__setattr__(self, "need_blocks", binder[bound].astype(dtype))

    @classmethod
    def from_lists(
        cls, uses: Any, binds: Any, *, order: Any = None, binders: Mapping[Hashable, int] | None = None
    ) -> ReferentIndex:
        """From ``uses[i]`` (referent names) and ``binds[i]`` (referent -> value) lists."""
        use_lists, bind_maps = check_referents(uses, binds, n_blocks(uses, binds))
        n = len(use_lists)
        seq = _validate.order(order, n)
        live = live_binders(bind_maps, seq.tolist(), binders)
        ids: dict[Hashable, int] = {}
        for b in bind_maps:
            for x in b:
                ids.setdefault(x, len(ids))
        indptr = np.zeros(n + 1, dtype=np.int64)
        flat: list[int] = []
        for u, xs in enumerate(use_lists):
            for x in dict.fromkeys(xs):
                flat.append(ids.setdefault(x, len(ids)))
            indptr[u + 1] = len(flat)
        names = list(ids)
        binder = np.array([live.get(x, -1) for x in names], dtype=np.int64)
        values = [bind_maps[b][x] if b >= 0 else None for x, b in zip(names, binder.tolist())]
        return cls(n, indptr, np.asarray(flat, dtype=np.int64), binder, names, values)

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
        in [0, n_referents) (default: one more than the largest id seen).  The caller must
        list each block's referents at most once in ``use_ids`` (duplicates are harmless).
        """
        n = _validate.block_count(n)
        indptr = _validate.integer_vector("use_indptr", use_indptr, n + 1)
        uses = _validate.integer_vector("use_ids", use_ids)
        if indptr[0] != 0 or (np.diff(indptr) < 0).any() or indptr[-1] != uses.shape[0]:
            raise ValueError("use_indptr must start at 0, never decrease and end at len(use_ids)")
        blocks = _validate.indices("bind_blocks", bind_blocks, n)
        bound = _validate.integer_vector("bind_ids", bind_ids, blocks.shape[0])
        seen_max = max(int(uses.max()) if uses.size else -1, int(bound.max()) if bound.size else -1)
        m = seen_max + 1 if n_referents is None else int(n_referents)
        for name, arr in (("use_ids", uses), ("bind_ids", bound)):
            if arr.size and (arr.min() < 0 or arr.max() >= m):
                raise ValueError(f"{name} has a referent id out of range [0, {m})")
        pos = np.empty(n, dtype=np.int64)
        pos[_validate.order(order, n)] = np.arange(n)
        binder = np.full(m, -1, dtype=np.int64)
        if blocks.size:
            by = np.lexsort((pos[blocks], bound))  # by referent, then position: the last wins
            last = np.r_[bound[by][1:] != bound[by][:-1], True]
            binder[bound[by][last]] = blocks[by][last]
        vals = list(values) if values is not None else [None] * m
        if len(vals) != m:
            raise ValueError(f"values has {len(vals)} entries, expected {m} (one per referent)")
        return cls(n, indptr, uses, binder, list(range(m)), vals)

    def needs(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (indptr, blocks) of block -> blocks it needs: the live binders of its bound uses."""
        return self.need_indptr, self.need_blocks


def as_index(n: int, uses: Any, binds: Any, referents: Any, order: Any, binders: Any) -> ReferentIndex:
    """Accept a prebuilt ``ReferentIndex`` (``referents=``) or the ``uses``/``binds`` lists."""
    if referents is not None:
        if uses is not None or binds is not None or binders is not None:
            raise ValueError("pass either referents (a ReferentIndex) or uses/binds/binders, not both")
        if not isinstance(referents, ReferentIndex):
            raise TypeError(f"referents must be a ReferentIndex, got {type(referents).__name__}")
        if referents.n != n:
            raise ValueError(f"referents is a ReferentIndex over {referents.n} blocks, but there are {n} blocks")
        return referents
    if uses is None and binds is None:
        empty = np.zeros(n + 1, dtype=np.int64)
        return ReferentIndex(n, empty, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), [], [])
    index = ReferentIndex.from_lists(uses, binds, order=order, binders=binders)
    if index.n != n:
        raise ValueError(f"uses/binds describe {index.n} blocks, but there are {n} blocks")
    return index


def closure(index: ReferentIndex, roots: np.ndarray) -> np.ndarray:
    """Boolean mask of the roots and everything they pin (transitively)."""
    mask = np.zeros(index.n, dtype=np.bool_)
    pin_kernels.closure_mask(roots, index.need_indptr, index.need_blocks, mask)
    return mask


def pin_closure(
    roots: Any,
    uses: Any = None,
    binds: Any = None,
    *,
    referents: ReferentIndex | None = None,
    order: Any = None,
    binders: Mapping[Hashable, int] | None = None,
) -> np.ndarray:
    """Sorted int64 indices that must stay while ``roots`` stay: the roots and their closure."""
    n = referents.n if referents is not None else n_blocks(uses, binds)
    index = as_index(n, uses, binds, referents, order, binders)
    return np.flatnonzero(closure(index, _validate.indices("roots", roots, n)))


def table_for(
    index: ReferentIndex, pinned: np.ndarray, roots: np.ndarray, cost_fn: Callable[[str], int] | None
) -> BindingTable:
    """One entry per referent whose live binder is a pinned non-root (see ``dsgc_ref.pins.binding_table``)."""
    replaced = pinned.copy()
    replaced[roots] = False
    binder = index.live_binder
    refs = np.flatnonzero(binder >= 0)
    refs = refs[replaced[binder[refs]]]
    entries = [(index.names[x], index.values[x], int(binder[x])) for x in refs.tolist()]
    return render_table(entries, cost_fn or whitespace_cost)


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
    n = referents.n if referents is not None else n_blocks(uses, binds)
    index = as_index(n, uses, binds, referents, order, binders)
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
