"""REPORT.md: the run overview, every claim at a glance, then each suite's section.

``write_report(out)`` renders the report from the files every suite saved into ``out`` (a
suite that has not run there is left out), so suites run one at a time accumulate into one
report, and ``dsgc-bench report`` renders it again without running anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .markdown import VERDICT, table
from .registry import REPORTED
from .suite import Section

INTRO = (
    "Reproduction of the main experiment of *When Retrieval Fails Before It Begins* (DSGC, arXiv "
    "2608.20400) and its robustness checks, with our own templates, both encoders and our kernels. "
    "The paper-facing suites (main, lambda, budget, scaling at 20 and 50 blocks) run the `paper` "
    "scenario family, a generator with the mechanisms of the paper's own (16 generic fillers drawn "
    "with replacement, the chain shuffled among all blocks, a query suffix); the suites that test "
    "our own predictions, and scaling beyond 50 blocks, run our `neutral` generator. A verdict on "
    "one of the paper's claims measures the family it ran on: \"The paper's 53 cells\" compares "
    'both families with the paper cell by cell, "What causes the paper\'s boundaries" switches the '
    "`paper` family's mechanisms off one at a time, and \"The `neutral` generator and the paper's\" "
    "says where our generator is the weaker test. Full-chain retention is mean ± sample std over "
    "seeds. Regenerate with `make reproduce` or `dsgc-bench <suite> --out DIR [--scenarios "
    "paper|neutral]`."
)


def render(sections: Sequence[Section]) -> str:
    """The report text from the suites' sections."""
    parts = [
        "# dsgc benchmark report",
        INTRO,
        table(
            ["suite", "seeds", "encoders", "impl", "runs"],
            [(s.suite, *s.overview) for s in sections if s.overview is not None],
        ),
        "## Claims and predictions at a glance",
        table(
            ["suite", "claim / prediction", "measured", "our data"],
            [(s.suite, c["claim"], c["measured"], VERDICT[c["passed"]]) for s in sections for c in s.checks],
        ),
        *(s.text for s in sections),
    ]
    return "\n\n".join(parts) + "\n"


def write_report(out: str | Path) -> tuple[Path, list[Section]]:
    """Render ``REPORT.md`` (and its figures) in ``out``; returns its path and the sections."""
    out = Path(out)
    sections = REPORTED.render(REPORTED.load(out), out)
    path = out / "REPORT.md"
    path.write_text(render(sections))
    return path, sections
