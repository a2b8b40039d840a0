"""The ``paper`` scenario family: a generator with the mechanisms of the paper's own.

``generate(template, seed)`` draws, with ``random.Random(seed)`` and in this order:

1. one value per slot, ``choice`` from the slot's four values (slots in sorted order);
2. the honeypots: ``sample`` (without replacement) of ``n_honeypots`` of the strength's
   eight sentences; for each, in sorted slot order, one ``other_<slot>`` value ``choice``
   from the three values the chain does not use;
3. the fillers: one ``choice`` from the 16-sentence pool per filler slot, *with*
   replacement, so a store holds identical copies (which score identically);
4. the block order: chain, honeypots and fillers ``shuffle``-d together, so the chain
   blocks take random positions in any order (c1 is not necessarily the oldest).

Every query ends with ``paper_templates.SUFFIX``.  Block ids: ``c1..ck`` (chain, upstream
first), ``h1..`` (honeypots, in draw order), ``f1..`` (fillers, in position order).  Token
cost, edges ``(c_{t+1}, c_t)`` and the budget rule are those of the neutral family
(``scenarios.py``); ``Scenario.chain`` lists the chain's positions in chain order.

Two switches turn a mechanism off on the otherwise identical store (the ablations):
``duplicates=False`` removes every repeated filler copy after the shuffle (the oldest copy
of each sentence stays, so the store shrinks); ``suffix=False`` leaves the suffix off the
query.
"""

from __future__ import annotations

import random

from dsgc_fast import whitespace_cost

from .paper_templates import FILLERS, TEMPLATES
from .scenarios import Scenario
from .templates import STRENGTHS

FAMILY = "paper"


def _check(template: str, seed: int, total_blocks: int, honeypot: str) -> None:
    if template not in TEMPLATES:
        raise ValueError(f"template must be one of {tuple(TEMPLATES)}, got {template!r}")
    if honeypot not in STRENGTHS:
        raise ValueError(f"honeypot must be one of {STRENGTHS}, got {honeypot!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    t = TEMPLATES[template]
    if isinstance(total_blocks, bool) or not isinstance(total_blocks, int) or total_blocks < t.depth + t.n_honeypots:
        raise ValueError(
            f"total_blocks must be an int >= {t.depth + t.n_honeypots} for {template!r}, got {total_blocks!r}"
        )


def _without_repeated_fillers(blocks: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``blocks`` without any filler whose text an older filler already has."""
    seen: set[str] = set()
    kept = []
    for kind, ident, text in blocks:
        if kind == "filler" and text in seen:
            continue
        seen.add(text)
        kept.append((kind, ident, text))
    return kept


def generate(
    template: str,
    seed: int,
    *,
    total_blocks: int = 20,
    honeypot: str = "medium",
    duplicates: bool = True,
    suffix: bool = True,
) -> Scenario:
    """The ``paper``-family scenario of ``template`` for ``seed`` (module docstring for the recipe)."""
    _check(template, seed, total_blocks, honeypot)
    t = TEMPLATES[template]
    rng = random.Random(seed)
    values = {slot: rng.choice(t.pools[slot]) for slot in sorted(t.pools)}
    others = {f"other_{slot}": [v for v in t.pools[slot] if v != values[slot]] for slot in sorted(t.pools)}
    honey = [
        h.format(**values, **{name: rng.choice(pool) for name, pool in others.items()})
        for h in rng.sample(t.honeypots[honeypot], t.n_honeypots)
    ]
    fills = [rng.choice(FILLERS) for _ in range(total_blocks - t.depth - t.n_honeypots)]
    blocks = (
        [("chain", f"c{k + 1}", p.render(**values)) for k, p in enumerate(t.chain)]
        + [("honeypot", f"h{k + 1}", text) for k, text in enumerate(honey)]
        + [("filler", "", text) for text in fills]
    )
    rng.shuffle(blocks)
    if not duplicates:
        blocks = _without_repeated_fillers(blocks)
    fill_no = iter(range(1, len(blocks) + 1))
    ids = [ident if kind != "filler" else f"f{next(fill_no)}" for kind, ident, _ in blocks]
    texts = [text for _, _, text in blocks]
    chain = [ids.index(f"c{k + 1}") for k in range(t.depth)]
    query = t.query.render(**values) + (t.suffix if suffix else "")
    return Scenario(
        template=template,
        regime=t.regime,
        seed=seed,
        honeypot=honeypot,
        ids=ids,
        texts=texts,
        costs=[whitespace_cost(x) for x in texts],
        kinds=[kind for kind, _, _ in blocks],
        edges=[(chain[k + 1], chain[k]) for k in range(t.depth - 1)],
        query=query,
        answer=t.verdict(values),
        chain=chain,
        family=FAMILY,
    )
