"""Exact dot products of 8 or 16 rows at once: SIMD lanes are rows, never terms of one sum.

The exact contract sums each dot product left to right, ``s <- s + q_t * e_t`` for
t = 0, 1, ..., one rounding per product and per add.  That chain cannot be split along t
(reassociating it changes the bits), so the vector lanes must hold different rows: lane r of
the accumulator is row r's running sum, and every step adds the products of one column t to
all lanes at once.  Numba's auto-vectorizer does not find this (it vectorizes along t, which
the contract forbids), so it is written here as an LLVM intrinsic:

    for each column block t0 = 0, 8, 16, ... (while t0 + 8 <= d):
        load 8 consecutive elements of each row           (8 vectors, rows x columns)
        transpose them with 24 shuffles                    (8 vectors, columns x rows)
        for t in t0 .. t0 + 7:  acc <- acc + q_t * column_t   (lane r: row r only)

Why the bits equal the one-row loop: the transpose only moves values; ``fpext`` of a
float32 to float64 is exact; ``fmul`` and ``fadd`` carry no fast-math flags, so LLVM may
neither fuse them into an FMA nor reorder them; and lane r sees the columns in ascending t,
exactly as ``for t in range(d): s += q[t] * e[r, t]`` does.  The last ``d % 8`` columns are
left to the caller (scalar, continuing each row's sum).

While it sums a block of rows, it asks the cache for the next block (``llvm.prefetch``, a
hint that never faults, also past the end of the matrix), a few cache lines per step in
ascending address order, so the next block has arrived when the loop reaches it.  The block
itself is read as 8 or 16 interleaved row streams, which the hardware prefetcher alone
follows poorly.  The hint fills L2, not L1 (locality 2, ``prefetcht1``): the next block
(16 rows of 1.5 KB at d = 384) and the current one together overfill a 32 KB L1, and lines
fetched into L1 a block early were evicted again before use.  Measured with the matrix in
main memory, N = 1M, d = 384, one core: 129 ms without the hint, 81 ms filling L1, 59 ms
filling L2; two cores at N = 100k: 4.9 ms filling L1, 4.2 ms filling L2 (fast mode's
reassociated loop: 4.0 ms).  Vectors of 8 lanes are plain LLVM
IR; the backend lowers them to whatever the machine has (AVX-512, AVX2, SSE2, NEON).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: rows per vector (lanes); the transpose below is written for 8 x 8
LANES = 8

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_BYTE_PTR = ir.IntType(8).as_pointer()
_PREFETCH_TYPE = ir.FunctionType(ir.VoidType(), [_BYTE_PTR, _I32, _I32, _I32])
_READ, _L2, _DATA = ir.Constant(_I32, 0), ir.Constant(_I32, 2), ir.Constant(_I32, 1)


def _mask(lanes: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(_I32, len(lanes)), lanes)


# an 8 x 8 transpose in three stages of shuffles (interleave 1, 2 and 4 elements)
_UNPACK_LO, _UNPACK_HI = _mask([0, 8, 1, 9, 4, 12, 5, 13]), _mask([2, 10, 3, 11, 6, 14, 7, 15])
_PAIRS_LO, _PAIRS_HI = _mask([0, 1, 8, 9, 4, 5, 12, 13]), _mask([2, 3, 10, 11, 6, 7, 14, 15])
_HALF_LO, _HALF_HI = _mask([0, 1, 2, 3, 8, 9, 10, 11]), _mask([4, 5, 6, 7, 12, 13, 14, 15])
_BROADCAST = _mask([0] * LANES)


def _transpose(builder: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """8 vectors v_r (row r, columns 0..7) -> 8 vectors c_t (column t, rows 0..7)."""
    a = []
    for p in range(0, 8, 2):
        a += [builder.shuffle_vector(rows[p], rows[p + 1], _UNPACK_LO),
              builder.shuffle_vector(rows[p], rows[p + 1], _UNPACK_HI)]  # fmt: skip
    b = []
    for base in (0, 4):
        for x, y in ((a[base], a[base + 2]), (a[base + 1], a[base + 3])):
            b += [builder.shuffle_vector(x, y, _PAIRS_LO), builder.shuffle_vector(x, y, _PAIRS_HI)]
    return [builder.shuffle_vector(b[j], b[j + 4], _HALF_LO) for j in range(4)] + [
        builder.shuffle_vector(b[j], b[j + 4], _HALF_HI) for j in range(4)
    ]


def _contiguous_floats(ty: types.Type, ndim: int) -> bool:
    return isinstance(ty, types.Array) and ty.ndim == ndim and ty.layout == "C" and ty.dtype in (types.float32, types.float64)


def _make(groups: int):
    """The intrinsic for ``groups`` x 8 rows (independent accumulators hide the add latency)."""

    @intrinsic
    def dot_rows(typingctx, embs, q, i, out):
        """out[i + r] = sum_{t < d - d % 8} q_t * e_{i+r, t}, left to right, r < 8 * groups.

        ``embs`` (N, d) and ``q`` (d,) C-contiguous float32/float64, ``out`` C-contiguous
        float64; the caller guarantees i + 8 * groups <= N.
        """
        if not (_contiguous_floats(embs, 2) and _contiguous_floats(q, 1) and _contiguous_floats(out, 1)):
            return None
        if not (q.dtype == types.float64 and out.dtype == types.float64 and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            e_ty, q_ty, i_ty, o_ty = signature.args
            e_arr = context.make_array(e_ty)(context, builder, args[0])
            q_arr = context.make_array(q_ty)(context, builder, args[1])
            o_arr = context.make_array(o_ty)(context, builder, args[3])
            row0 = context.cast(builder, args[2], i_ty, types.int64)
            item = context.get_value_type(e_ty.dtype)
            width = e_ty.dtype.bitwidth // 8
            v_item, v_f64 = ir.VectorType(item, LANES), ir.VectorType(ir.DoubleType(), LANES)
            d = builder.extract_value(e_arr.shape, 1)
            row_bytes = builder.extract_value(e_arr.strides, 0)
            blocks_end = builder.and_(d, ir.Constant(_I64, -LANES))  # d - d % 8
            base = builder.bitcast(e_arr.data, _BYTE_PTR)
            starts = [
                builder.gep(base, [builder.mul(builder.add(row0, ir.Constant(_I64, r)), row_bytes)])
                for r in range(LANES * groups)
            ]

            entry = builder.block
            head = builder.append_basic_block("rowdot.head")
            body = builder.append_basic_block("rowdot.body")
            tail = builder.append_basic_block("rowdot.done")
            builder.branch(head)

            builder.position_at_end(head)
            t0 = builder.phi(_I64)
            t0.add_incoming(ir.Constant(_I64, 0), entry)
            acc = []
            for _ in range(groups):
                phi = builder.phi(v_f64)
                phi.add_incoming(ir.Constant(v_f64, [0.0] * LANES), entry)
                acc.append(phi)
            builder.cbranch(builder.icmp_signed("<", t0, blocks_end), body, tail)

            builder.position_at_end(body)
            offset = builder.mul(t0, ir.Constant(_I64, width))
            # prefetch: this step's share of the next block, lines in ascending order.  A block
            # is 8 * groups rows of d * width bytes and the loop takes d // 8 steps, so
            # groups * width lines per step cover it (t0 * 8 * groups * width bytes so far).
            prefetch = cgutils.get_or_insert_function(builder.module, _PREFETCH_TYPE, "llvm.prefetch.p0")
            ahead = builder.gep(starts[-1], [row_bytes])  # the first row of the next block
            ahead = builder.gep(ahead, [builder.mul(t0, ir.Constant(_I64, LANES * groups * width))])
            for line in range(groups * width):  # read, into L2 (see the module docstring), data
                builder.call(prefetch, [builder.gep(ahead, [ir.Constant(_I64, 64 * line)]), _READ, _L2, _DATA])
            columns = []
            for g in range(groups):
                loaded = [
                    builder.load(builder.bitcast(builder.gep(starts[LANES * g + r], [offset]), v_item.as_pointer()), align=width)
                    for r in range(LANES)
                ]
                columns.append(_transpose(builder, loaded))
            sums = list(acc)
            for t in range(LANES):
                q_t = builder.load(builder.gep(q_arr.data, [builder.add(t0, ir.Constant(_I64, t))]))
                q_v = builder.insert_element(ir.Constant(v_f64, ir.Undefined), q_t, ir.Constant(_I32, 0))
                q_v = builder.shuffle_vector(q_v, q_v, _BROADCAST)
                for g in range(groups):
                    column = columns[g][t]
                    if item != ir.DoubleType():
                        column = builder.fpext(column, v_f64)  # exact
                    sums[g] = builder.fadd(sums[g], builder.fmul(q_v, column))
            for g in range(groups):
                acc[g].add_incoming(sums[g], builder.block)
            t0.add_incoming(builder.add(t0, ir.Constant(_I64, LANES)), builder.block)
            builder.branch(head)

            builder.position_at_end(tail)
            for g in range(groups):
                dst = builder.gep(o_arr.data, [builder.add(row0, ir.Constant(_I64, LANES * g))])
                builder.store(acc[g], builder.bitcast(dst, v_f64.as_pointer()), align=8)
            return cgutils.get_null_value(context.get_value_type(types.none))

        return types.none(embs, q, i, out), codegen

    return dot_rows


#: out[i:i+8] (one accumulator vector)
dot_rows8 = _make(1)
#: out[i:i+16] (two independent accumulator vectors: the add latency is hidden)
dot_rows16 = _make(2)
