"""Fit the tables of ``dsgc_fast.memory.token_approx`` to o200k_base on the training half of the corpus.

    PYTHONPATH=src .venv/bin/python tools/fit_token_approx.py            # print the tables
    PYTHONPATH=src .venv/bin/python tools/fit_token_approx.py --write    # write src/dsgc_fast/memory/token_approx_tables.json

Needs the ``tokens`` extra (the exact encoder) and SciPy (``nnls``).  Every piece of every
training sample (``tools/token_corpus.py``) is encoded on its own, which is exact because the
encoder merges only inside pieces, and grouped by ``piece_class``; then, per class:

word kinds, punctuation  ``cost[n] = (sum of counts at length n + M * line(n)) / (pieces at
                         length n + M)``: the mean count at each length, shrunk towards the
                         class's least-squares line ``line(n) = a + b * n`` where pieces are
                         few (M pseudo-pieces), for lengths 1..``WORD_LENGTHS`` (words) and
                         1..``PUNCT_LENGTHS`` (punctuation); longer pieces scale the last entry
non-ASCII words          ``LETTER_COST``: non-negative least squares of a word's count on its
                         letters per script; a script without training letters gets the
                         highest fitted rate (over-counting is the safe side of a budget).
                         The ``other`` group's rate is written but not used: a letter of a
                         rare script costs its UTF-8 bytes (``token_approx.letter_cost``)
symbols                  ``SYMBOL_COST_PER_BYTE``: least squares through the origin on UTF-8 bytes
runs of one character    ``REPEAT_RUN``: the run length per token, from a grid, by least squares
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsgc_fast.memory import token_approx  # noqa: E402
from dsgc_fast.memory.token_counts import encoding  # noqa: E402
from tools.token_corpus import corpus, split  # noqa: E402

WORD_LENGTHS = 16
PUNCT_LENGTHS = 12
#: pseudo-pieces of the shrinkage towards a class's line
M = 20
REPEAT_GRID = (8, 16, 24, 32, 48, 64, 80, 96, 128)
TABLES = ROOT / "src" / "dsgc_fast" / "memory" / token_approx.TABLES_FILE


def piece_rows(samples) -> dict[str, list[tuple[object, int]]]:
    """``class -> [(size, o200k count)]`` over every piece of ``samples``."""
    enc = encoding("o200k_base")
    counts: dict[str, int] = {}
    rows: dict[str, list[tuple[object, int]]] = collections.defaultdict(list)
    for sample in samples:
        text = sample.text
        for match in token_approx.piece_pattern().finditer(text):
            piece = match.group()
            if piece not in counts:
                counts[piece] = len(enc.encode_ordinary(piece))
            start = match.start()
            kind, size = token_approx.piece_class(piece, start > 0 and text[start - 1].isalnum())
            rows[kind].append((size, counts[piece]))
    return rows


def length_table(rows: list[tuple[object, int]], lengths: int) -> tuple[float, ...]:
    """Shrunk mean count per length 1..``lengths`` (the line is fitted on every length)."""
    n = np.array([size for size, _ in rows], dtype=float)
    t = np.array([count for _, count in rows], dtype=float)
    a, b = np.linalg.lstsq(np.column_stack([np.ones_like(n), n]), t, rcond=None)[0]
    table = []
    for length in range(1, lengths + 1):
        at = t[n == length]
        table.append(round(float((at.sum() + M * (a + b * length)) / (at.size + M)), 2))
    return tuple(max(1.0, v) for v in table)


def fit(rows: dict[str, list[tuple[object, int]]]) -> dict[str, object]:
    from scipy.optimize import nnls

    scripts = token_approx.SCRIPTS
    words = rows.get("script", [])
    x = np.array(
        [[sum(token_approx.script_of(c) == s for c in letters) for s in scripts] for letters, _ in words], dtype=float
    )
    rates = nnls(x, np.array([count for _, count in words], dtype=float))[0] if words else np.ones(len(scripts))
    seen = x.sum(axis=0) > 0 if words else np.zeros(len(scripts), dtype=bool)
    rates[~seen] = rates[seen].max() if seen.any() else 1.0  # unseen scripts: the dearest seen rate
    symbols = rows.get("symbol", [])
    b = np.array([size for size, _ in symbols], dtype=float)
    c = np.array([count for _, count in symbols], dtype=float)
    punct = length_table(rows["punct"], PUNCT_LENGTHS)
    runs = rows.get("runs", [])

    def runs_error(run: int) -> float:
        error = 0.0
        for (long, rest), count in runs:
            cost = sum(math.ceil(r / run) for r in long) + (token_approx.length_cost(punct, rest) if rest else 0.0)
            error += (cost - count) ** 2
        return error

    repeat_run = min(REPEAT_GRID, key=runs_error)
    return {
        "reference": "o200k_base",
        "fitted_by": "tools/fit_token_approx.py on the training half of tools/token_corpus.py",
        "word_cost": {
            kind: length_table(rows[kind], WORD_LENGTHS) for kind in token_approx.WORD_KINDS if rows.get(kind)
        },
        "punct_cost": punct,
        "letter_cost": {s: round(float(r), 3) for s, r in zip(scripts, rates)},
        "symbol_cost_per_byte": round(float(b @ c / (b @ b)), 3) if b.size else 0.5,
        "repeat_run": repeat_run,
    }


def render(tables: dict[str, object]) -> str:
    """The tables as the JSON text of ``token_approx_tables.json`` (one table row a line)."""
    lines = ["{"]
    items = list(tables.items())
    for k, (key, value) in enumerate(items):
        comma = "," if k < len(items) - 1 else ""
        if isinstance(value, dict):
            rows = [f"    {json.dumps(name)}: {json.dumps(v)}" for name, v in value.items()]
            lines.append(f"  {json.dumps(key)}: {{\n" + ",\n".join(rows) + f"\n  }}{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "\n".join(lines) + "\n}\n"


def fitted_tables() -> str:
    train, _ = split(corpus())
    return render(fit(piece_rows(train)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {TABLES.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    text = fitted_tables()
    if not args.write:
        print(text, end="")
        return
    TABLES.write_text(text, "utf-8")
    print(f"wrote {TABLES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
