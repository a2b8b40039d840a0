"""The DSGC paper's published figures (arXiv 2608.20400), for side-by-side tables.

Values are (mean, std) of full-chain retention over 15 seeds (regime rows: 30 runs).  The
figures are typed in ``paper.json``, one row per figure: the key fields, then mean and std
(Table 3: seed, the chain's ranks, top non-chain block, displaced block, margin).
"""

from __future__ import annotations

from typing import Any

from . import package_data

_FIGURES: dict[str, Any] = package_data.load("paper.json")


def _table(name: str) -> dict[Any, tuple[float, float]]:
    """Rows ``[*key, mean, std]`` of table ``name`` as key tuple -> (mean, std), in row order."""
    return {tuple(row[:-2]): (row[-2], row[-1]) for row in _FIGURES[name]}


#: Table 1: (encoder, regime, method) -> (mean, std)
TABLE1: dict[tuple[str, str, str], tuple[float, float]] = _table("table1")
#: Table 2: (encoder, template, method) -> (mean, std); no-graph equals similarity-only
TABLE2: dict[tuple[str, str, str], tuple[float, float]] = _table("table2")
#: Table 3: lexical profile DSGC failures: seed -> (ranks c1, c2, c3; top non-chain; displaced; margin)
TABLE3: dict[int, tuple[tuple[int, int, int], str, str, float]] = {
    seed: ((ranks[0], ranks[1], ranks[2]), top, displaced, margin)
    for seed, ranks, top, displaced, margin in _FIGURES["table3"]
}
#: Table 4: (encoder, template, lambda_pi) -> (mean, std) for DSGC
TABLE4: dict[tuple[str, str, float], tuple[float, float]] = _table("table4")
#: Table 5 (lexical): (template, multiplier, method) -> (mean, std)
TABLE5: dict[tuple[str, float, str], tuple[float, float]] = _table("table5")
#: Sliding-window (recency) baseline, lexical, M = 2.0, all four templates pooled
RECENCY_ALL_TEMPLATES: float = _FIGURES["recency_all_templates"]
#: Table 6 (DSGC): (encoder, template, total blocks) -> (mean, std)
TABLE6: dict[tuple[str, str, int], tuple[float, float]] = _table("table6")


def fmt(value: tuple[float, float] | None) -> str:
    """``0.80 +- 0.41`` style, or an em dash when the paper has no figure."""
    return "—" if value is None else f"{value[0]:.2f} ± {value[1]:.2f}"
