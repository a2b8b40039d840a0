"""The DSGC paper's published figures (arXiv 2608.20400), for side-by-side tables.

Values are (mean, std) of full-chain retention over 15 seeds (regime rows: 30 runs).
"""

from __future__ import annotations

#: Table 1: (encoder, regime, method) -> (mean, std)
TABLE1: dict[tuple[str, str, str], tuple[float, float]] = {
    **{("lexical", "control", m): (1.00, 0.00) for m in ("similarity", "no_graph", "dsgc")},
    ("lexical", "target", "similarity"): (0.03, 0.18),
    ("lexical", "target", "no_graph"): (0.03, 0.18),
    ("lexical", "target", "dsgc"): (0.90, 0.31),
    **{("sentence", "control", m): (1.00, 0.00) for m in ("similarity", "no_graph", "dsgc")},
    ("sentence", "target", "similarity"): (0.23, 0.43),
    ("sentence", "target", "no_graph"): (0.23, 0.43),
    ("sentence", "target", "dsgc"): (1.00, 0.00),
}

#: Table 2: (encoder, template, method) -> (mean, std); no-graph equals similarity-only
TABLE2: dict[tuple[str, str, str], tuple[float, float]] = {
    ("lexical", "role", "similarity"): (0.00, 0.00),
    ("lexical", "role", "dsgc"): (1.00, 0.00),
    ("lexical", "profile", "similarity"): (0.07, 0.26),
    ("lexical", "profile", "dsgc"): (0.80, 0.41),
    ("sentence", "role", "similarity"): (0.13, 0.35),
    ("sentence", "role", "dsgc"): (1.00, 0.00),
    ("sentence", "profile", "similarity"): (0.33, 0.49),
    ("sentence", "profile", "dsgc"): (1.00, 0.00),
}

#: Table 3: lexical profile DSGC failures: seed -> (ranks c1, c2, c3; top non-chain; displaced; margin)
TABLE3: dict[int, tuple[tuple[int, int, int], str, str, float]] = {
    3: ((10, 1, 2), "h1", "c1", 0.043),
    8: ((6, 1, 2), "f9", "c1", 0.007),
    14: ((6, 1, 2), "f3", "c1", 0.043),
}

#: Table 4: (encoder, template, lambda_pi) -> (mean, std) for DSGC
TABLE4: dict[tuple[str, str, float], tuple[float, float]] = {
    **{("lexical", "role", lam): (1.00, 0.00) for lam in (0.5, 1.0, 2.0)},
    ("lexical", "profile", 0.5): (0.67, 0.49),
    ("lexical", "profile", 1.0): (0.80, 0.41),
    ("lexical", "profile", 2.0): (0.87, 0.35),
    **{("sentence", t, lam): (1.00, 0.00) for t in ("role", "profile") for lam in (0.5, 1.0, 2.0)},
}

#: Table 5 (lexical): (template, multiplier, method) -> (mean, std)
TABLE5: dict[tuple[str, float, str], tuple[float, float]] = {
    ("role", 1.0, "similarity"): (0.00, 0.00),
    ("role", 1.0, "dsgc"): (0.40, 0.51),
    ("role", 2.0, "similarity"): (0.00, 0.00),
    ("role", 2.0, "dsgc"): (1.00, 0.00),
    ("role", 5.0, "similarity"): (0.27, 0.46),
    ("role", 5.0, "dsgc"): (1.00, 0.00),
    ("profile", 1.0, "similarity"): (0.00, 0.00),
    ("profile", 1.0, "dsgc"): (0.53, 0.52),
    ("profile", 2.0, "similarity"): (0.07, 0.26),
    ("profile", 2.0, "dsgc"): (0.80, 0.41),
    ("profile", 5.0, "similarity"): (0.60, 0.51),
    ("profile", 5.0, "dsgc"): (1.00, 0.00),
}

#: Sliding-window (recency) baseline, lexical, M = 2.0, all four templates pooled
RECENCY_ALL_TEMPLATES: float = 0.07

#: Table 6 (DSGC): (encoder, template, total blocks) -> (mean, std)
TABLE6: dict[tuple[str, str, int], tuple[float, float]] = {
    ("lexical", "role", 20): (1.00, 0.00),
    ("lexical", "role", 50): (0.73, 0.46),
    ("lexical", "profile", 20): (0.80, 0.41),
    ("lexical", "profile", 50): (0.33, 0.49),
    **{("sentence", t, n): (1.00, 0.00) for t in ("role", "profile") for n in (20, 50)},
}


def fmt(value: tuple[float, float] | None) -> str:
    """``0.80 +- 0.41`` style, or an em dash when the paper has no figure."""
    return "—" if value is None else f"{value[0]:.2f} ± {value[1]:.2f}"
