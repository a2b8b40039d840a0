"""Identifier-based prerequisite edges, computed with sparse matrices.

Rule (the same in ``induce_edges`` and ``IncrementalInducer``):

* **Mentions.**  Block j mentions key k when an identifier with key k occurs in its text
  (``tokens``: coded identifiers and named values; case and one plural ``s`` ignored).
* **Direction.**  Blocks are ordered by ``timestamps`` (default: block order; equal
  timestamps keep block order).  The first block in that order that mentions k
  *introduces* k.  Every later block that mentions k depends on the introducer:
  edge ``(j, introducer(k))``.  No edge ever points from an older block to a newer one.
* **Rarity and hub cap.**  A key yields edges only when 2 <= df(k) <= max_fanout + 1,
  where df(k) is the number of blocks that mention it: a key mentioned once links nothing,
  and a key with more than ``max_fanout`` dependents is a hub (a project code stamped on
  every note, a team name) and yields no edge at all.  Spurious edges hurt retention more
  than missing ones (the paper's Section 8), so a hub's edges are dropped, not trimmed.
* Edges are a set: two blocks sharing several keys get one edge.  Output: an (E, 2) int64
  array of ``(dependent, prerequisite)`` rows sorted lexicographically, the form
  ``dsgc_fast.retain(edges=...)`` takes.

Cost: one ``CountVectorizer`` pass (a regular expression that fires only on identifier
candidates), a sparse column merge of surface forms into keys, one lexsort of the nonzeros
and a unique over pair codes: O(nnz log nnz), no loop over block pairs.  scikit-learn and
SciPy (the ``induce`` extra) are imported when ``induce_edges`` first runs: the rest of the
package (``IncrementalInducer``, the store's induction) needs only NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate
from . import _checks
from .tokens import CANDIDATE_PATTERN, identifier_key

if TYPE_CHECKING:
    import scipy.sparse as sp

#: default cap on the number of dependents one key may give its introducer
MAX_FANOUT = 8


def mention_matrix(texts: Sequence[str]) -> tuple[sp.csr_matrix, list[str]]:
    """Binary (N, K) CSR matrix of block -> identifier key, and the sorted keys.

    scikit-learn counts candidate surfaces; a sparse (surfaces x keys) 0/1 matrix then
    merges the surfaces of one key (``Bundle_North_17``, ``bundle_north_17``) into a column
    and drops candidates that are not identifiers.
    """
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(token_pattern=CANDIDATE_PATTERN, lowercase=False, binary=True, dtype=np.int32)
    try:
        counts = vectorizer.fit_transform(texts)
    except ValueError:  # scikit-learn refuses an empty vocabulary: no candidate anywhere
        if any(vectorizer.build_analyzer()(t) for t in texts):
            raise
        return sp.csr_matrix((len(texts), 0), dtype=np.int32), []
    surfaces = vectorizer.get_feature_names_out()
    surface_keys = [identifier_key(str(s)) for s in surfaces]
    keys = sorted({k for k in surface_keys if k is not None})
    column = {k: c for c, k in enumerate(keys)}
    pairs = [(s, column[k]) for s, k in enumerate(surface_keys) if k is not None]
    rows, cols = [s for s, _ in pairs], [c for _, c in pairs]
    merge = sp.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(len(surfaces), len(keys)))
    matrix = (counts @ merge).tocsr()
    matrix.data[:] = 1
    return matrix, keys


def edges_from_mentions(matrix: sp.spmatrix, rank: np.ndarray, max_fanout: int) -> np.ndarray:
    """Edges ``(dependent, introducer)`` from a binary block x key matrix (module rule).

    ``rank[i]`` is block i's position in time order (a permutation).
    """
    coo = matrix.tocoo()
    rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
    if rows.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    order = np.lexsort((rank[rows], cols))
    rows, cols = rows[order], cols[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = cols[1:] != cols[:-1]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    df = np.diff(np.append(starts, rows.size))
    usable = (df >= 2) & (df - 1 <= max_fanout)
    keep = ~first & usable[group]
    dependent = rows[keep]
    prerequisite = rows[starts][group[keep]]
    n = np.int64(matrix.shape[0])
    codes = np.unique(dependent * n + prerequisite)
    return np.stack([codes // n, codes % n], axis=1)


def induce_edges(texts: Sequence[str], *, timestamps: Any = None, max_fanout: int = MAX_FANOUT) -> np.ndarray:
    """Prerequisite edges induced from shared identifiers (see the module docstring).

    Parameters
    ----------
    texts : the blocks' texts, in store order.
    timestamps : optional (N,) real numbers giving each block's time; default block order.
    max_fanout : a key with more dependents than this is a hub and links nothing.

    Returns an (E, 2) int64 array of ``(dependent, prerequisite)`` rows, sorted.
    """
    blocks = _validate.text_list(texts)
    rank = _checks.time_rank(timestamps, len(blocks))
    cap = _checks.positive_int("max_fanout", max_fanout)
    matrix, _ = mention_matrix(blocks)
    return edges_from_mentions(matrix, rank, cap)
