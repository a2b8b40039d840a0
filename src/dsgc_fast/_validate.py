"""Coercion and checks for every public entry point of ``dsgc_fast``.

Every error the engine raises about its inputs comes from here, before any Numba kernel
runs (Numba does not bounds-check).  Nothing a caller passes in is modified: arrays are only
read, or copied when their dtype or layout must change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import INT64_MAX, DsgcTypeError, DsgcValueError, is_integer_scalar

from ._deferred import deferred

_config = deferred("dsgc_fast._config")
checks = deferred("dsgc_fast.kernels.checks")
propagation = deferred("dsgc_fast.kernels.propagation")

#: integer inputs (indices, costs, offsets) stay below this, so their sums stay inside int64
INDEX_LIMIT = INT64_MAX // 4


#: the dtypes embeddings are kept and scored in (any other real dtype becomes float64)
EMBEDDING_DTYPES = (np.float16, np.float32, np.float64)
#: dtype kinds of real numbers: signed and unsigned integers, floats
_REAL_KINDS = "iuf"


def text_list(value: Any) -> list[str]:
    """``value`` (any iterable of str: list, tuple, generator, array of str) as a list of str.

    A bare ``str`` or ``bytes``, a non-iterable, or an item that is not a str is a TypeError
    naming ``texts``.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise DsgcTypeError(f"texts must be a sequence of str, got {type(value).__name__}")
    out = list(value)
    for k, t in enumerate(out):
        if not isinstance(t, str):
            raise DsgcTypeError(f"texts[{k}] must be a str, got {type(t).__name__}")
    return out


def numeric_array(name: str, value: Any) -> np.ndarray:
    """``value`` as an ndarray of real numbers (a plain real ndarray is returned as it is)."""
    if type(value) is np.ndarray and value.dtype.kind in _REAL_KINDS:
        return value
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise DsgcValueError(f"{name} is not a rectangular numeric array: {exc}") from None
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise DsgcTypeError(f"{name} must be numeric, got an object array") from None
    if arr.dtype.kind not in _REAL_KINDS:
        raise DsgcTypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr


def embeddings(name: str, value: Any, d: int | None = None) -> np.ndarray:
    """An (N, d) float16/float32/float64 C-contiguous matrix; other real dtypes become float64.

    float16 stays float16: the kernels read its bits and widen them exactly, so it scores
    bit for bit as its float64 copy would, from half the bytes of float32.
    """
    arr = numeric_array(name, value)
    if arr.ndim != 2:
        raise DsgcValueError(f"{name} must be 2-D (N, d), got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise DsgcValueError(f"{name} has an empty embedding dimension (shape {arr.shape})")
    if d is not None and arr.shape[1] != d:
        raise DsgcValueError(f"{name} has d = {arr.shape[1]} but query_emb has d = {d}")
    if arr.dtype not in EMBEDDING_DTYPES:
        arr = arr.astype(np.float64)
    return np.ascontiguousarray(arr)


def block_embeddings(value: Any, d: int) -> Any:
    """``block_embs`` of ``retain``: a ``TiledEmbeddings`` or ``QuantizedEmbeddings`` (already
    checked when built) of dimension d, or a plain matrix (``embeddings``)."""
    if isinstance(value, np.ndarray):
        return embeddings("block_embs", value, d)
    from .embeddings import QuantizedEmbeddings, TiledEmbeddings

    if isinstance(value, (TiledEmbeddings, QuantizedEmbeddings)):
        if value.shape[1] != d:
            raise DsgcValueError(f"block_embs has d = {value.shape[1]} but query_emb has d = {d}")
        return value
    return embeddings("block_embs", value, d)


def _positive_finite(name: str, value: Any, size: int | None) -> np.ndarray:
    """A read-only float64 vector, every entry finite and > 0; ``size`` None: a scalar -> (1,)."""
    arr = numeric_array(name, value).astype(np.float64)
    if size is None:
        if arr.ndim != 0:
            raise DsgcValueError(f"{name} must be a scalar, got shape {arr.shape}")
        arr = arr.reshape(1)
    elif arr.shape != (size,):
        raise DsgcValueError(f"{name} must have shape ({size},), got {arr.shape}")
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise DsgcValueError(f"{name} must be finite and > 0")
    arr.flags.writeable = False
    return arr


def quantized(
    codes: Any, scale: Any, step: Any, offset: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The parts of ``QuantizedEmbeddings`` as read-only copies, checked.

    ``codes`` (N, d) int8 (no other dtype: int8 is what makes them codes); ``scale`` a
    scalar or (N,), finite and > 0; ``step`` (d,) finite and > 0 or None; ``offset`` (d,)
    finite or None.
    """
    c = np.asarray(codes)
    if c.dtype != np.int8:
        raise DsgcTypeError(f"codes must be an int8 array, got dtype {c.dtype}")
    if c.ndim != 2 or c.shape[1] == 0:
        raise DsgcValueError(f"codes must be 2-D (N, d) with d >= 1, got shape {c.shape}")
    c = np.array(c, order="C", copy=True)
    c.flags.writeable = False
    n, d = c.shape
    s = _positive_finite("scale", scale, n if np.ndim(scale) else None)
    h = None if step is None else _positive_finite("step", step, d)
    o = None
    if offset is not None:
        o = numeric_array("offset", offset).astype(np.float64)
        if o.shape != (d,):
            raise DsgcValueError(f"offset must have shape ({d},), got {o.shape}")
        if not np.isfinite(o).all():
            raise DsgcValueError("offset must be finite")
        o.flags.writeable = False
    return c, s, h, o


def quantization_ranges(value: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) float32 vectors of a (2, d) ``ranges`` array: finite, lo <= hi, finite steps."""
    r = numeric_array("ranges", value)
    if r.shape != (2, d):
        raise DsgcValueError(f"ranges must have shape (2, d) = (2, {d}), got {r.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        r32 = r.astype(np.float32)
        steps = (r32[1] - r32[0]) / np.float32(255)
    if not (np.isfinite(r32).all() and np.isfinite(steps).all()):
        raise DsgcValueError("ranges must be finite in float32, and so must (hi - lo) / 255")
    if (r32[1] < r32[0]).any():
        raise DsgcValueError("ranges must have lo <= hi in every dimension (row 0: lo, row 1: hi)")
    return r32[0], r32[1]


def query(value: Any) -> np.ndarray:
    """The query as an (m, d) float64 matrix (a 1-D query becomes m = 1); finite."""
    arr = numeric_array("query_emb", value)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise DsgcValueError(f"query_emb must be (d,) or (m, d) with m >= 1, got shape {np.shape(value)}")
    if arr.shape[1] == 0:
        raise DsgcValueError("query_emb has an empty embedding dimension")
    if arr.dtype == np.float32:  # an encoder's output: widened and checked in one pass
        out = np.empty(arr.shape, dtype=np.float64)
        finite = checks.widen_finite(arr, out)
    else:
        out = np.ascontiguousarray(arr, dtype=np.float64)
        finite = checks.all_finite(out)
    if not finite:
        raise DsgcValueError("query_emb contains NaN or inf")
    return out


def query_weights(value: Any, m: int) -> np.ndarray:
    """Normalized mixture weights w_k / sum w.

    The weights are scaled by the power of two that brings the largest into [0.5, 1) (exact,
    so the same bits as unscaled wherever that sum is finite, and no overflow where it is
    not), then divided by their sum taken left to right.
    """
    if value is None:
        return np.full(m, 1.0 / m) if m > 1 else np.ones(1)
    w = numeric_array("query_weights", value).astype(np.float64).ravel()
    if w.shape[0] != m:
        raise DsgcValueError(f"query_weights has {w.shape[0]} entries, expected {m} (one per query)")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise DsgcValueError("query_weights must be finite and >= 0")
    if not (w > 0).any():
        raise DsgcValueError("query_weights must not all be zero")
    scaled = np.ldexp(w, -math.frexp(float(w.max()))[1])
    total = 0.0
    for x in scaled.tolist():
        total += x
    return scaled / total


def integer_vector(name: str, value: Any, n: int | None = None) -> np.ndarray:
    """A 1-D int64 vector; integral floats are accepted, anything else is a TypeError."""
    arr = numeric_array(name, value)
    if arr.ndim != 1:
        raise DsgcValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise DsgcValueError(f"{name} has {arr.shape[0]} entries, expected {n} (one per block)")
    kind = arr.dtype.kind
    if kind == "f":
        if not (np.isfinite(arr).all() and (arr == np.floor(arr)).all()):
            raise DsgcTypeError(f"{name} must hold integers, got non-integral values")
        if arr.size and np.abs(arr).max() > INDEX_LIMIT:
            raise DsgcValueError(f"{name} has values too large for int64")
    elif kind == "u" and arr.size and arr.max() > INDEX_LIMIT:
        raise DsgcValueError(f"{name} has values too large for int64")
    elif arr.dtype == np.int64 and arr.flags.c_contiguous:
        return arr  # native int64 already (a byte-swapped one is converted below)
    return np.ascontiguousarray(arr, dtype=np.int64)


def costs(value: Any, n: int, name: str = "costs") -> tuple[np.ndarray, int]:
    """N non-negative int64 token costs whose total cannot overflow, and their total."""
    c = integer_vector(name, value, n)
    if not c.size:
        return c, 0
    negative, top, total = (checks.cost_bounds_par if _config.parallel(n) else checks.cost_bounds)(c, propagation.PARTS)
    if negative:
        raise DsgcValueError(f"{name} must be >= 0, got {int(c.min())} at index {int(np.argmin(c))}")
    if top > cost_limit(n):
        raise DsgcValueError(f"{name} are too large: their total would overflow int64")
    return c, int(total)


def nonnegative_values(name: str, value: Any, n: int) -> np.ndarray:
    """N finite float64 values >= 0 (one per block)."""
    arr = numeric_array(name, value)
    if arr.ndim != 1:
        raise DsgcValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise DsgcValueError(f"{name} has {arr.shape[0]} entries, expected {n} (one per block)")
    out = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~(np.isfinite(out) & (out >= 0.0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DsgcValueError(f"{name} must be finite and >= 0, got {out[k]!r} at index {k}")
    return out


def cost_limit(n: int) -> int:
    """The largest token cost allowed in a store of ``n`` blocks: their total stays below the index limit.

    (``kernels.pipeline.retain_small`` computes it in the kernel, from ``INDEX_LIMIT`` too.)
    """
    return INDEX_LIMIT // max(n, 1)


#: the query and embedding dtypes the kernels read as they are (native byte order)
_QUERY_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_EMBEDDING_DTYPES = (np.dtype(np.float16), *_QUERY_DTYPES)
_INT64 = np.dtype(np.int64)


def canonical(query: Any, embs: Any, costs: Any, budget: Any, max_n: int) -> bool:
    """True when ``retain``'s inputs already have the types its checks would give them.

    That is: ``query`` a C-contiguous (d,) float32 or float64 ndarray, ``embs`` a C-contiguous
    (N, d) float16/float32/float64 ndarray with 1 <= N <= ``max_n`` and d >= 1, ``costs`` a
    C-contiguous (N,) native int64 ndarray and ``budget`` an ``int`` (not a bool) in
    [0, 2**63 - 1].  Their values (a finite query, costs in [0, ``cost_limit(N)``]) are left
    to the caller; nothing is converted.
    """
    array = np.ndarray
    if type(query) is not array or type(embs) is not array or type(costs) is not array or type(budget) is not int:
        return False
    shape = embs.shape
    if len(shape) != 2:
        return False
    n, d = shape
    return (
        0 < n <= max_n
        and d > 0
        and query.shape == (d,)
        and costs.shape == (n,)
        and 0 <= budget <= INT64_MAX
        and costs.dtype == _INT64
        and query.dtype in _QUERY_DTYPES
        and embs.dtype in _EMBEDDING_DTYPES
        and query.flags.c_contiguous
        and embs.flags.c_contiguous
        and costs.flags.c_contiguous
    )


def ages(value: Any, n: int, policy: str) -> np.ndarray | None:
    """The agent policy's working ages: n integers in [0, n] (0: no working-set support)."""
    if value is None:
        return None
    if policy != "agent":
        raise DsgcValueError(f"ages (working-set ages) are read by policy 'agent' only, not {policy!r}")
    a = integer_vector("ages", value, n)
    if a.size and (a.min() < 0 or a.max() > n):
        k = int(np.flatnonzero((a < 0) | (a > n))[0])
        raise DsgcValueError(f"ages[{k}] must be an integer in [0, {n}] (0: no working-set support), got {int(a[k])}")
    return a


def block_count(value: Any, name: str = "n") -> int:
    """A number of blocks (or referents): a non-negative integer below the index limit."""
    if not is_integer_scalar(value) or not 0 <= int(value) <= INDEX_LIMIT:
        raise DsgcValueError(f"{name} must be a non-negative integer count, got {value!r}")
    return int(value)


def edges(value: Any, n: int) -> np.ndarray:
    """An (E, 2) int64 array of (dependent, prerequisite) pairs, every index in [0, n)."""
    if value is None:
        return np.empty((0, 2), dtype=np.int64)
    arr = numeric_array("edges", value)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise DsgcValueError(f"edges must be (E, 2) (dependent, prerequisite) pairs, got shape {arr.shape}")
    flat = integer_vector("edges", arr.reshape(-1))
    if flat.min() < 0 or flat.max() >= n:
        bad = int(np.flatnonzero((flat < 0) | (flat >= n))[0]) // 2
        raise DsgcValueError(f"edges[{bad}] = {arr[bad].tolist()} is out of range for {n} blocks")
    return flat.reshape(-1, 2)


def order(value: Any, n: int) -> np.ndarray:
    """A permutation of range(n) as int64 (default: the identity)."""
    if value is None:
        return np.arange(n, dtype=np.int64)
    o = integer_vector("order", value, n)
    if n and (o.min() < 0 or o.max() >= n or np.bincount(o, minlength=n).max() != 1):
        raise DsgcValueError(f"order must be a permutation of range({n})")
    return o


def indices(name: str, value: Any, n: int) -> np.ndarray:
    """Block indices in [0, n) as int64, repeats allowed; a single index or None (none) too."""
    if value is None:
        return np.empty(0, dtype=np.int64)
    single = np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0)
    arr = integer_vector(name, [value] if single else value)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise DsgcValueError(f"{name} has an index out of range for {n} blocks")
    return arr


def csr(name: str, indptr: Any, indices: Any, n_rows: int, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """A read-only int64 copy of a CSR structure: ``indptr`` n_rows + 1 entries from 0, never
    decreasing, ending at len(indices); every index in [0, n_cols)."""
    ptr = integer_vector(f"{name} indptr", indptr, n_rows + 1).copy()
    idx = integer_vector(f"{name} indices", indices).copy()
    if ptr[0] != 0 or ptr[-1] != idx.shape[0] or (n_rows and (np.diff(ptr) < 0).any()):
        raise DsgcValueError(f"{name} indptr must start at 0, never decrease and end at len(indices)")
    if idx.size and (idx.min() < 0 or idx.max() >= n_cols):
        raise DsgcValueError(f"{name} indices must be in [0, {n_cols})")
    ptr.flags.writeable = False
    idx.flags.writeable = False
    return ptr, idx


#: the dtypes of result fields, as dtype objects (compared faster than the scalar types)
BOOL, F64, I8, I64 = (np.dtype(t) for t in (np.bool_, np.float64, np.int8, np.int64))


def result_field(owner: str, name: str, value: Any, dtype: Any, n: int | None) -> None:
    """Raise unless ``value`` is a 1-D ndarray of ``dtype`` (and length ``n`` if given): a field of a result object.

    Result objects (``Retention``, ``BatchRetention``) are built by the engine; built by
    hand, a field of the wrong type or length would reach a kernel, which does not check.
    """
    if not isinstance(value, np.ndarray) or value.dtype != dtype or value.ndim != 1:  # dtype: an np.dtype (fast)
        got = f"{value.dtype} array of shape {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__
        raise DsgcTypeError(f"{owner}.{name} must be a 1-D {np.dtype(dtype)} array, got {got}")
    if n is not None and value.shape[0] != n:
        raise DsgcValueError(f"{owner}.{name} has {value.shape[0]} entries, expected {n} (one per block)")


def result_indices(owner: str, name: str, value: Any, n: int) -> None:
    """``result_field`` for int64 block indices, each in [0, n)."""
    result_field(owner, name, value, I64, None)
    if value.size and (int(value.min()) < 0 or int(value.max()) >= n):
        raise DsgcValueError(f"{owner}.{name} holds an index outside [0, {n})")


def result_fields(owner: str, n: int, fields: Sequence[tuple[str, Any, np.dtype, bool]]) -> None:
    """``result_field`` for each ``(name, value, dtype, per_block)`` (length n when ``per_block``),
    in one cheap pass: only a field that differs from the plain form is looked at closely."""
    for name, value, dtype, per_block in fields:
        if (
            type(value) is not np.ndarray
            or value.dtype is not dtype
            or value.ndim != 1
            or (per_block and value.shape[0] != n)
        ):
            result_field(owner, name, value, dtype, n if per_block else None)


def result_sorted_indices(owner: str, name: str, value: np.ndarray, n: int) -> None:
    """Sorted block indices (already ``result_field``-checked int64): their ends must lie in [0, n) (O(1))."""
    if value.shape[0] and not 0 <= int(value[0]) <= int(value[-1]) < n:
        raise DsgcValueError(f"{owner}.{name} holds an index outside [0, {n})")


def result_scalars(owner: str, names: Mapping[str, Any], choices: Mapping[str, tuple[Any, Sequence[str]]]) -> None:
    """Raise unless each of ``names`` is a non-negative integer and each of ``choices`` one of its strings."""
    for name, value in names.items():
        if type(value) is int and value >= 0:
            continue
        if not is_integer_scalar(value) or int(value) < 0:
            raise DsgcValueError(f"{owner}.{name} must be a non-negative integer, got {value!r}")
    for name, (value, allowed) in choices.items():
        if value not in allowed:
            raise DsgcValueError(f"{owner}.{name} must be one of {list(allowed)}, got {value!r}")
