"""The four benchmark templates (our own sentences): two controls and two targets.

Each template is a query pattern, a chain of fact patterns (upstream first: ``c1 .. ck``,
edge ``(c_{t+1}, c_t)`` meaning c_{t+1} depends on c_t), value pools for the slots, honeypot
sentences in three strengths and a verdict that turns the chain's facts into the answer.

- controls (depth 2, 4 honeypots): every chain block names the query's entity and shares its
  decisive words, so similarity alone keeps the chain;
- targets (depth 3, 2 honeypots): the middle block ``c2`` shares no word with the query;
  in *role* ``c1`` still names the user and the backup, in *profile* ``c1`` shares only the
  service identifier.

Honeypots share the query's decisive vocabulary but never complete the chain: they speak
about other entities (medium), add the query's own entity or a rule for another clearance /
profile (hard: near-confounders that still leave the answer unique), or share a single
decisive word (easy).  ``{other_<slot>}`` in a honeypot is a pool value the chain does not
use; ``{<slot>}`` is the chain's value.  The calibration that led to these sentences is in
``calibration.py``.

The sentences of both scenario families (this neutral one and ``paper_templates``) are data,
in ``templates.json`` (``{family: {suffix, grants, templates: [...]}}``, the paper family with
its ``fillers``); ``family`` builds a family's templates from it, so a template is written the
same way whichever family it belongs to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import package_data
from .patterns import Pattern

STRENGTHS: tuple[str, ...] = ("easy", "medium", "hard")
REGIMES: tuple[str, ...] = ("control", "target")


@dataclass(frozen=True)
class Template:
    """One scenario family: query, labelled chain, honeypot pools and the verdict rule."""

    name: str
    regime: str
    query: Pattern
    chain: tuple[Pattern, ...]
    pools: Mapping[str, tuple[str, ...]]
    honeypots: Mapping[str, tuple[str, ...]]
    n_honeypots: int
    verdict: Callable[[Mapping[str, str]], str]
    #: text appended to every query (the reader ignores it)
    suffix: str = ""

    @property
    def depth(self) -> int:
        return len(self.chain)

    def read_answer(self, query: str, texts: Sequence[str]) -> str | None:
        """The answer derived from ``texts`` by walking the chain from the query, else None.

        Each chain pattern must be matched, consistently with the slots bound so far, by
        exactly one fact among ``texts``; a missing link or two conflicting facts give None.
        """
        bound = self.query.read(query.removesuffix(self.suffix))
        if bound is None:
            raise ValueError(f"query {query!r} does not fit template {self.name!r}")
        for pattern in self.chain:
            found = {tuple(sorted(m.items())) for t in texts if (m := pattern.read(t, **bound)) is not None}
            if len(found) != 1:
                return None
            bound = {**bound, **dict(found.pop())}
        return self.verdict(bound)


def permission_verdict(values: Mapping[str, str], grants: Collection[str]) -> str:
    """ "yes" when the chain's permission word is one of the family's ``grants``."""
    return "yes" if values["permission"] in grants else "no"


def expense_verdict(values: Mapping[str, str]) -> str:
    amount = int(values["amount"])
    return "yes" if amount <= int(values["threshold"]) and amount <= int(values["budget"]) else "no"


def threshold_verdict(values: Mapping[str, str]) -> str:
    return "yes" if int(values["reading"]) > int(values["limit"]) else "no"


#: the scenario families' sentences and settings (see the module docstring)
DATA: dict[str, dict[str, Any]] = package_data.load("templates.json")


def family(name: str) -> dict[str, Template]:
    """The templates of scenario family ``name`` in ``DATA``, by template name.

    Every query ends with the family's ``suffix``; a template's ``verdict`` names ``expense``,
    ``threshold`` or ``permission`` (granted by the family's ``grants`` words).
    """
    data = DATA[name]
    verdicts: dict[str, Callable[[Mapping[str, str]], str]] = {
        "expense": expense_verdict,
        "threshold": threshold_verdict,
        "permission": functools.partial(permission_verdict, grants=frozenset(data["grants"])),
    }
    return {
        t["name"]: Template(
            name=t["name"],
            regime=t["regime"],
            query=Pattern(t["query"]),
            chain=tuple(Pattern(c) for c in t["chain"]),
            pools={slot: tuple(values) for slot, values in t["pools"].items()},
            honeypots={strength: tuple(texts) for strength, texts in t["honeypots"].items()},
            n_honeypots=t["n_honeypots"],
            verdict=verdicts[t["verdict"]],
            suffix=data["suffix"],
        )
        for t in data["templates"]
    }


TEMPLATES: dict[str, Template] = family("neutral")
CONTROLS: tuple[str, ...] = tuple(n for n, t in TEMPLATES.items() if t.regime == "control")
TARGETS: tuple[str, ...] = tuple(n for n, t in TEMPLATES.items() if t.regime == "target")
