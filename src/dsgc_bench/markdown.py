"""Markdown building blocks of the reports: tables and the verdicts of checked claims."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: how a check's ``passed`` (True, False, None) reads in a report
VERDICT: dict[bool | None, str] = {True: "supported", False: "**not supported**", None: "not run"}


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(out)


def checks_table(checks: Sequence[dict[str, Any]]) -> str:
    """The claims of one suite with the measured value and the verdict ("" when it has none)."""
    rows = [(c["claim"], c["measured"], VERDICT[c["passed"]]) for c in checks]
    return "Claims and predictions:\n\n" + table(["claim / prediction", "measured", "our data"], rows) if rows else ""


def image(out: Path, path: Path, alt: str) -> str:
    """A Markdown image of the figure at ``path``, linked relative to the report folder ``out``."""
    return f"![{alt}]({path.relative_to(out).as_posix()})"
