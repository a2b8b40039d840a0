"""Exact dot products of many rows at once: SIMD lanes are rows, never terms of one sum.

The exact contract sums each dot product left to right, ``s <- s + q_t * e_t`` for
t = 0, 1, ..., one rounding per product and per add.  That chain cannot be split along t
(reassociating it changes the bits), so the vector lanes must hold different rows: lane r of
an accumulator is row r's running sum, and every step adds the products of one column t to
all lanes at once.  Numba's auto-vectorizer does not find this (it vectorizes along t, which
the contract forbids), so it is written here as LLVM intrinsics, for two layouts:

``dot_rows8`` / ``dot_rows16`` read a row-major (N, d) matrix, one or two groups of 8 rows::

    for each column block t0 = 0, 8, 16, ... (while t0 + 8 <= d):
        load the 8 x 8 block as 8 vectors, each two halves: columns t0 + 4h .. t0 + 4h + 3
            of rows r (low half) and r + 4 (high half), r < 4, h < 2
        transpose them with 16 shuffles                    (8 vectors, columns x rows)
        for t in t0 .. t0 + 7:  acc <- acc + q_t * column_t   (lane r: row r only)

(An 8 x 8 transpose of whole rows takes 24 shuffles, in three stages; loading each vector
from two rows does the stage that moves halves, as loads, which do not compete with the
shuffles and the conversions for the one port that runs them on x86.)

The last ``d % 8`` columns are left to the caller (scalar, continuing each row's sum).

``dot_tile`` reads a tile of ``TILE_ROWS`` rows stored column by column (the layout of
``dsgc_fast.TiledEmbeddings``: tile k, column t holds rows 32k .. 32k + 31 side by side), so
each column is ``TILE_ROWS // 8`` plain vector loads: no shuffles, and one sequential stream
through memory that the hardware prefetcher follows by itself.

Element types: float64, float32, and float16 passed as its raw bits (a uint16 array: Numba
has no float16 arithmetic on the CPU).  In these kernels a uint16 element always means IEEE
half bits: they are bitcast to ``half`` and widened with ``fpext``, inside the registers
(float16 rows are widened to float32 before the transpose, which then runs as for float32).

Why the bits equal the one-row loop: the transpose only moves values; ``fpext`` of a
float16 or float32 to float64 is exact; the products and sums carry no fast-math flags, so
LLVM may neither reorder nor fuse them; and lane r sees the columns in ascending t, exactly
as ``for t in range(d): s += q[t] * e[r, t]`` does.

The ``fused`` variants compute each step as ``llvm.fmuladd(q_t, e_t, s)``, which the backend
turns into one FMA instruction where the machine has one.  An FMA rounds ``q_t * e_t + s``
once instead of twice, which equals the two-rounding result whenever the product
``q_t * e_t`` is exact in float64.  That holds when q is a float32 vector (24 significant
bits) and the embeddings are float32 (24) or float16 (11): the product has at most 48
significant bits, its magnitude stays between 2**-298 and 2**256, so it is never rounded.
The caller checks that precondition (``scoring.products_exact``); under it the fused kernels
give the same bits as the plain ones, with one instruction per step instead of two.

While ``dot_rows*`` sums a block of rows, it asks the cache for the block two blocks ahead
(``llvm.prefetch``, a hint that never faults, also past the end of the matrix), a few cache
lines per step in ascending address order: a block is read as 8 or 16 interleaved row
streams, which the hardware prefetcher alone follows poorly.  The hint fills L2, not L1
(locality 2, ``prefetcht1``): the prefetched blocks and the current one together overfill a
32 KB L1.  Vectors of 8 lanes are plain LLVM IR; the backend lowers them to whatever the
machine has (AVX-512, AVX2, SSE2, NEON).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: rows per vector (lanes); the transpose below is written for 8 x 8
LANES = 8
#: rows per tile of the tiled layout (four accumulator vectors)
TILE_ROWS = 32
#: blocks of rows between the one being summed and the one being prefetched
_AHEAD = 2

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_BYTE_PTR = ir.IntType(8).as_pointer()
_V_F64 = ir.VectorType(ir.DoubleType(), LANES)
_ZEROS = ir.Constant(_V_F64, [0.0] * LANES)
_PREFETCH_TYPE = ir.FunctionType(ir.VoidType(), [_BYTE_PTR, _I32, _I32, _I32])
_FMULADD_TYPE = ir.FunctionType(_V_F64, [_V_F64, _V_F64, _V_F64])
_READ, _L2, _DATA = ir.Constant(_I32, 0), ir.Constant(_I32, 2), ir.Constant(_I32, 1)

#: element types the kernels read, and the LLVM type of one element (uint16: half bits)
_ITEMS = {types.float64: ir.DoubleType(), types.float32: ir.FloatType(), types.uint16: ir.IntType(16)}
#: significand bits of each element type (uint16: a half's 11)
SIGNIFICAND_BITS = {types.float64: 53, types.float32: 24, types.uint16: 11}


def _mask(lanes: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(_I32, len(lanes)), lanes)


# the two in-lane stages of an 8 x 8 transpose (interleave 1, then 2 elements within each half)
_UNPACK_LO, _UNPACK_HI = _mask([0, 8, 1, 9, 4, 12, 5, 13]), _mask([2, 10, 3, 11, 6, 14, 7, 15])
_PAIRS_LO, _PAIRS_HI = _mask([0, 1, 8, 9, 4, 5, 12, 13]), _mask([2, 3, 10, 11, 6, 7, 14, 15])
_CONCAT = _mask(list(range(LANES)))
_BROADCAST = _mask([0] * LANES)


def _load_halves(builder: ir.IRBuilder, rows: list[ir.Value], offset: ir.Value, dtype: types.Type) -> list[ir.Value]:
    """The 8 vectors ``_transpose_halves`` takes, from 8 row pointers at byte ``offset`` (column t0).

    v_{4h+r} = columns t0 + 4h .. t0 + 4h + 3 of row r, then of row r + 4, as float32 or
    float64 (``_floats``): two loads of 4 elements each, joined.
    """
    width = dtype.bitwidth // 8
    v_half = ir.VectorType(_ITEMS[dtype], LANES // 2).as_pointer()

    def half(r: int, h: int) -> ir.Value:
        at = builder.gep(rows[r], [builder.add(offset, ir.Constant(_I64, 4 * h * width))])
        return builder.load(builder.bitcast(at, v_half), align=width)

    return [
        _floats(builder, builder.shuffle_vector(half(r, h), half(r + 4, h), _CONCAT), dtype)
        for h in (0, 1)
        for r in range(4)
    ]


def _transpose_halves(builder: ir.IRBuilder, halves: list[ir.Value]) -> list[ir.Value]:
    """8 vectors v_{4h+r} (columns 4h..4h+3 of row r, then of row r + 4) -> 8 vectors c_t (column t, rows 0..7).

    Each group of four is a 4 x 4 transpose inside both halves at once: 8 shuffles.
    """
    columns = []
    for h in (0, 1):
        v = halves[4 * h : 4 * h + 4]
        a = [builder.shuffle_vector(v[p], v[p + 1], m) for p in (0, 2) for m in (_UNPACK_LO, _UNPACK_HI)]
        for x, y in ((a[0], a[2]), (a[1], a[3])):
            columns += [builder.shuffle_vector(x, y, _PAIRS_LO), builder.shuffle_vector(x, y, _PAIRS_HI)]
    return columns


def _floats(builder: ir.IRBuilder, vec: ir.Value, dtype: types.Type) -> ir.Value:
    """Half bits -> float32 (exact); float32 and float64 vectors pass through."""
    if dtype == types.uint16:
        half = builder.bitcast(vec, ir.VectorType(ir.HalfType(), vec.type.count))
        return builder.fpext(half, ir.VectorType(ir.FloatType(), vec.type.count))
    return vec


def _doubles(builder: ir.IRBuilder, vec: ir.Value) -> ir.Value:
    """A float32 or float64 vector of 8 as float64 (``fpext`` is exact)."""
    return vec if vec.type.element == ir.DoubleType() else builder.fpext(vec, _V_F64)


def _step(builder: ir.IRBuilder, acc: ir.Value, q_v: ir.Value, column: ir.Value, fused: bool) -> ir.Value:
    """acc + q_v * column: two roundings, or one ``fmuladd`` (see the module docstring)."""
    if fused:
        fmuladd = cgutils.get_or_insert_function(builder.module, _FMULADD_TYPE, "llvm.fmuladd.v8f64")
        return builder.call(fmuladd, [q_v, column, acc])
    return builder.fadd(acc, builder.fmul(q_v, column))


def _broadcast(builder: ir.IRBuilder, q_data: ir.Value, t: ir.Value) -> ir.Value:
    q_t = builder.load(builder.gep(q_data, [t]))
    q_v = builder.insert_element(ir.Constant(_V_F64, ir.Undefined), q_t, ir.Constant(_I32, 0))
    return builder.shuffle_vector(q_v, q_v, _BROADCAST)


def _contiguous(ty: types.Type, ndim: int, dtypes: tuple[types.Type, ...]) -> bool:
    return isinstance(ty, types.Array) and ty.ndim == ndim and ty.layout == "C" and ty.dtype in dtypes


def _float64_vector(ty: types.Type) -> bool:
    return _contiguous(ty, 1, (types.float64,))


def _accepts(embs: types.Type, ndim: int, q: types.Type, out: types.Type, *indices: types.Type) -> bool:
    """The argument types a dot intrinsic compiles for: ``embs`` C-contiguous with ``ndim``
    dimensions of a supported item, ``q`` and ``out`` float64 vectors, ``indices`` integers."""
    vectors = _contiguous(embs, ndim, tuple(_ITEMS)) and _float64_vector(q) and _float64_vector(out)
    return vectors and all(isinstance(k, types.Integer) for k in indices)


class _Operands(NamedTuple):
    """What a dot intrinsic's codegen reads of its arguments ``(embs, q, ...)``."""

    #: ``embs``'s element type and its bytes per element
    dtype: types.Type
    width: int
    #: ``embs``'s data as a byte pointer, its length along axis 1 (d) and its stride along axis 0 in bytes
    base: ir.Value
    d: ir.Value
    stride: ir.Value
    #: the data of ``q`` and of ``out``
    q_data: ir.Value
    out_data: ir.Value
    #: the integer arguments (every one but ``embs``, ``q`` and ``out``), in order, as int64
    indices: list[ir.Value]


def _operands(context: Any, builder: ir.IRBuilder, signature: Any, args: Sequence[ir.Value], out: int) -> _Operands:
    """The operands of a dot intrinsic whose arguments are ``embs``, ``q``, then ``out`` at position
    ``out`` among integers (the types ``_accepts`` admits)."""
    embs, q, dest = (context.make_array(signature.args[k])(context, builder, args[k]) for k in (0, 1, out))
    indices = [context.cast(builder, args[k], signature.args[k], types.int64) for k in range(2, len(args)) if k != out]
    dtype = signature.args[0].dtype
    return _Operands(
        dtype,
        dtype.bitwidth // 8,
        builder.bitcast(embs.data, _BYTE_PTR),
        builder.extract_value(embs.shape, 1),
        builder.extract_value(embs.strides, 0),
        q.data,
        dest.data,
        indices,
    )


def counted_loop(builder: ir.IRBuilder, start: ir.Value, end: ir.Value, step: int, initial: list[ir.Value]):
    """Open ``for t = start; t < end; t += step`` carrying one accumulator per ``initial`` value.

    Returns (t, accumulators, close): fill the body at the builder's position, then call
    ``close(new_accumulators)``, which leaves the builder after the loop.
    """
    entry = builder.block
    head = builder.append_basic_block("loop.head")
    body = builder.append_basic_block("loop.body")
    done = builder.append_basic_block("loop.done")
    builder.branch(head)
    builder.position_at_end(head)
    t = builder.phi(_I64)
    t.add_incoming(start, entry)
    acc = []
    for value in initial:
        phi = builder.phi(value.type)
        phi.add_incoming(value, entry)
        acc.append(phi)
    builder.cbranch(builder.icmp_signed("<", t, end), body, done)
    builder.position_at_end(body)

    def close(sums: list[ir.Value]) -> None:
        for phi, value in zip(acc, sums):
            phi.add_incoming(value, builder.block)
        t.add_incoming(builder.add(t, ir.Constant(_I64, step)), builder.block)
        builder.branch(head)
        builder.position_at_end(done)

    return t, acc, close


def _store(builder: ir.IRBuilder, out_data: ir.Value, firsts: list[ir.Value], acc: list[ir.Value]) -> None:
    """out[firsts[g] + r] = lane r of acc[g]."""
    for first, vec in zip(firsts, acc, strict=True):
        builder.store(vec, builder.bitcast(builder.gep(out_data, [first]), _V_F64.as_pointer()), align=8)


def _make_rows(groups: int, fused: bool):
    """The row-major intrinsic for ``groups`` x 8 rows (independent accumulators hide the add latency)."""

    @intrinsic
    def dot_rows(typingctx, embs, q, i, last, out):
        """out[j] = sum_{t < d - d % 8} q_t * e_{j, t}, left to right, for the rows j of each group of 8.

        Group g < groups - 1 is rows i + 8g .. i + 8g + 7 and the last group rows last .. last + 7
        (the only group when groups = 1): ``last`` = i + 8 * (groups - 1) is one block of
        8 * groups rows, a smaller one overlaps the group before (a row summed twice gets the
        same bits twice), so one pass covers any 8 * (groups - 1) < count <= 8 * groups rows.
        ``embs`` (N, d) C-contiguous float64, float32 or half bits (uint16), ``q`` (d,) and
        ``out`` C-contiguous float64; the caller guarantees i + 8 * (groups - 1) <= N and
        last + 8 <= N.
        """
        if not _accepts(embs, 2, q, out, i, last):
            return None

        def codegen(context, builder, signature, args):
            ops = _operands(context, builder, signature, args, out=4)
            row0, last = ops.indices
            firsts = [builder.add(row0, ir.Constant(_I64, LANES * g)) for g in range(groups - 1)] + [last]
            starts = [
                builder.gep(ops.base, [builder.mul(builder.add(first, ir.Constant(_I64, r)), ops.stride)])
                for first in firsts
                for r in range(LANES)
            ]
            prefetch = cgutils.get_or_insert_function(builder.module, _PREFETCH_TYPE, "llvm.prefetch.p0")
            end = builder.and_(ops.d, ir.Constant(_I64, -LANES))
            t0, acc, close = counted_loop(builder, ir.Constant(_I64, 0), end, LANES, [_ZEROS] * groups)
            offset = builder.mul(t0, ir.Constant(_I64, ops.width))
            # prefetch: this step's share of the block _AHEAD blocks on, lines in ascending
            # order.  A block is 8 * groups rows of d * width bytes and the loop takes d // 8
            # steps, so groups * width lines per step cover it.
            ahead = builder.gep(starts[0], [builder.mul(ops.stride, ir.Constant(_I64, LANES * groups * _AHEAD))])
            ahead = builder.gep(ahead, [builder.mul(t0, ir.Constant(_I64, LANES * groups * ops.width))])
            for line in range(groups * ops.width):  # read, into L2 (see the module docstring), data
                builder.call(prefetch, [builder.gep(ahead, [ir.Constant(_I64, 64 * line)]), _READ, _L2, _DATA])
            columns = [
                _transpose_halves(
                    builder, _load_halves(builder, starts[LANES * g : LANES * (g + 1)], offset, ops.dtype)
                )
                for g in range(groups)
            ]
            sums = list(acc)
            for t in range(LANES):
                q_v = _broadcast(builder, ops.q_data, builder.add(t0, ir.Constant(_I64, t)))
                for g in range(groups):
                    sums[g] = _step(builder, sums[g], q_v, _doubles(builder, columns[g][t]), fused)
            close(sums)
            _store(builder, ops.out_data, firsts, acc)
            return cgutils.get_null_value(context.get_value_type(types.none))

        return types.none(embs, q, i, last, out), codegen

    return dot_rows


def _make_tile(fused: bool):
    groups = TILE_ROWS // LANES

    @intrinsic
    def dot_tile(typingctx, tiles, q, k, out, first):
        """out[first + r] = sum_t q_t * tiles[k, t, r], left to right, for r < TILE_ROWS.

        ``tiles`` (T, d, TILE_ROWS) C-contiguous float64, float32 or half bits (uint16),
        ``q`` (d,) and ``out`` C-contiguous float64; the caller guarantees k < T and
        first + TILE_ROWS <= len(out).
        """
        if not _accepts(tiles, 3, q, out, k, first):
            return None

        def codegen(context, builder, signature, args):
            ops = _operands(context, builder, signature, args, out=3)
            tile, first = ops.indices
            width = ops.width
            v_item = ir.VectorType(_ITEMS[ops.dtype], LANES)
            start = builder.gep(ops.base, [builder.mul(tile, ops.stride)])
            t, acc, close = counted_loop(builder, ir.Constant(_I64, 0), ops.d, 1, [_ZEROS] * groups)
            column = builder.gep(start, [builder.mul(t, ir.Constant(_I64, TILE_ROWS * width))])
            q_v = _broadcast(builder, ops.q_data, t)
            sums = []
            for g in range(groups):
                ptr = builder.bitcast(builder.gep(column, [ir.Constant(_I64, g * LANES * width)]), v_item.as_pointer())
                lanes = _doubles(builder, _floats(builder, builder.load(ptr, align=width), ops.dtype))
                sums.append(_step(builder, acc[g], q_v, lanes, fused))
            close(sums)
            _store(
                builder, ops.out_data, [builder.add(first, ir.Constant(_I64, LANES * g)) for g in range(groups)], acc
            )
            return cgutils.get_null_value(context.get_value_type(types.none))

        return types.none(tiles, q, k, out, first), codegen

    return dot_tile


@intrinsic
def widen(typingctx, x):
    """One element as float64: float32 by ``fpext``, half bits (uint16) via ``half`` (exact)."""
    if x not in _ITEMS:
        return None

    def codegen(context, builder, signature, args):
        (value,) = args
        if signature.args[0] == types.uint16:
            value = builder.bitcast(value, ir.HalfType())
        return value if signature.args[0] == types.float64 else builder.fpext(value, ir.DoubleType())

    return types.float64(x), codegen


@intrinsic
def significand_bits(typingctx, embs):
    """The significand bits of ``embs``'s element type: 53, 24, or 11 for half bits (uint16)."""
    if not (isinstance(embs, types.Array) and embs.dtype in SIGNIFICAND_BITS):
        return None
    bits = SIGNIFICAND_BITS[embs.dtype]

    def codegen(context, builder, signature, args):
        return ir.Constant(_I64, bits)

    return types.int64(embs), codegen


#: out[last:last+8] (one accumulator vector; ``i`` is not read), two roundings per step
dot_rows8 = _make_rows(1, fused=False)
#: out[i:i+8] and out[last:last+8] (two independent accumulator vectors: the add latency is hidden)
dot_rows16 = _make_rows(2, fused=False)
#: ``dot_rows8`` with one ``fmuladd`` per step (only where products are exact)
dot_rows8_fused = _make_rows(1, fused=True)
#: ``dot_rows16`` with one ``fmuladd`` per step (only where products are exact)
dot_rows16_fused = _make_rows(2, fused=True)
#: one tile of the tiled layout, two roundings per step
dot_tile = _make_tile(fused=False)
#: ``dot_tile`` with one ``fmuladd`` per step (only where products are exact)
dot_tile_fused = _make_tile(fused=True)
