"""The streaming floor: one read of an embedding matrix, as fast as the memory delivers it.

``E @ q`` is the floor a NumPy user sees, but OpenBLAS's float32 ``sgemv`` does not reach
this machine's memory bandwidth, so ratios against it flatter any kernel that does.  The
streaming floor is a plain per-row sum over the same bytes, compiled by Numba with
fast-math (``reassoc``: the sum may use SIMD partial sums), on threads from the engine's
``PARALLEL_MIN_N`` rows (as ``retain`` itself): it reads every
element once and does the least arithmetic per byte anything that reads every element can
do (one add per element in the element's own width, 16 float32 lanes per 512-bit add), so
its time is the time of the read.  The fast-mode dot product over the same float32 matrix
(``tools/peer_table.py floor`` prints both) takes about as long, within the machine's noise
either way (0.84-1.04x of the row sum at N = 100,000 and 1,000,000 here): both are bound by
the read.  The row sum is the one reported because it applies unchanged to every stored
form, with no query and no float64 widening.

float16 and int8 have no Numba arithmetic of their own width here: their rows are summed as
integers (the float16 bit patterns as uint16), which reads the same bytes with integer adds;
the sums mean nothing, only the read counts.  A layout (``TiledEmbeddings``,
``QuantizedEmbeddings``) is summed over the array it stores.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numba
import numpy as np

import dsgc_fast

#: rows from which the floor runs on threads: the engine's documented default and variable
PARALLEL_MIN_N = int(os.environ.get("DSGC_PARALLEL_MIN_N", "32768"))


def _row_sums_float_impl(x, out):
    """out_i = sum_t x_{i,t} in x's own float width, reassociated (SIMD partial sums)."""
    for i in numba.prange(x.shape[0]):
        s = x[i, 0] - x[i, 0]  # zero in x's own width (rows are never empty here)
        for t in range(x.shape[1]):
            s += x[i, t]
        out[i] = s


def _row_sums_int_impl(x, out):
    """out_i = sum_t x_{i,t} as an integer (integer sums vectorize without fast-math)."""
    for i in numba.prange(x.shape[0]):
        s = 0
        for t in range(x.shape[1]):
            s += x[i, t]
        out[i] = s


# serial and parallel twins, picked by size as the engine picks its own; not cached on disk
# (two dispatchers of one function would share cache entries, see dsgc_fast._config.cache_twin)
_FLOAT = (
    numba.njit(_row_sums_float_impl, fastmath={"reassoc"}),
    numba.njit(_row_sums_float_impl, parallel=True, fastmath={"reassoc"}),
)
_INT = (numba.njit(_row_sums_int_impl), numba.njit(_row_sums_int_impl, parallel=True))


def stored_matrix(embs: object) -> np.ndarray:
    """The 2-D array whose bytes a scorer of ``embs`` reads (float16 as uint16 bits)."""
    if isinstance(embs, dsgc_fast.TiledEmbeddings):
        x = embs.tiles.reshape(-1, embs.tiles.shape[-1])
    elif isinstance(embs, dsgc_fast.QuantizedEmbeddings):
        x = embs.codes
    else:
        x = np.ascontiguousarray(embs)
    return x.view(np.uint16) if x.dtype == np.float16 else x


def streaming_floor(embs: object) -> Callable[[], None]:
    """A call that reads ``embs``'s stored bytes once (a fast-math row sum): the floor to time."""
    x = stored_matrix(embs)
    n = embs.shape[0]  # type: ignore[attr-defined]
    floating = x.dtype.kind == "f"
    kernel = (_FLOAT if floating else _INT)[int(n >= PARALLEL_MIN_N)]
    out = np.empty(x.shape[0], dtype=x.dtype if floating else np.int64)
    return lambda: kernel(x, out)
