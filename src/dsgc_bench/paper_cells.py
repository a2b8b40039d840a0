"""The paper's 53 published full-chain figures as cells we can re-measure and test.

Tables 1, 2, 4, 5 and 6 and the in-text recency figure of the DSGC paper (arXiv
2608.20400; the values are typed in ``paper.json``, read by ``paper``) give 53 rates, each over a known number of
runs: 15 seeds per cell, 30 for a Table 1 regime row (two templates), 60 for the recency
figure (four templates).  ``CELLS`` lists them with the runs that measure each one;
``compare`` counts our successes in those runs and tests each cell with a two-sided Fisher
exact test (``scipy.stats.fisher_exact``) of the paper's count (rate x runs, rounded)
against ours (over however many seeds we ran).  p >= 0.05 means the two counts agree within sampling error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import paper
from .grid import ENCODERS
from .runner import Condition
from .templates import CONTROLS, TARGETS, TEMPLATES

#: the smallest p at which a cell counts as agreeing with the paper
ALPHA = 0.05
#: the paper's seeds per condition
PAPER_SEEDS = 15
REGIME_TEMPLATES = {"control": CONTROLS, "target": TARGETS}


@dataclass(frozen=True)
class PaperCell:
    """One published figure: where it is, its value, and the conditions whose runs it pools."""

    source: str
    label: str
    rate: float
    conditions: tuple[Condition, ...]

    @property
    def paper_runs(self) -> int:
        """The paper's number of runs behind the figure: 15 seeds per pooled condition."""
        return PAPER_SEEDS * len(self.conditions)

    @property
    def paper_count(self) -> int:
        """The paper's number of successes: its rate times its runs, rounded."""
        return round(self.rate * self.paper_runs)


def _cell(source: str, label: str, value: tuple[float, float] | float, conditions: Iterable[Condition]) -> PaperCell:
    rate = value[0] if isinstance(value, tuple) else value
    return PaperCell(source, label, rate, tuple(conditions))


def _cells() -> tuple[PaperCell, ...]:
    cells = []
    for (enc, regime, method), v in paper.TABLE1.items():
        conds = (Condition(template=t, encoder=enc, method=method) for t in REGIME_TEMPLATES[regime])
        cells.append(_cell("Table 1", f"{enc}, {regime}, {method}", v, conds))
    for (enc, template, method), v in paper.TABLE2.items():
        cells.append(
            _cell(
                "Table 2", f"{enc}, {template}, {method}", v, [Condition(template=template, encoder=enc, method=method)]
            )
        )
    for (enc, template, lam), v in paper.TABLE4.items():
        cond = Condition(template=template, encoder=enc, method="dsgc", lambda_pi=lam)
        cells.append(_cell("Table 4", f"{enc}, {template}, DSGC, lambda_pi {lam:g}", v, [cond]))
    for (template, mult, method), v in paper.TABLE5.items():
        cond = Condition(template=template, encoder="lexical", method=method, multiplier=mult)
        cells.append(_cell("Table 5", f"lexical, {template}, {method}, M {mult:g}", v, [cond]))
    recency = (Condition(template=t, encoder="lexical", method="recency") for t in TEMPLATES)
    cells.append(_cell("Section 7 text", "lexical, all templates, recency, M 2", paper.RECENCY_ALL_TEMPLATES, recency))
    for (enc, template, blocks), v in paper.TABLE6.items():
        cond = Condition(template=template, encoder=enc, method="dsgc", total_blocks=blocks)
        cells.append(_cell("Table 6", f"{enc}, {template}, DSGC, {blocks} blocks", v, [cond]))
    return tuple(cells)


#: the 53 cells, in the paper's order (tables, then rows as printed)
CELLS: tuple[PaperCell, ...] = _cells()


def conditions(encoders: Sequence[str] = ENCODERS) -> list[Condition]:
    """Every distinct condition the cells need, for the given encoders (first-seen order)."""
    return list(dict.fromkeys(c for cell in CELLS for c in cell.conditions if c.encoder in encoders))


def _key(cond: Condition | dict[str, Any]) -> tuple:
    fields = ("template", "encoder", "method", "multiplier", "lambda_pi", "total_blocks")
    get = cond.get if isinstance(cond, dict) else lambda k: getattr(cond, k)
    return tuple(get(k) for k in fields)


def count(cell: PaperCell, records: Sequence[dict[str, Any]]) -> tuple[int, int] | None:
    """(successes, runs) of ``cell`` in ``records``; None when some of its conditions did not run."""
    wanted = {_key(c) for c in cell.conditions}
    runs = [r for r in records if _key(r) in wanted and r["honeypot"] == "medium" and r["noise"] == "none"]
    if {_key(r) for r in runs} != wanted:
        return None
    return sum(bool(r["full_chain"]) for r in runs), len(runs)


def fisher_p(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Two-sided Fisher exact p of two (successes, runs) counts."""
    from scipy.stats import fisher_exact

    table = [[a[0], a[1] - a[0]], [b[0], b[1] - b[0]]]
    return float(fisher_exact(table, alternative="two-sided").pvalue)


def compare(cell: PaperCell, records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """``cell`` against ``records``: the paper's and our (successes, runs) and the Fisher p."""
    ours = count(cell, records)
    if ours is None:
        return None
    theirs = (cell.paper_count, cell.paper_runs)
    return {"paper": list(theirs), "ours": list(ours), "p": fisher_p(theirs, ours)}
