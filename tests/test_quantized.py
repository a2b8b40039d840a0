"""int8 ``QuantizedEmbeddings``: the exact integer equation, bit for bit with ``dsgc_ref``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
import dsgc_ref
from dsgc_fast.kernels import quantized as kernels
from dsgc_ref.equations import integer_weights, quantized_similarities

from ._cases import assert_same, examples


def _forms(rng: np.random.Generator, n: int, d: int, form: str) -> dict:
    if form == "matrix":
        return {"scale": float(rng.uniform(1e-3, 1.0))}
    if form == "row":
        return {"scale": rng.uniform(1e-3, 1.0, size=n) if n else 0.5}
    return {"scale": 1.0, "step": rng.uniform(1e-4, 1e-1, size=d), "offset": rng.normal(size=d)}


def _pair(codes: np.ndarray, kw: dict) -> tuple[dsgc_fast.QuantizedEmbeddings, dsgc_ref.QuantizedRows]:
    fast = dsgc_fast.QuantizedEmbeddings(codes, kw["scale"], step=kw.get("step"), offset=kw.get("offset"))
    ref = dsgc_ref.QuantizedRows(
        codes.tolist(),
        np.atleast_1d(kw["scale"]).tolist(),
        None if kw.get("step") is None else kw["step"].tolist(),
        None if kw.get("offset") is None else kw["offset"].tolist(),
    )
    return fast, ref


@settings(max_examples=examples(0.5), deadline=None)
@given(
    n=st.integers(0, 90),
    d=st.sampled_from([1, 7, 16, 31, 32, 33, 70]),
    form=st.sampled_from(["matrix", "row", "affine"]),
    queries=st.integers(1, 3),
    q_scale=st.sampled_from([1e-200, 1e-3, 1.0, 1e200]),
    policy=st.sampled_from(dsgc_ref.POLICIES),
    hops=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_quantized_retention_equals_the_oracle(n, d, form, queries, q_scale, policy, hops, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-128, 128, size=(n, d), dtype=np.int8)
    if n > 2:
        codes[1] = codes[0]  # a tie
        codes[2] = -128  # the extreme code
    kw = _forms(rng, n, d, form)
    q = rng.normal(size=(queries, d)) * q_scale
    costs = rng.integers(0, 9, size=n)
    edges = rng.integers(0, max(n, 1), size=(2 * n, 2)) if n else None
    budget = int(costs.sum()) // 2
    fast, ref = _pair(codes, kw)
    common = dict(policy=policy, hops=hops)
    try:
        want = dsgc_ref.retain(
            q.tolist(), ref, costs.tolist(), budget, edges=None if edges is None else edges.tolist(), **common
        )
    except ValueError as exc:  # the offset term can overflow at q_scale 1e200: both must say so
        with pytest.raises(ValueError, match="overflows"):
            dsgc_fast.retain(q, fast, costs, budget, edges=edges, **common)
        assert "overflows" in str(exc)
        return
    assert_same(dsgc_fast.retain(q, fast, costs, budget, edges=edges, **common), want)


@pytest.mark.parametrize("d", [16351, 16352, 16353, 40000])
def test_long_rows_are_summed_exactly_past_the_int32_lane_block(d):
    """A lane holds 511 steps of 32 columns; longer rows are added block by block in int64."""
    rng = np.random.default_rng(d)
    codes = np.full((3, d), -128, dtype=np.int8)
    codes[1] = 127
    codes[2] = rng.integers(-128, 128, size=d)
    weights = np.full(d, -(2**14), dtype=np.int16)
    weights[::3] = 2**14 - 1
    got = np.array([kernels.code_sum(codes, weights, i) for i in range(3)])
    assert np.array_equal(got, codes.astype(np.int64) @ weights.astype(np.int64))


def test_the_kernel_equals_the_equation_for_large_stores():
    rng = np.random.default_rng(5)
    codes = rng.integers(-128, 128, size=(40_000, 45), dtype=np.int8)
    q = rng.normal(size=45)
    embs = dsgc_fast.QuantizedEmbeddings(codes, rng.uniform(0.5, 2.0, size=40_000))
    got = dsgc_fast.retain(q, embs, np.ones(40_000), 100, policy="similarity").similarity
    want = quantized_similarities(q.tolist(), codes[:300].tolist(), embs.scale[:300].tolist())
    assert got[:300].tolist() == want


def test_integer_weights_put_the_largest_in_2_13_to_2_14_with_a_power_of_two_unit():
    w, unit = integer_weights([0.5, -0.25, 1e-9, 0.0])
    assert w == [2**13, -(2**12), 0, 0] and unit == 2.0**-14
    w, _ = integer_weights([1.0 - 2.0**-20, 0.1])  # just below a power of two: rounds up to 2**14
    assert w[0] == 2**14
    assert integer_weights([0.0, 0.0]) == ([0, 0], 1.0)
    w, unit = integer_weights([3.0, 1.0])  # 3 = 0.75 * 2**2: k = 12
    assert w == [3 * 2**12, 2**12] and unit == 2.0**-12


def test_portable_vector_path_gives_the_same_sums(tmp_path):
    """Without AVX-512BW (here: Numba told to compile for a named CPU) the pair products
    are plain vector IR; the sums must be the same integers."""
    script = (
        "import numpy as np\n"
        "from dsgc_fast.kernels import quantized as k\n"
        "assert not k._PMADDWD\n"
        "rng = np.random.default_rng(1)\n"
        "c = rng.integers(-128, 128, size=(9, 1000), dtype=np.int8)\n"
        "w = rng.integers(-2**14, 2**14 + 1, size=1000).astype(np.int16)\n"
        "print([int(k.code_sum(c, w, i)) for i in range(9)])\n"
    )
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    rng = np.random.default_rng(1)
    c = rng.integers(-128, 128, size=(9, 1000), dtype=np.int8)
    w = rng.integers(-(2**14), 2**14 + 1, size=1000).astype(np.int16)
    assert out.stdout.strip() == str((c.astype(np.int64) @ w.astype(np.int64)).tolist())


def test_from_ranges_stands_for_the_middle_of_each_sentence_transformers_bucket():
    st_quant = pytest.importorskip("sentence_transformers.quantization")
    rng = np.random.default_rng(6)
    embs = rng.normal(size=(500, 24)).astype(np.float32)
    ranges = np.stack([embs.min(axis=0), embs.max(axis=0)])
    codes = st_quant.quantize_embeddings(embs, "int8", ranges=ranges)
    q = dsgc_fast.QuantizedEmbeddings.from_ranges(codes, ranges)
    steps = q.step
    assert np.all(np.abs(q.dequantize() - embs) <= 0.5 * steps + 1e-6)
    ref = dsgc_ref.QuantizedRows(codes.tolist(), [1.0], q.step.tolist(), q.offset.tolist())
    query = rng.normal(size=24)
    got = dsgc_fast.retain(query, q, np.ones(500), 50, policy="similarity").similarity
    assert got.tolist() == dsgc_ref.retain(query.tolist(), ref, [1] * 500, 50, policy="similarity").similarity


def test_codes_are_copied_and_read_only_or_strided_input_works():
    rng = np.random.default_rng(7)
    base = rng.integers(-128, 128, size=(40, 64), dtype=np.int8)
    view = base[::2, ::2]
    view.flags.writeable = False
    scale = np.full(20, 0.1)
    embs = dsgc_fast.QuantizedEmbeddings(view, scale)
    before = dsgc_fast.retain(np.ones(32), embs, np.ones(20), 5).similarity
    base[:] = 0
    scale[:] = 9.0
    assert np.array_equal(dsgc_fast.retain(np.ones(32), embs, np.ones(20), 5).similarity, before)
    assert not embs.codes.flags.writeable and embs.codes.flags.c_contiguous


@pytest.mark.parametrize(
    ("codes", "kw", "exc", "fragment"),
    [
        (np.ones((3, 4), dtype=np.int16), {}, TypeError, "codes must be an int8 array"),
        (np.ones((3, 4)), {}, TypeError, "codes must be an int8 array"),
        (np.ones(4, dtype=np.int8), {}, ValueError, "codes must be 2-D"),
        (np.ones((3, 0), dtype=np.int8), {}, ValueError, "codes must be 2-D"),
        (np.ones((3, 4), dtype=np.int8), {"scale": 0.0}, ValueError, "scale must be finite and > 0"),
        (np.ones((3, 4), dtype=np.int8), {"scale": np.nan}, ValueError, "scale must be finite and > 0"),
        (np.ones((3, 4), dtype=np.int8), {"scale": [1.0, 2.0]}, ValueError, r"scale must have shape \(3,\)"),
        (np.ones((3, 4), dtype=np.int8), {"scale": [1.0, np.inf, 1.0]}, ValueError, "scale must be finite"),
        (np.ones((3, 4), dtype=np.int8), {"step": [1.0, 1.0, 1.0]}, ValueError, r"step must have shape \(4,\)"),
        (np.ones((3, 4), dtype=np.int8), {"step": [1.0, -1.0, 1.0, 1.0]}, ValueError, "step must be finite and > 0"),
        (np.ones((3, 4), dtype=np.int8), {"offset": [0.0, np.nan, 0, 0]}, ValueError, "offset must be finite"),
    ],
)
def test_bad_quantized_input_is_rejected(codes, kw, exc, fragment):
    with pytest.raises(exc, match=fragment):
        dsgc_fast.QuantizedEmbeddings(codes, kw.get("scale", 1.0), step=kw.get("step"), offset=kw.get("offset"))


def test_bad_ranges_and_dimension_are_rejected():
    codes = np.zeros((2, 3), dtype=np.int8)
    with pytest.raises(ValueError, match="ranges must have shape"):
        dsgc_fast.QuantizedEmbeddings.from_ranges(codes, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="lo <= hi"):
        dsgc_fast.QuantizedEmbeddings.from_ranges(codes, [[1, 1, 1], [0, 2, 2]])
    with pytest.raises(ValueError, match="finite"):
        dsgc_fast.QuantizedEmbeddings.from_ranges(codes, [[0, 0, 0], [1, 1, 1e300]])
    with pytest.raises(ValueError, match="block_embs has d = 3 but query_emb has d = 2"):
        dsgc_fast.retain(np.ones(2), dsgc_fast.QuantizedEmbeddings(codes), np.ones(2), 1)
    with pytest.raises(ValueError, match="outside int8"):
        dsgc_ref.retain([1.0], dsgc_ref.QuantizedRows([[200]]), [1], 1)
