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


MAIN = GridSuite(
    name="main",
    title="Main suite (paper Tables 1-3)",
    intro=sections.INTROS["main"],
    keys=("encoder", "template", "method"),
    conditions=grid.main_grid,
    analyze=analysis.analyze_main,
    section=sections.render_main,
    appendix=sections.calibration_parts,
    scenarios=PAPER,
)
LAMBDA = GridSuite(
    name="lambda",
    title="Propagation weight lambda_pi (paper Table 4)",
    intro=sections.INTROS["lambda"],
    keys=("encoder", "template", "method", "lambda_pi"),
    conditions=grid.lambda_grid,
    analyze=analysis.analyze_lambda,
    section=sections.render_lambda,
    scenarios=PAPER,
)
BUDGET = GridSuite(
    name="budget",
    title="Budget pressure and the recency baseline (paper Table 5)",
    intro=sections.INTROS["budget"],
    keys=("encoder", "template", "method", "multiplier"),
    conditions=grid.budget_grid,
    analyze=analysis.analyze_budget,
    section=sections.render_budget,
    scenarios=PAPER,
)
SCALING = GridSuite(
    name="scaling",
    title="Context scaling (paper Table 6 and beyond)",
    intro=sections.INTROS["scaling"],
    keys=("encoder", "template", "method", "total_blocks"),
    conditions=grid.scaling_grid,
    analyze=analysis.analyze_scaling,
    section=sections.render_scaling,
    scenarios=PAPER,
)
KHOP = GridSuite(
    name="khop",
    title="k-hop propagation: the paper's falsifiable hypothesis",
    intro=sections.INTROS["khop"],
    keys=("encoder", "template", "method", "total_blocks"),
    conditions=grid.khop_grid,
    analyze=analysis.analyze_khop,
    section=sections.render_khop,
)
GRAPH_NOISE = GridSuite(
    name="graph-noise",
    title="Imperfect dependency graphs",
    intro=sections.INTROS["graph-noise"],
    keys=("encoder", "template", "method", "noise", "noise_rate"),
    conditions=grid.graph_noise_grid,
    analyze=analysis.analyze_graph_noise,
    section=sections.render_graph_noise,
)
HONEYPOT = GridSuite(
    name="honeypot",
    title="Honeypot strength",
    intro=sections.INTROS["honeypot"],
    keys=("encoder", "template", "method", "honeypot"),
    conditions=grid.honeypot_grid,
    analyze=analysis.analyze_honeypot,
    section=sections.render_honeypot,
)
