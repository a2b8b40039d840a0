"""Imperfect dependency graphs: dropped true edges and added spurious edges.

Both perturbations draw from their own RNG stream ``default_rng([seed, stream])``, so they
are deterministic per seed, independent of the scenario's own draws, and nested across
rates (the edges dropped at rate 0.1 are also dropped at 0.2; the spurious edges added at a
smaller rate are a prefix of those added at a larger one).

- ``drop``: each true edge is removed independently with probability ``rate``.
- ``spurious_random`` / ``spurious_honeypot``: ``m`` wrong edges ``(j, i)`` are added, with
  ``m = floor(rate * |E|)`` plus one more with probability ``frac(rate * |E|)`` (so the
  expected count is ``rate * |E|``).  The dependent ``j`` is a uniformly random block
  (``random``) or a random honeypot (``honeypot``); the prerequisite ``i`` is a uniformly
  random other block; pairs already in the graph are redrawn.
"""

from __future__ import annotations

import math

import numpy as np

from .scenarios import Scenario

SPURIOUS_KINDS: tuple[str, ...] = ("spurious_random", "spurious_honeypot")
NOISE_KINDS: tuple[str, ...] = ("none", "drop", *SPURIOUS_KINDS)
_STREAM = {"drop": 1, "spurious_random": 2, "spurious_honeypot": 3}


def perturb_edges(scenario: Scenario, kind: str, rate: float) -> list[tuple[int, int]]:
    """The scenario's edges after the ``kind`` perturbation at ``rate`` (see module doc)."""
    if kind not in NOISE_KINDS:
        raise ValueError(f"noise kind must be one of {NOISE_KINDS}, got {kind!r}")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"noise rate must be in [0, 1], got {rate!r}")
    edges = list(scenario.edges)
    if kind == "none" or rate == 0.0:
        return edges
    rng = np.random.default_rng([scenario.seed, _STREAM[kind]])
    if kind == "drop":
        keep = rng.random(len(edges)) >= rate
        return [e for e, k in zip(edges, keep) if k]
    expected = rate * len(edges)
    m = math.floor(expected) + int(rng.random() < expected - math.floor(expected))
    n = scenario.n_blocks
    sources = np.arange(n) if kind == "spurious_random" else np.flatnonzero(np.array(scenario.kinds) == "honeypot")
    present = set(edges)
    while m > 0:
        j = int(sources[rng.integers(len(sources))])
        i = int(rng.integers(n))
        if i != j and (j, i) not in present:
            present.add((j, i))
            edges.append((j, i))
            m -= 1
    return edges
