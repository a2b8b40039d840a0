"""The token-count error table: approximate counters against o200k_base and cl100k_base.

    PYTHONPATH=src .venv/bin/python tools/token_error_table.py            # held-out half
    PYTHONPATH=src .venv/bin/python tools/token_error_table.py --half all
    PYTHONPATH=src .venv/bin/python tools/token_error_table.py --write-sample tests/data/token_sample.json

Needs the ``tokens`` extra.  For every sample of the corpus (``tools/token_corpus.py``; by
default the held-out half, which ``tools/fit_token_approx.py`` never sees) the relative error
``(estimate - exact) / exact`` of each counter is computed, and each category's errors are
summarized as mean, 5th and 95th percentile, largest absolute error and the share of samples
within +-15%, in Markdown.
Counters: ``approx`` (``dsgc_fast.memory.token_approx``), and for comparison the paper's
``whitespace`` cost and ``chars/4`` (``ceil(len(text) / 4)``, a common rule of thumb).

Two stress categories are generated here, not fitted on: ``whitespace`` (long runs of
spaces, line breaks, tabs, CRLF, no-break and wide spaces, and runs that alternate) and
``rare scripts`` (words of random letters of scripts the tables were not fitted on, and of
the fitted ones).  On them the counter is held to within 15% or an over-count
(``STRESS_FLOOR``): an under-count would let a budget send more tokens than it allows.

``--write-sample`` stores the fixed sample ``tests/test_tokens.py`` holds the approximate
counter to: held-out prose, code and JSON written for or by this project (no standard-library
text), each with its o200k_base count.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsgc_fast import whitespace_cost
from dsgc_fast.memory.token_approx import approx_tokens
from dsgc_fast.memory.token_counts import encoding
from tools.token_corpus import CATEGORIES, Sample, corpus, split

#: the error bound the approximate counter is held to on prose, code and minified JSON
BOUND = 0.15
#: on the stress categories, the lowest estimate / exact ratio allowed (over-counts are allowed)
STRESS_FLOOR = 1 - BOUND
#: the generated categories (``stress_samples``)
STRESS_CATEGORIES = ("whitespace", "rare scripts")
#: whitespace units, repeated to make the ``whitespace`` samples
WHITESPACE_UNITS = (" ", "\n", "\t", "\r\n", "\n\n", " \n\t", "  \n", " \t", "\n    ", "\u00a0", "\u3000")
#: (name, first, last code point) of letter blocks for the ``rare scripts`` samples
SCRIPT_BLOCKS = (
    ("armenian", 0x0531, 0x0587), ("georgian", 0x10D0, 0x10FA), ("ethiopic", 0x1200, 0x135A),
    ("tibetan", 0x0F40, 0x0F6C), ("cherokee", 0x13A0, 0x13F4), ("sinhala", 0x0D85, 0x0DC6),
    ("khmer", 0x1780, 0x17B3), ("myanmar", 0x1000, 0x102A), ("mongolian", 0x1820, 0x1877),
    ("syriac", 0x0710, 0x072F), ("thaana", 0x0780, 0x07A5), ("tamil", 0x0B85, 0x0BB9),
    ("bengali", 0x0985, 0x09B9), ("runic", 0x16A0, 0x16EA), ("cuneiform", 0x12000, 0x1236E),
    ("gothic", 0x10330, 0x1034A),
)  # fmt: skip


def stress_samples(seed: int = 0) -> list[Sample]:
    """The generated ``whitespace`` and ``rare scripts`` samples (module docstring)."""
    rng = random.Random(seed)
    out = [
        Sample("whitespace", f"ws:{unit!r}x{n}", f"a{unit * n}b") for unit in WHITESPACE_UNITS for n in (10, 100, 2000)
    ]
    for name, first, last in SCRIPT_BLOCKS:
        letters = [chr(c) for c in range(first, last + 1) if unicodedata.category(chr(c)).startswith("L")]
        words = ("".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(200))
        out.append(Sample("rare scripts", f"script:{name}", " ".join(words)))
    return out


ESTIMATORS: dict[str, Callable[[str], int]] = {
    "approx": approx_tokens,
    "whitespace": whitespace_cost,
    "chars/4": lambda text: math.ceil(len(text) / 4),
}


def errors(samples: list[Sample], reference: str, estimate: Callable[[str], int]) -> dict[str, np.ndarray]:
    """Relative errors per category of ``estimate`` against the encoding ``reference``."""
    enc = encoding(reference)
    out: dict[str, list[float]] = {c: [] for c in (*CATEGORIES, *STRESS_CATEGORIES)}
    for s in samples:
        exact = len(enc.encode_ordinary(s.text))
        out[s.category].append((estimate(s.text) - exact) / exact)
    return {c: np.array(v) for c, v in out.items() if v}


def table(
    samples: list[Sample], estimators: list[str], references: tuple[str, ...] = ("o200k_base", "cl100k_base")
) -> str:
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


#: samples per category in the fixed test sample
SAMPLE_SIZE = 12


def fixed_sample(held_out: list[Sample]) -> list[dict[str, object]]:
    """Held-out prose, code and JSON of this project's own text (every k-th, the sources
    interleaved), each with its o200k_base count."""
    enc = encoding("o200k_base")
    out = []
    for category in ("prose", "code", "json"):
        groups: dict[str, list[Sample]] = {}
        for s in held_out:
            if s.category == category and not s.source.startswith("stdlib"):
                groups.setdefault(s.source.rpartition(":")[0], []).append(s)
        mixed = [s for layer in itertools.zip_longest(*groups.values()) for s in layer if s is not None]
        for s in mixed[:: max(1, len(mixed) // SAMPLE_SIZE)][:SAMPLE_SIZE]:
            out.append(
                {
                    "category": category,
                    "source": s.source,
                    "text": s.text,
                    "o200k_base": len(enc.encode_ordinary(s.text)),
                }
            )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("held-out", "train", "all"), default="held-out")
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATORS), default=list(ESTIMATORS))
    parser.add_argument("--write-sample", metavar="PATH", help="write the fixed test sample as JSON and stop")
    args = parser.parse_args(argv)
    samples = corpus()
    train, held_out = split(samples)
    if args.write_sample:
        Path(args.write_sample).write_text(
            json.dumps(fixed_sample(held_out), ensure_ascii=False, indent=1) + "\n", "utf-8"
        )
        return
    chosen = {"held-out": held_out, "train": train, "all": samples}[args.half] + stress_samples()
    print(f"Relative error (estimate - exact) / exact per sample, {args.half} half of tools/token_corpus.py "
          f"and the generated stress categories ({len(chosen)} samples).\n")  # fmt: skip
    print(table(chosen, args.estimators))


if __name__ == "__main__":
    main()
