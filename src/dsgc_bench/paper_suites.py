"""The paper's main experiment and its robustness pack: seven grid suites.

A ``GridSuite`` builds a grid of ``Condition`` cells (``grid.py``), runs each cell on every
seed (``runner.run``) on the scenarios of its family (``families``), aggregates the records
per cell (``metrics.aggregate``), analyzes them (``analysis.analyze_<suite>``) and renders
its section (``sections.render_<suite>``).  Files: ``raw-<stem>.json`` (every run with its
trace) and ``summary-<stem>.json`` (seeds, encoders, engine, cells, analysis, checks), the
stem being the suite's name plus its family (``families.file_stem``).  The paper-facing
suites run the ``paper`` family, the others the ``neutral`` one; ``with_scenarios`` switches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import analysis, families, grid, runner, sections
from .families import NEUTRAL, PAPER, HasFamily
from .markdown import checks_table
from .metrics import Record, aggregate
from .runner import Condition
from .suite import RunConfig, Section, read_json, write_json

Cell = dict[str, Any]
Summary = dict[str, Any]


@dataclass(frozen=True)
class GridSuite(HasFamily):
    """A named grid of conditions; ``keys`` are the condition fields its cells group by.

    ``scenarios`` is the family its stores come from; ``intro`` opens the suite's report
    section; ``appendix(family)`` gives the blocks that follow its claims.
    """

    name: str
    title: str
    intro: str
    keys: tuple[str, ...]
    conditions: Callable[[Sequence[str], str], list[Condition]]
    analyze: Callable[[Sequence[Record], Sequence[Cell]], tuple[dict, list]]
    section: Callable[[Summary, Path], list[str]]
    appendix: Callable[[str], Sequence[str]] = lambda family: ()
    scenarios: str = NEUTRAL

    def build(self, config: RunConfig) -> list[Condition]:
        return self.conditions(config.encoders, self.scenarios)

    def run(self, plan: list[Condition], config: RunConfig) -> dict[str, Any]:
        from tqdm import tqdm

        total = len(plan) * len(config.seeds)
        with tqdm(total=total, desc=self.name, unit="run", disable=not config.progress, leave=False) as bar:
            records = runner.run(
                plan,
                config.seeds,
                config.encodings,
                impl=config.impl,
                on_run=bar.update,
                generator=families.GENERATORS[self.scenarios],
            )
        meta = {"suite": self.name, **families.tag(self.scenarios), "seeds": list(config.seeds)}
        return {**meta, "encoders": list(config.encoders), "impl": config.impl, "records": records}

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> Summary:
        cells = aggregate(raw["records"], ("regime", *self.keys))
        found, checks = self.analyze(raw["records"], cells)
        meta = {k: raw[k] for k in ("suite", "scenarios", "seeds", "encoders", "impl") if k in raw}
        return {**meta, "title": self.title, "cells": cells, "analysis": found, "checks": checks}

    def render(self, summary: Summary, out: Path) -> list[Section]:
        (out / "plots").mkdir(parents=True, exist_ok=True)
        intro = f"{self.intro}\n\n{sections.FAMILY_NOTES[self.scenarios]}"
        parts = (intro, *self.section(summary, out), checks_table(summary["checks"]), *self.appendix(self.scenarios))
        runs = sum(c["n"] for c in summary["cells"])
        overview = (len(summary["seeds"]), ", ".join(summary["encoders"]), summary["impl"], runs)
        title = families.titled(self.title, self.scenarios)
        return [Section(self.stem, title, parts, tuple(summary["checks"]), overview)]

    def save(self, out: Path, raw: dict[str, Any], summary: Summary) -> None:
        write_json(out / f"raw-{self.stem}.json", raw)
        write_json(out / f"summary-{self.stem}.json", summary)

    def load(self, out: Path) -> Summary | None:
        return read_json(out / f"summary-{self.stem}.json")


def _grid_suite(
    name: str,
    title: str,
    keys: tuple[str, ...],
    grid_of: Callable[[Sequence[str], str], list[Condition]],
    analyze: Callable[[Sequence[Record], Sequence[Cell]], tuple[dict, list]],
    section: Callable[[Summary, Path], list[str]],
    scenarios: str = NEUTRAL,
    appendix: Callable[[str], Sequence[str]] = lambda family: (),
) -> GridSuite:
    """A grid suite whose cells group by encoder, template, method and ``keys``; its intro is
    ``sections.INTROS[name]``."""
    return GridSuite(
        name, title, sections.INTROS[name], ("encoder", "template", "method", *keys), grid_of, analyze, section,
        appendix, scenarios,
    )  # fmt: skip


#: the suites by (name, title, keys beyond encoder/template/method, grid, analysis, section, family)
MAIN = _grid_suite(
    "main", "Main suite (paper Tables 1-3)", (), grid.main_grid, analysis.analyze_main, sections.render_main, PAPER,
    sections.calibration_parts,
)  # fmt: skip
LAMBDA, BUDGET, SCALING, KHOP, GRAPH_NOISE, HONEYPOT = (
    _grid_suite(*row)
    for row in (
        ("lambda", "Propagation weight lambda_pi (paper Table 4)", ("lambda_pi",), grid.lambda_grid,
         analysis.analyze_lambda, sections.render_lambda, PAPER),
        ("budget", "Budget pressure and the recency baseline (paper Table 5)", ("multiplier",), grid.budget_grid,
         analysis.analyze_budget, sections.render_budget, PAPER),
        ("scaling", "Context scaling (paper Table 6 and beyond)", ("total_blocks",), grid.scaling_grid,
         analysis.analyze_scaling, sections.render_scaling, PAPER),
        ("khop", "k-hop propagation: the paper's falsifiable hypothesis", ("total_blocks",), grid.khop_grid,
         analysis.analyze_khop, sections.render_khop),
        ("graph-noise", "Imperfect dependency graphs", ("noise", "noise_rate"), grid.graph_noise_grid,
         analysis.analyze_graph_noise, sections.render_graph_noise),
        ("honeypot", "Honeypot strength", ("honeypot",), grid.honeypot_grid, analysis.analyze_honeypot,
         sections.render_honeypot),
    )
)  # fmt: skip
