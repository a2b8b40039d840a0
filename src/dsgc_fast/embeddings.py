"""Block embeddings in layouts built once by the caller: tiled rows and int8 codes.

``retain(query, block_embs, ...)`` takes a plain (N, d) array (float16, float32 or float64),
or one of these objects, built once and reused across queries:

* ``TiledEmbeddings``: the same values, stored tile by tile so the exact kernel reads each
  column of 32 rows as plain vector loads (no shuffles); same results bit for bit.
* ``QuantizedEmbeddings``: int8 codes with a scale map, scored by an exact integer dot
  product (``kernels.quantized``; the equation is in the class docstring).

Both copy what they are given (read-only), so later edits of the caller's arrays change
nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import DsgcValueError

from . import _validate
from ._deferred import deferred

rowdot = deferred("dsgc_fast.kernels.rowdot")


class TiledEmbeddings:
    """Block embeddings kept in tiles of ``TILE_ROWS`` rows, each tile stored column by column.

    Tile k holds rows ``32k .. 32k + 31`` as a (d, 32) block: column t of the tile is those
    rows' t-th values side by side, and the last tile is padded with zero rows.  Exact
    scoring then loads each column as vectors with no transpose and streams the matrix once
    in address order.  Results equal those of the plain array bit for bit (same values,
    same left-to-right sums); the dtype (float16, float32 or float64) is kept.

    Build once with ``TiledEmbeddings.from_array(embs)`` and pass it as ``block_embs``.

    Attributes
    ----------
    tiles : ndarray, (ceil(N / 32), d, 32)
        The tiled values (read-only).
    n : int
        The number of blocks (rows).
    """

    __slots__ = ("n", "tiles")
    tiles: np.ndarray
    n: int

    def __init__(self, tiles: npt.ArrayLike, n: int) -> None:
        """Already tiled values: ``tiles`` (ceil(n / 32), d, 32), ``n`` blocks (usually: ``from_array``).

        The tiles are copied (read-only) in float16, float32 or float64 (other real dtypes
        become float64).  Raises ``ValueError`` unless the tile count is ceil(n / 32), d > 0
        and each tile holds ``TILE_ROWS`` rows; ``TypeError`` for values that are not real
        numbers.
        """
        n = _validate.block_count(n, "n")
        arr = _validate.numeric_array("tiles", tiles)
        if arr.ndim != 3 or arr.shape[2] != rowdot.TILE_ROWS or arr.shape[1] == 0:
            raise DsgcValueError(
                f"tiles must be a (tiles, d, {rowdot.TILE_ROWS}) array with d > 0, got shape {arr.shape}"
            )
        if arr.shape[0] != -(-n // rowdot.TILE_ROWS):
            raise DsgcValueError(
                f"tiles hold {arr.shape[0]} tiles of {rowdot.TILE_ROWS} rows, but n = {n} blocks need {-(-n // rowdot.TILE_ROWS)}"
            )
        tiles = np.array(arr, dtype=arr.dtype if arr.dtype in _validate.EMBEDDING_DTYPES else np.float64, order="C")
        tiles.flags.writeable = False
        self.tiles, self.n = tiles, n

    @classmethod
    def from_array(cls, embs: npt.ArrayLike) -> TiledEmbeddings:
        """Tile an (N, d) float16/float32/float64 matrix (other real dtypes become float64)."""
        arr = _validate.embeddings("embs", embs)
        n, d = arr.shape
        n_tiles = -(-n // rowdot.TILE_ROWS)
        padded = np.zeros((n_tiles * rowdot.TILE_ROWS, d), dtype=arr.dtype)
        padded[:n] = arr
        tiled = object.__new__(cls)  # the tiles are this call's own: no check, no second copy
        tiled.tiles = np.ascontiguousarray(padded.reshape(n_tiles, rowdot.TILE_ROWS, d).transpose(0, 2, 1))
        tiled.tiles.flags.writeable = False
        tiled.n = n
        return tiled

    @property
    def shape(self) -> tuple[int, int]:
        """(N, d), as of the array it was built from."""
        return self.n, int(self.tiles.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.tiles.dtype

    def row(self, i: int) -> np.ndarray:
        """Row i's values (a copy)."""
        return self.tiles[i // rowdot.TILE_ROWS, :, i % rowdot.TILE_ROWS].copy()

    def to_array(self) -> np.ndarray:
        """The (N, d) matrix back in row-major order."""
        d = self.tiles.shape[1]
        return np.ascontiguousarray(self.tiles.transpose(0, 2, 1).reshape(-1, d)[: self.n])

    def __repr__(self) -> str:
        return f"TiledEmbeddings(n={self.n}, d={self.shape[1]}, dtype={self.dtype})"


class QuantizedEmbeddings:
    """int8 codes of block embeddings and the map back to values, as one explicit input.

    The codes stand for ``e_{i,t} ~ s_i * h_t * c_{i,t} + o_t``: ``scale`` s (one value for
    the matrix, or one per row; the symmetric forms), ``step`` h and ``offset`` o per
    dimension (the affine form of sentence-transformers' int8 ``quantize_embeddings``, see
    ``from_ranges``; h = 1 and o = 0 when not given).

    Similarity with a query q is defined exactly (``dsgc_ref.equations.quantized_similarities``
    is the same equation in plain Python, and the two agree bit for bit)::

        w_t = q_t * h_t                     (w = q without step)
        k   = 14 - E, where max_t |w_t| = m * 2**E with 0.5 <= m < 1 (k = 0 when w = 0)
        Q_t = round_half_even(w_t * 2**k)   (integers, |Q_t| <= 2**14)
        S_i = sum_t Q_t * c_{i,t}           (an exact integer)
        a_i = (S_i * 2**-k) * s_i  +  b,    b = sum_t q_t * o_t left to right (no term without offset)

    in float64, one rounding per operation.  The largest |Q_t| is between 2**13 and 2**14,
    so each weight moves by at most 2**-14 of the largest weight's magnitude (the codes
    themselves resolve 2**-8 of their range); in exchange the dot product is exact integer
    arithmetic, which SIMD sums along the dimension in any order, so scoring reads the
    1-byte codes at memory speed.

    Parameters
    ----------
    codes : array_like of int8, (N, d)
    scale : float or array_like (N,), optional
        Finite and > 0 (default 1.0).
    step : array_like (d,), optional
        Finite and > 0.
    offset : array_like (d,), optional
        Finite.
    """

    __slots__ = ("codes", "offset", "scale", "step")
    codes: np.ndarray
    scale: np.ndarray
    step: np.ndarray | None
    offset: np.ndarray | None

    def __init__(self, codes: npt.ArrayLike, scale: Any = 1.0, *, step: Any = None, offset: Any = None) -> None:
        self.codes, self.scale, self.step, self.offset = _validate.quantized(codes, scale, step, offset)

    @classmethod
    def from_ranges(cls, codes: npt.ArrayLike, ranges: npt.ArrayLike) -> QuantizedEmbeddings:
        """The map of sentence-transformers' int8 ``quantize_embeddings`` with its ``ranges``.

        There a value x of dimension t becomes ``floor((x - lo_t) / h_t) - 128`` (clipped),
        with ``h_t = (hi_t - lo_t) / 255`` in float32 (1 where that is 0) and ``ranges`` =
        [lo; hi] (2, d).  A code c therefore covers [lo_t + (c + 128) h_t, lo_t + (c + 129) h_t);
        here it stands for the middle of that interval: step h_t, offset lo_t + 128.5 h_t.
        """
        lo, hi = _validate.quantization_ranges(ranges, np.shape(codes)[-1] if np.ndim(codes) else 0)
        h = (hi - lo) / np.float32(255)
        h = np.where(h == 0, np.float32(1), h).astype(np.float64)
        return cls(codes, 1.0, step=h, offset=lo.astype(np.float64) + 128.5 * h)

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape

    def dequantize(self) -> np.ndarray:
        """The (N, d) float64 values the codes stand for: s_i * h_t * c_{i,t} + o_t."""
        s = self.scale if self.scale.shape[0] == self.codes.shape[0] else self.scale[0]
        values = self.codes.astype(np.float64) * (s[:, None] if np.ndim(s) else s)
        if self.step is not None:
            values *= self.step
        if self.offset is not None:
            values += self.offset
        return values

    def query_form(self, q: np.ndarray) -> tuple[np.ndarray, float, float | None]:
        """(Q as int16, 2**-k, b or None) of the equation above for one float64 query q."""
        w = q if self.step is None else q * self.step
        top = float(np.abs(w).max())
        k = 14 - math.frexp(top)[1] if top > 0 else 0
        weights = np.rint(np.ldexp(w, k)).astype(np.int16)
        offset = None
        if self.offset is not None:
            b = 0.0
            for qt, ot in zip(q.tolist(), self.offset.tolist()):
                b += qt * ot
            offset = b
        return weights, math.ldexp(1.0, -k), offset

    def __repr__(self) -> str:
        form = "per row" if self.scale.shape[0] > 1 else "per matrix"
        extra = (", step" if self.step is not None else "") + (", offset" if self.offset is not None else "")
        return f"QuantizedEmbeddings(n={self.shape[0]}, d={self.shape[1]}, scale {form}{extra})"
