"""Scenario families: the generators a suite's memory stores come from.

- ``paper`` (``paper_family.generate``): a generator with the mechanisms of the DSGC paper's
  own: ``random.Random`` draws from four values per slot and eight honeypots per strength, a
  pool of 16 generic fillers drawn *with replacement* (identical copies in one store), chain,
  honeypots and fillers shuffled together, every query ending in " Answer yes or no.".
- ``neutral`` (``scenarios.generate``): our first generator: NumPy draws, 12,000 distinct
  fillers (no copies; each ends with its own note number), chain blocks in upstream order
  (c1 the oldest), no suffix.

The paper-facing suites (main, lambda, budget, scaling at the paper's 20 and 50 blocks) run
the ``paper`` family by default; the suites that test our own predictions, the ``neutral``
one.  A family's files are named by ``file_stem``: the neutral family keeps the names its
files had before families existed (``raw-main.json``), any other family adds its name
(``raw-main-paper.json``) and records it in ``tag``, a top-level ``"scenarios"`` field of
its raw and summary files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from . import paper_family, scenarios
from .scenarios import Scenario

PAPER = "paper"
NEUTRAL = "neutral"
#: every family, the paper-facing one first
FAMILIES: tuple[str, ...] = (PAPER, NEUTRAL)
#: family -> its generator, called as ``generate(template, seed, total_blocks=, honeypot=)``
GENERATORS: dict[str, Callable[..., Scenario]] = {PAPER: paper_family.generate, NEUTRAL: scenarios.generate}
#: the paper family runs at the paper's store sizes: its 16-sentence pool holds every filler
#: at 50 blocks already, so larger stores only add copies
PAPER_SIZES: tuple[int, ...] = (20, 50)


def check(family: str) -> str:
    """``family`` if it names a family, else a ValueError."""
    if family not in GENERATORS:
        raise ValueError(f"scenarios must be one of {FAMILIES}, got {family!r}")
    return family


def file_stem(name: str, family: str) -> str:
    """The stem of a suite's files: ``name`` for the neutral family, ``name-family`` otherwise."""
    return name if check(family) == NEUTRAL else f"{name}-{family}"


def tag(family: str) -> dict[str, Any]:
    """The top-level field that records ``family`` in a suite's files (none for neutral)."""
    return {} if check(family) == NEUTRAL else {"scenarios": family}


def titled(title: str, family: str) -> str:
    """A section title naming its family (neutral sections keep their plain titles)."""
    return title if check(family) == NEUTRAL else f"{title}, `{family}` scenarios"


S = TypeVar("S", bound="HasFamily")


class HasFamily:
    """What a suite with a ``scenarios`` field (a frozen dataclass with ``name``) gains from it."""

    name: str
    scenarios: str

    @property
    def stem(self) -> str:
        """The stem of its file names (``file_stem``)."""
        return file_stem(self.name, self.scenarios)

    def with_scenarios(self: S, family: str) -> S:
        """The same suite on the stores of ``family``."""
        return replace(self, scenarios=check(family))


def with_scenarios(suite: Any, family: str) -> Any:
    """``suite`` running the ``family`` scenarios; a suite without families raises ValueError."""
    if not hasattr(suite, "with_scenarios"):
        raise ValueError(f"suite {suite.name!r} has no scenario family")
    return suite.with_scenarios(check(family))
