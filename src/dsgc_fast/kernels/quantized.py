"""Similarity of int8 codes: an exact integer dot product per row, then one scaling.

The equation (``dsgc_ref.equations.quantized_similarities``, ``dsgc_fast.QuantizedEmbeddings``)::

    S_i = sum_t Q_t * c_{i,t}                  (integers: exact, in any order)
    a_i = (S_i * u) * s_i  [+ b]

with ``Q`` the query weights as integers of at most 2**14 in magnitude, ``u = 2**-k`` their
binary scale, ``s_i`` the row scale and ``b`` the offset term (the caller forms Q, u and b).
An integer sum has no rounding, so SIMD lanes may run along the dimension (the layout needs
no transpose), and every order and thread count gives the same S_i.

``dot_codes`` widens 32 codes to int16 and multiplies them with 32 int16 weights, adding
neighbouring products into 16 int32 lanes (``pmaddwd`` where the machine has AVX-512BW,
else the same arithmetic in plain vector IR).  |Q_t * c_{i,t}| <= 2**21, so a lane, which
gains at most 2**22 per step, holds 511 steps without overflow: a call sums at most
``_BLOCK`` columns and ``code_sum`` adds the blocks in int64.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core import config as numba_config
from numba.extending import intrinsic

from .._config import JIT, JIT_PARALLEL, cache_twin
from .rowdot import counted_loop

#: codes per step (int16 products), and the int32 lanes they are added into
_STEP, _LANES = 32, 16
#: columns per ``dot_codes`` call: 511 steps (each lane stays below 2**31)
_BLOCK = 511 * _STEP
#: rows per parallel task
_CHUNK = 4096

_I8, _I16, _I32, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
_V_I16 = ir.VectorType(_I16, _STEP)
_V_I32 = ir.VectorType(_I32, _LANES)
_V_I64 = ir.VectorType(_I64, _LANES)
_EVEN = ir.Constant(ir.VectorType(_I32, _LANES), list(range(0, _STEP, 2)))
_ODD = ir.Constant(ir.VectorType(_I32, _LANES), list(range(1, _STEP, 2)))

#: the x86 instruction is used only when Numba compiles for this host and it has AVX-512BW
_PMADDWD = (
    numba_config.CPU_NAME is None
    and numba_config.CPU_FEATURES is None
    and bool(llvm.get_host_cpu_features().get("avx512bw", False))
)


def _pair_products(builder: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """lane j = x[2j] * y[2j] + x[2j+1] * y[2j+1] in int32, from two vectors of 32 int16."""
    if _PMADDWD:
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_V_I32, [_V_I16, _V_I16]), "llvm.x86.avx512.pmaddw.d.512"
        )
        return builder.call(fn, [x, y])
    wide = builder.mul(builder.sext(x, ir.VectorType(_I32, _STEP)), builder.sext(y, ir.VectorType(_I32, _STEP)))
    undef = ir.Constant(wide.type, ir.Undefined)
    return builder.add(builder.shuffle_vector(wide, undef, _EVEN), builder.shuffle_vector(wide, undef, _ODD))


@intrinsic
def dot_codes(typingctx, codes, weights, i, t0, t1):
    """sum_{t0 <= t < t1} weights[t] * codes[i, t] as int64; t1 - t0 a multiple of 32, <= _BLOCK.

    ``codes`` (N, d) C-contiguous int8, ``weights`` (d,) C-contiguous int16 with
    |weights| <= 2**14; the caller guarantees the bounds.
    """
    if not (isinstance(codes, types.Array) and codes.ndim == 2 and codes.layout == "C" and codes.dtype == types.int8):
        return None
    if not (
        isinstance(weights, types.Array)
        and weights.ndim == 1
        and weights.layout == "C"
        and weights.dtype == types.int16
    ):
        return None

    def codegen(context, builder, signature, args):
        c_ty, w_ty, i_ty, a_ty, b_ty = signature.args
        c_arr = context.make_array(c_ty)(context, builder, args[0])
        w_arr = context.make_array(w_ty)(context, builder, args[1])
        row = context.cast(builder, args[2], i_ty, types.int64)
        start = context.cast(builder, args[3], a_ty, types.int64)
        stop = context.cast(builder, args[4], b_ty, types.int64)
        row_bytes = builder.extract_value(c_arr.strides, 0)
        row_ptr = builder.gep(builder.bitcast(c_arr.data, _I8.as_pointer()), [builder.mul(row, row_bytes)])
        t, (acc,), close = counted_loop(builder, start, stop, _STEP, [ir.Constant(_V_I32, [0] * _LANES)])
        c_ptr = builder.bitcast(builder.gep(row_ptr, [t]), ir.VectorType(_I8, _STEP).as_pointer())
        w_ptr = builder.bitcast(builder.gep(w_arr.data, [t]), _V_I16.as_pointer())
        pairs = _pair_products(
            builder, builder.sext(builder.load(c_ptr, align=1), _V_I16), builder.load(w_ptr, align=2)
        )
        close([builder.add(acc, pairs)])
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_I64, [_V_I64]), "llvm.vector.reduce.add.v16i64"
        )
        return builder.call(reduce, [builder.sext(acc, _V_I64)])

    return types.int64(codes, weights, i, t0, t1), codegen


@numba.njit(**JIT)
def code_sum(codes, weights, i):
    """S_i = sum_t weights[t] * codes[i, t], exact in int64 (blocks of ``_BLOCK`` columns, then the tail)."""
    d = codes.shape[1]
    body = d - d % _STEP
    s = np.int64(0)
    for t0 in range(0, body, _BLOCK):
        s += dot_codes(codes, weights, i, t0, min(t0 + _BLOCK, body))
    for t in range(body, d):
        s += np.int64(weights[t]) * np.int64(codes[i, t])
    return s


def _code_similarity_impl(codes, weights, unit, row_scale, offset, out):
    """out_i = (S_i * unit) * row_scale_i + offset (offset None: no term), S_i = ``code_sum``.

    ``row_scale`` has one entry per row, or one for all rows.  Rows are owned by one task.
    """
    n = codes.shape[0]
    per_row = row_scale.shape[0] == n
    for c in numba.prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(c * _CHUNK + _CHUNK, n)):
            a = (np.float64(code_sum(codes, weights, i)) * unit) * row_scale[i if per_row else 0]
            if offset is not None:
                a = a + offset
            out[i] = a


code_similarity = numba.njit(_code_similarity_impl, **JIT)
code_similarity_par = numba.njit(cache_twin(_code_similarity_impl, "_par"), **JIT_PARALLEL)
