"""The forms of one embedding matrix that the precision table and asv compare.

float64, float32 and float16 arrays, int8 codes with a symmetric per-row scale
(``QuantizedEmbeddings``), and float32 / float16 ``TiledEmbeddings``.
"""

from __future__ import annotations

import numpy as np

import dsgc_fast

#: the names of ``embedding_forms``, in table order
FORMS = ("float64", "float32", "float16", "int8, per-row scale", "float32, tiled", "float16, tiled")


def int8_rows(embs: np.ndarray) -> dsgc_fast.QuantizedEmbeddings:
    """Symmetric per-row int8 codes: c = round(127 e / max_t |e_t|), scale max_t |e_t| / 127."""
    top = np.abs(embs).max(axis=1).astype(np.float64)
    top[top == 0] = 1.0
    codes = np.rint(embs / (top / 127.0)[:, None].astype(embs.dtype)).astype(np.int8)
    return dsgc_fast.QuantizedEmbeddings(codes, top / 127.0)


def embedding_form(embs: np.ndarray, name: str) -> object:
    """One form of the float32 matrix ``embs`` (a name of ``FORMS``)."""
    if name == "int8, per-row scale":
        return int8_rows(embs)
    dtype = {"float64": np.float64, "float32": np.float32, "float16": np.float16}[name.split(",")[0]]
    values = embs.astype(dtype)
    return dsgc_fast.TiledEmbeddings.from_array(values) if name.endswith("tiled") else values
