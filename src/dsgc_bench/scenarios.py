"""Deterministic scenario generator: one seeded memory store per (template, seed).

``generate(template, seed)`` draws, with ``numpy.random.default_rng(seed)`` and in this order:
1. the slot values (one permutation per slot pool, in sorted slot order; the first value is
   the chain's, the rest are the honeypots' "other" values);
2. which honeypot sentences of the chosen strength appear (without replacement);
3. which fillers of the neutral corpus appear (without replacement);
4. the block positions (a permutation).  Chain blocks take their positions in upstream order
   (c1 is the oldest chain block); honeypots and fillers fill the rest.

Block ids: ``c1..ck`` (chain, upstream first), ``h1..`` (honeypots, in draw order),
``f1..`` (fillers, in position order).  Token cost is ``max(len(text.split()), 1)``;
edges are ``(dependent, prerequisite)`` index pairs ``(c_{t+1}, c_t)``; the budget for a
multiplier M is ``ceil(M * L(q))`` with ``L(q)`` the chain's total cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dsgc_fast import whitespace_cost

from . import fillers, paper_templates
from .templates import CONTROLS, STRENGTHS, TARGETS, TEMPLATES, Template

__all__ = ["CONTROLS", "FAMILY_TEMPLATES", "STRENGTHS", "TARGETS", "TEMPLATES", "Scenario", "generate"]

#: the templates of each scenario family, by family name (same template names in each)
FAMILY_TEMPLATES: dict[str, dict[str, Template]] = {"neutral": TEMPLATES, "paper": paper_templates.TEMPLATES}


@dataclass(frozen=True)
class Scenario:
    """A generated memory store: blocks in context order plus the labelled chain.

    ``family`` names the generator that made it (``FAMILY_TEMPLATES``), whose template
    ``template`` reads the answer.
    """

    template: str
    regime: str
    seed: int
    honeypot: str
    ids: list[str]
    texts: list[str]
    costs: list[int]
    kinds: list[str]
    edges: list[tuple[int, int]]
    query: str
    answer: str
    chain: list[int]
    family: str = "neutral"

    @property
    def n_blocks(self) -> int:
        return len(self.texts)

    @property
    def chain_cost(self) -> int:
        """L(q): the total token cost of the chain blocks."""
        return sum(self.costs[i] for i in self.chain)

    def budget(self, multiplier: float) -> int:
        """C = ceil(M * L(q)), with M taken at its decimal value (1.1 means 11/10)."""
        if not multiplier > 0:
            raise ValueError(f"multiplier must be > 0, got {multiplier!r}")
        return math.ceil(Fraction(str(multiplier)) * self.chain_cost)

    def read_answer(self, retained: list[int] | np.ndarray) -> str | None:
        """The template's answer derived from the retained blocks only (None if it cannot be)."""
        spec = FAMILY_TEMPLATES[self.family][self.template]
        return spec.read_answer(self.query, [self.texts[i] for i in retained])


def _draw_values(t: Template, rng: np.random.Generator) -> tuple[dict[str, str], dict[str, list[str]]]:
    chosen, others = {}, {}
    for slot in sorted(t.pools):
        pool = t.pools[slot]
        order = rng.permutation(len(pool))
        chosen[slot] = pool[order[0]]
        others[slot] = [pool[k] for k in order[1:]]
    return chosen, others


def _honeypot_texts(
    t: Template, strength: str, values: dict[str, str], others: dict[str, list[str]], rng: np.random.Generator
) -> list[str]:
    pool = t.honeypots[strength]
    picks = rng.choice(len(pool), size=t.n_honeypots, replace=False)
    texts = []
    for k, p in enumerate(picks):
        fill = {**values, **{f"other_{s}": v[k % len(v)] for s, v in others.items()}}
        texts.append(pool[p].format(**fill))
    return texts


def generate(template: str, seed: int, *, total_blocks: int = 20, honeypot: str = "medium") -> Scenario:
    """The scenario of ``template`` for ``seed`` (see the module docstring for the recipe)."""
    if template not in TEMPLATES:
        raise ValueError(f"template must be one of {tuple(TEMPLATES)}, got {template!r}")
    if honeypot not in STRENGTHS:
        raise ValueError(f"honeypot must be one of {STRENGTHS}, got {honeypot!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    t = TEMPLATES[template]
    corpus = fillers.corpus()
    n_fill = total_blocks - t.depth - t.n_honeypots if isinstance(total_blocks, int) else -1
    if not 0 <= n_fill <= len(corpus):
        raise ValueError(
            f"total_blocks must be an int in [{t.depth + t.n_honeypots}, "
            f"{t.depth + t.n_honeypots + len(corpus)}] for {template!r}, got {total_blocks!r}"
        )
    rng = np.random.default_rng(int(seed))
    values, others = _draw_values(t, rng)
    chain_texts = [p.render(**values) for p in t.chain]
    honey_texts = _honeypot_texts(t, honeypot, values, others, rng)
    fill_texts = [corpus[k] for k in rng.choice(len(corpus), size=n_fill, replace=False)]
    positions = rng.permutation(total_blocks)

    chain_pos = sorted(int(p) for p in positions[: t.depth])
    honey_pos = [int(p) for p in positions[t.depth : t.depth + t.n_honeypots]]
    fill_pos = [int(p) for p in positions[t.depth + t.n_honeypots :]]
    ids, texts, kinds = [""] * total_blocks, [""] * total_blocks, [""] * total_blocks
    for k, p in enumerate(chain_pos):
        ids[p], texts[p], kinds[p] = f"c{k + 1}", chain_texts[k], "chain"
    for k, p in enumerate(honey_pos):
        ids[p], texts[p], kinds[p] = f"h{k + 1}", honey_texts[k], "honeypot"
    for k, (p, text) in enumerate(sorted(zip(fill_pos, fill_texts))):
        ids[p], texts[p], kinds[p] = f"f{k + 1}", text, "filler"

    query = t.query.render(**values)
    return Scenario(
        template=template,
        regime=t.regime,
        seed=int(seed),
        honeypot=honeypot,
        ids=ids,
        texts=texts,
        costs=[whitespace_cost(x) for x in texts],
        kinds=kinds,
        edges=[(chain_pos[k + 1], chain_pos[k]) for k in range(t.depth - 1)],
        query=query,
        answer=t.verdict(values),
        chain=chain_pos,
    )
