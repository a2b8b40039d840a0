"""The axes of the paper's suites and the grids of ``Condition`` cells built from them.

Defaults everywhere are the paper's main setting: 20 blocks, medium honeypots, M = 2.0,
tau = 0.25, lambda_pi = 1.0, one hop.  Every grid builder takes the encoders and the scenario
family (``families``); only the store sizes depend on the family: the paper family runs at
the paper's 20 and 50 blocks (``families.PAPER_SIZES``).

main         4 templates x {similarity, no_graph, dsgc}                (paper Tables 1-3)
lambda       DSGC at lambda_pi 0.5 / 1.0 / 2.0, similarity-only for reference (Table 4)
budget       M 1.0 / 1.5 / 2.0 / 3.0 / 5.0 x {similarity, no_graph, dsgc, recency} (Table 5)
scaling      20 / 50 / 200 / 1,000 / 10,000 blocks x {similarity, dsgc, dsgc_k2, dsgc_norm}
             (Table 6 and beyond)
khop         hops 1 / 2 / 3 at 20, 1,000 and 10,000 blocks (the paper's falsifiable hypothesis)
graph-noise  DSGC with true edges dropped (rate 0.1 .. 0.5) or spurious edges added from
             random blocks or from honeypots (0.1 .. 0.5 of |E|)
honeypot     easy / medium / hard honeypots x {similarity, no_graph, dsgc}
"""

from __future__ import annotations

from collections.abc import Sequence

from dsgc_fast.encoders import ENCODER_NAMES

from .families import NEUTRAL, PAPER_SIZES
from .noise import NOISE_KINDS
from .runner import Condition
from .templates import STRENGTHS, TEMPLATES

#: the paper's two encoders (``dsgc_fast.encoders``' names)
ENCODERS: tuple[str, ...] = ENCODER_NAMES
MAIN_METHODS: tuple[str, ...] = ("similarity", "no_graph", "dsgc")
LAMBDAS: tuple[float, ...] = (0.5, 1.0, 2.0)
MULTIPLIERS: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 5.0)
BUDGET_METHODS: tuple[str, ...] = ("similarity", "no_graph", "dsgc", "recency")
SIZES: tuple[int, ...] = (20, 50, 200, 1000, 10000)
SCALING_METHODS: tuple[str, ...] = ("similarity", "dsgc", "dsgc_k2", "dsgc_norm")
KHOP_METHODS: tuple[str, ...] = ("dsgc", "dsgc_k2", "dsgc_k3")
KHOP_SIZES: tuple[int, ...] = (20, 1000, 10000)
NOISE_RATES: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5)


def grid(encoders: Sequence[str], methods: Sequence[str], **axes: Sequence) -> list[Condition]:
    """Every encoder x template x method x combination of the extra ``axes``."""
    combos: list[dict] = [{}]
    for name, values in axes.items():
        combos = [{**c, name: v} for c in combos for v in values]
    return [
        Condition(template=t, encoder=e, method=m, **c)
        for e in encoders
        for t in TEMPLATES
        for m in methods
        for c in combos
    ]


def store_sizes(sizes: Sequence[int], family: str) -> tuple[int, ...]:
    """The store sizes a grid runs for ``family``: ``sizes`` for neutral, the paper's otherwise."""
    return tuple(sizes) if family == NEUTRAL else PAPER_SIZES


def main_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, MAIN_METHODS)


def lambda_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, ("similarity",)) + grid(encoders, ("dsgc",), lambda_pi=LAMBDAS)


def budget_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, BUDGET_METHODS, multiplier=MULTIPLIERS)


def scaling_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, SCALING_METHODS, total_blocks=store_sizes(SIZES, family))


def khop_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, KHOP_METHODS, total_blocks=store_sizes(KHOP_SIZES, family))


def graph_noise_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    clean = grid(encoders, ("similarity", "dsgc"))
    noisy = [c for kind in NOISE_KINDS[1:] for c in grid(encoders, ("dsgc",), noise=(kind,), noise_rate=NOISE_RATES)]
    return clean + noisy


def honeypot_grid(encoders: Sequence[str], family: str) -> list[Condition]:
    return grid(encoders, MAIN_METHODS, honeypot=STRENGTHS)
