"""PNG figures for the report (matplotlib, Agg backend): retention against a suite's axis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .runner import METHODS  # noqa: E402
from .templates import TEMPLATES  # noqa: E402

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
    fig, axes = plt.subplots(1, len(encoders), figsize=(5.5 * len(encoders), 3.6), squeeze=False, sharey=True)
    templates = [t for t in TEMPLATES if any(c["template"] == t for c in cells)]
    width = 0.8 / len(methods)
    for ax, enc in zip(axes[0], encoders):
        for k, m in enumerate(methods):
            ys = [next((c["full_chain"] for c in cells if c["encoder"] == enc and c["template"] == t and c["method"] == m), 0.0) for t in templates]
            es = [next((c["full_chain_std"] for c in cells if c["encoder"] == enc and c["template"] == t and c["method"] == m), 0.0) for t in templates]
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
    plt.close(fig)
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
    fig, axes = plt.subplots(
        len(encoders), len(templates), figsize=(3.3 * len(templates), 2.9 * len(encoders)), squeeze=False, sharey=True
    )
    for r, enc in enumerate(encoders):
        for col, t in enumerate(templates):
            ax = axes[r][col]
            mine = [c for c in cells if c["encoder"] == enc and c["template"] == t]
            for k, s in enumerate(dict.fromkeys(c[series] for c in mine)):
                pts = sorted((c[x], c["full_chain"]) for c in mine if c[series] == s)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=_MARKERS[k % len(_MARKERS)],
                        linestyle=_STYLES[k % len(_STYLES)], markersize=7 - k, label=_label(series, s))
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
    plt.close(fig)
    return path
