"""PNG figures of the session suites (BFCL replay, long-range facts): recall per policy.

As in ``plots``, every figure is a ``matplotlib.figure.Figure`` saved directly (no pyplot),
so drawing changes no matplotlib state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

#: a policy's figures by split (or variant), e.g. {"base": 0.86, "long_context": 0.67, "pooled": 0.77}
Bars = Mapping[str, Mapping[str, float]]


def grouped_bars(
    panels: Mapping[str, Bars],
    groups: Sequence[str],
    path: Path,
    *,
    ylabel: str,
    ylim: tuple[float, float] = (0.0, 1.05),
) -> Path:
    """One panel per key of ``panels`` (its title); in each, a group of bars per policy (x)
    with one bar per entry of ``groups``.  Values outside ``ylim`` are drawn at its edge and
    labelled with their value."""
    titles = list(panels)
    cols = min(2, len(titles))
    rows = -(-len(titles) // cols)
    fig = Figure(figsize=(6.4 * cols, 3.9 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(titles) :]:
        ax.set_visible(False)
    width = 0.8 / len(groups)
    for ax, title in zip(axes.flat, titles):
        policies = list(panels[title])
        for k, group in enumerate(groups):
            ys = np.array([panels[title][p].get(group, np.nan) for p in policies], dtype=float)
            xs = np.arange(len(policies)) + (k - (len(groups) - 1) / 2) * width
            shown = np.clip(ys, *ylim)
            ax.bar(xs, shown, width, label=group)
            for x, y, s in zip(xs, ys, shown):
                if np.isfinite(y) and y != s:
                    ax.annotate(
                        f"{y:.1f}", (x, s), ha="center", va="bottom" if s > 0 else "top", fontsize=5, rotation=90
                    )
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.set_xticks(range(len(policies)), policies, rotation=35, ha="right", fontsize=7)
        ax.set_ylim(*ylim)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def budget_lines(panels: Mapping[str, Mapping[str, Mapping[float, float]]], path: Path, *, ylabel: str) -> Path:
    """One panel per key of ``panels`` (its title); in each, one line per policy over the
    budget fractions (x, in percent of the history)."""
    titles = list(panels)
    cols = min(2, len(titles))
    rows = -(-len(titles) // cols)
    fig = Figure(figsize=(5.2 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    for ax in axes.flat[len(titles) :]:
        ax.set_visible(False)
    for ax, title in zip(axes.flat, titles):
        for k, (policy, points) in enumerate(panels[title].items()):
            xs = sorted(points)
            ax.plot(
                [100 * x for x in xs],
                [points[x] for x in xs],
                marker="os^Dvx*"[k % 7],
                linestyle=("-", "--", ":", "-.")[k % 4],
                markersize=7 - 0.6 * k,
                label=policy,
            )
        ax.set_ylim(-0.03, 1.05)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("budget (% of the history)", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
