"""The token-count error table: approximate counters against o200k_base and cl100k_base.

    PYTHONPATH=src .venv/bin/python tools/token_error_table.py            # held-out half
    PYTHONPATH=src .venv/bin/python tools/token_error_table.py --half all

Needs the ``tokens`` extra.  For every sample of the corpus (``tools/token_corpus.py``; by
default the held-out half, which ``tools/fit_token_approx.py`` never sees) the relative error
``(estimate - exact) / exact`` of each counter is computed, and each category's errors are
summarized as mean, 5th and 95th percentile, largest absolute error and the share of samples
within +-15%, in Markdown.
Counters: ``approx`` (``dsgc_fast.token_approx``), and for comparison the paper's
``whitespace`` cost and ``chars/4`` (``ceil(len(text) / 4)``, a common rule of thumb).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsgc_fast import whitespace_cost  # noqa: E402
from dsgc_fast.token_approx import approx_tokens  # noqa: E402
from dsgc_fast.token_counts import encoding  # noqa: E402
from tools.token_corpus import CATEGORIES, Sample, corpus, split  # noqa: E402

#: the error bound the approximate counter is held to on prose, code and minified JSON
BOUND = 0.15

ESTIMATORS: dict[str, Callable[[str], int]] = {
    "approx": approx_tokens,
    "whitespace": whitespace_cost,
    "chars/4": lambda text: math.ceil(len(text) / 4),
}


def errors(samples: list[Sample], reference: str, estimate: Callable[[str], int]) -> dict[str, np.ndarray]:
    """Relative errors per category of ``estimate`` against the encoding ``reference``."""
    enc = encoding(reference)
    out: dict[str, list[float]] = {c: [] for c in CATEGORIES}
    for s in samples:
        exact = len(enc.encode_ordinary(s.text))
        out[s.category].append((estimate(s.text) - exact) / exact)
    return {c: np.array(v) for c, v in out.items() if v}


def table(samples: list[Sample], estimators: list[str], references: tuple[str, ...] = ("o200k_base", "cl100k_base")) -> str:
    """The Markdown table: one row per (estimator, reference, category)."""
    lines = [
        "| counter | against | category | samples | mean | p5 | p95 | max abs | within 15% |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in estimators:
        for reference in references:
            for category, e in errors(samples, reference, ESTIMATORS[name]).items():
                signed = [f"{100 * v:+.1f}%" for v in (e.mean(), np.percentile(e, 5), np.percentile(e, 95))]
                cells = [name, reference, category, str(e.size), *signed]
                cells += [f"{100 * np.abs(e).max():.1f}%", f"{100 * np.mean(np.abs(e) <= BOUND):.1f}%"]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("held-out", "train", "all"), default="held-out")
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATORS), default=list(ESTIMATORS))
    args = parser.parse_args(argv)
    samples = corpus()
    train, held_out = split(samples)
    chosen = {"held-out": held_out, "train": train, "all": samples}[args.half]
    print(f"Relative error (estimate - exact) / exact per sample, {args.half} half of tools/token_corpus.py "
          f"({len(chosen)} samples).\n")  # fmt: skip
    print(table(chosen, args.estimators))


if __name__ == "__main__":
    main()
