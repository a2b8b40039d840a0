"""Benchmark metrics: per-run values and their mean / standard deviation over seeds.

Per run (fields of a raw record):
- ``full_chain``     (primary) 1 if every labelled chain block survived, else 0;
- ``prerequisites``  fraction of the chain's prerequisites (every chain block except the
                     query-facing last one) that survived;
- ``answer_correct`` 1 if the template's deterministic reader, given only the retained
                     blocks, derives the scenario's answer.

``aggregate`` groups runs and reports the mean and the sample standard deviation
(``ddof=1``, 0 for a single run), the convention that reproduces the paper's figures
(e.g. 1 success in 15 runs: 0.07 +- 0.26).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

METRICS: tuple[str, ...] = ("full_chain", "prerequisites", "answer_correct")

Record = dict[str, Any]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 when fewer than two values)."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_std needs at least one value")
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def group(records: Iterable[Record], keys: Sequence[str]) -> dict[tuple, list[Record]]:
    """Records grouped by the values of ``keys`` (groups in first-seen order)."""
    out: dict[tuple, list[Record]] = {}
    for r in records:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def aggregate(records: Iterable[Record], keys: Sequence[str]) -> list[dict[str, Any]]:
    """One cell per distinct ``keys`` value: ``n``, and ``<metric>`` / ``<metric>_std``."""
    cells = []
    for key, runs in group(records, keys).items():
        cell: dict[str, Any] = dict(zip(keys, key))
        cell["n"] = len(runs)
        for m in METRICS:
            cell[m], cell[f"{m}_std"] = mean_std([float(r[m]) for r in runs])
        cells.append(cell)
    return cells


def find_cell(cells: Iterable[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    """The one cell whose fields equal ``match`` (None when no cell or several cells match)."""
    hits = [c for c in cells if all(c.get(k) == v for k, v in match.items())]
    return hits[0] if len(hits) == 1 else None


def paired(records: Iterable[Record], keys: Sequence[str], field: str, a: Any, b: Any) -> list[tuple[Record, Record]]:
    """Pairs of runs that agree on ``keys`` and ``seed`` and have ``field`` equal to a and b."""
    by_key: dict[tuple, dict[Any, Record]] = {}
    for r in records:
        if r[field] in (a, b):
            by_key.setdefault((*(r[k] for k in keys), r["seed"]), {})[r[field]] = r
    return [(v[a], v[b]) for v in by_key.values() if a in v and b in v]
