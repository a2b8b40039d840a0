"""PNG figures for the reports: retention against a suite's axis, referent-session rates.

Each figure is a ``matplotlib.figure.Figure`` drawn and saved directly (no pyplot), so
importing or using this module changes no matplotlib state: not the backend, not the
current figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .runner import METHODS
from .templates import TEMPLATES

Cell = dict[str, Any]
#: overlapping series stay visible: each gets its own marker, size and dash pattern
_MARKERS = ("o", "s", "D", "^", "v", "x")
_STYLES = ("-", "--", ":", "-.")


def _label(field: str, v: Any) -> str:
    if field == "method":
        return METHODS[v].label
    return f"{v}"


def bars(cells: Sequence[Cell], methods: Sequence[str], path: Path, title: str) -> Path:
    """Full-chain retention per template (x) and method (bars), one panel per encoder."""
    encoders = list(dict.fromkeys(c["encoder"] for c in cells))
    fig = Figure(figsize=(5.5 * len(encoders), 3.6))
    axes = fig.subplots(1, len(encoders), squeeze=False, sharey=True)
    templates = [t for t in TEMPLATES if any(c["template"] == t for c in cells)]
    width = 0.8 / len(methods)
    for ax, enc in zip(axes[0], encoders):
        for k, m in enumerate(methods):
            ys = [
                next(
                    (c["full_chain"] for c in cells if c["encoder"] == enc and c["template"] == t and c["method"] == m),
                    0.0,
                )
                for t in templates
            ]
            es = [
                next(
                    (
                        c["full_chain_std"]
                        for c in cells
                        if c["encoder"] == enc and c["template"] == t and c["method"] == m
                    ),
                    0.0,
                )
                for t in templates
            ]
            xs = [i + (k - (len(methods) - 1) / 2) * width for i in range(len(templates))]
            ax.bar(xs, ys, width, yerr=es, capsize=2, label=METHODS[m].label)
        ax.set_xticks(range(len(templates)), [f"{t}\n({TEMPLATES[t].regime})" for t in templates])
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{enc} encoder")
        ax.set_ylabel("full-chain retention")
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def lines(
    cells: Sequence[Cell],
    *,
    x: str,
    series: str,
    path: Path,
    title: str,
    xlabel: str,
    where: dict[str, Any] | None = None,
    logx: bool = False,
) -> Path:
    """Retention vs ``x``, one line per ``series`` value; panels: encoder (rows) x template (cols)."""
    where = where or {}
    cells = [c for c in cells if all(c.get(k) == v for k, v in where.items())]
    encoders = list(dict.fromkeys(c["encoder"] for c in cells))
    templates = [t for t in TEMPLATES if any(c["template"] == t for c in cells)]
    fig = Figure(figsize=(3.3 * len(templates), 2.9 * len(encoders)))
    axes = fig.subplots(len(encoders), len(templates), squeeze=False, sharey=True)
    for r, enc in enumerate(encoders):
        for col, t in enumerate(templates):
            ax = axes[r][col]
            mine = [c for c in cells if c["encoder"] == enc and c["template"] == t]
            for k, s in enumerate(dict.fromkeys(c[series] for c in mine)):
                pts = sorted((c[x], c["full_chain"]) for c in mine if c[series] == s)
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker=_MARKERS[k % len(_MARKERS)],
                    linestyle=_STYLES[k % len(_STYLES)],
                    markersize=7 - k,
                    label=_label(series, s),
                )
            if logx:
                ax.set_xscale("log")
            ax.set_ylim(-0.03, 1.05)
            ax.set_title(f"{t} ({TEMPLATES[t].regime}), {enc}", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            if col == 0:
                ax.set_ylabel("full-chain retention", fontsize=8)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def referent_rates(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Orphan rate and needed-binding survival per budget, one line per variant, one row per encoder."""
    encoders = list(dict.fromkeys(r["encoder"] for r in rows))
    budgets = list(dict.fromkeys(r["budget"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    metrics = (("orphan_rate", "orphan rate"), ("needed_rate", "needed binding survived"))
    fig = Figure(figsize=(11, 3.6 * len(encoders)))
    axes = fig.subplots(len(encoders), 2, squeeze=False)
    for row, enc in enumerate(encoders):
        for col, (key, title) in enumerate(metrics):
            ax = axes[row][col]
            for k, v in enumerate(variants):
                mine = [r for r in rows if r["encoder"] == enc and r["variant"] == v]
                got = {r["budget"]: r[key] for r in mine}
                ys = [np.nan if got[b] is None else got[b] for b in budgets]
                style = "--" if mine[0]["pins"] else "-"
                ax.plot(budgets, ys, style, marker="os^Dvx"[k % 6], markersize=8 - k, label=v)
            ax.set_title(f"{title} ({enc})")
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(variants), fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    return path
