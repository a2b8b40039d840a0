"""Generated multi-turn sessions whose later turns refer back to earlier ones, with ground truth.

``generate(domain, seed)`` builds one session of a domain of ``referent_domains``; the
random stream is ``numpy.random.default_rng([seed, domain index])`` and draws, in order:

1. the system prompt; the query's kind (parent or child), query template and reference form;
2. 2-3 parents with distinct identifiers and intros, and 2..#parents children, each attached
   to a distinct parent, with distinct identifiers and intros;
3. per entity 1-3 mention templates (distinct within the entity); then 1-2 *topic mentions*
   (the query's vocabulary about an entity of the query's kind, attached to random such
   entities), 2-3 same-topic honeypots and 6-10 neutral fillers (without replacement);
4. the turn order: each parent's thread is its intro followed by a uniformly random
   interleaving of its mentions and its child's thread (the child's intro then its
   mentions); the threads and every distractor are interleaved uniformly at random;
   the system prompt is turn 0 and the query the last turn;
5. per turn, the pool slots and the form of the reference it makes.

The entity asked about is the *newest* entity of the query's kind (its intro is the latest
of the kind), so every binding of the kind's shared anaphor before it is stale.  A
reference to an entity uses its identifier or its description; the shared anaphor only
for the newest entity of a kind, so under the newest-binder rule every reference resolves
to the entity it means.  An intro binds ``{anaphor: id, description: id, id: gist}``,
restricted to the referents some turn of the session uses.

Ground truth per turn: ``uses`` (the referents it mentions), ``meant`` (the intro turn of the
entity each use refers to, which the newest-binder rule must resolve it to) and ``binds``;
the query turn;
``needed`` (the referent the query uses) and ``binder`` (its live binder, the intro of the
entity asked about).  Token cost is ``max(len(text.split()), 1)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_fast import whitespace_cost

from .referent_domains import DOMAINS, FORMS, KINDS, POOLS, Domain, Intro, Kind

USER = "user"
QUERY_WEIGHTS: tuple[float, ...] = (0.2, 0.3, 0.5)


@dataclass(frozen=True)
class Session:
    """A generated session: turns in order plus the referent ground truth.

    ``kinds[i]`` is one of ``system``, ``intro``, ``mention``, ``topic``, ``honeypot``,
    ``filler``, ``query``; ``roles[i]`` the speaker before the first colon of the turn;
    ``meant[i][k]`` the intro turn of the entity that ``uses[i][k]`` refers to.
    """

    domain: str
    seed: int
    texts: tuple[str, ...]
    kinds: tuple[str, ...]
    uses: tuple[tuple[str, ...], ...]
    binds: tuple[Mapping[str, str] | None, ...]
    meant: tuple[tuple[int, ...], ...]
    query_kind: str
    form: str
    needed: str
    binder: int
    roles: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", tuple(t.split(":", 1)[0] for t in self.texts))

    @property
    def n_blocks(self) -> int:
        return len(self.texts)

    @property
    def query(self) -> int:
        """Index of the query turn (the last turn)."""
        return len(self.texts) - 1

    @property
    def live(self) -> tuple[int, int]:
        """The live roots: the system prompt and the current (query) turn."""
        return (0, self.query)

    @property
    def costs(self) -> np.ndarray:
        """int64 token costs, ``max(len(text.split()), 1)`` per turn."""
        return np.array([whitespace_cost(t) for t in self.texts], dtype=np.int64)

    def query_turns(self, k: int = len(QUERY_WEIGHTS)) -> list[int]:
        """The last ``k`` user turns, oldest first (the query turn is the last of them)."""
        users = [i for i, r in enumerate(self.roles) if r == USER]
        return users[-k:]

    def reference_edges(self) -> list[tuple[int, int]]:
        """``(user, live binder)`` for every use that resolves: the dependency edges DSGC gets."""
        live: dict[str, int] = {}
        for i, b in enumerate(self.binds):
            for x in b or ():
                live[x] = i
        return sorted({(u, live[x]) for u, xs in enumerate(self.uses) for x in xs if x in live})


@dataclass
class _Entity:
    kind: str
    ident: str
    intro: Intro
    parent: int | None
    mentions: list[tuple[str, str]]  # (turn kind, template): "mention" or "topic"


def _pick(rng: np.random.Generator, items: Sequence[Any], k: int | None = None) -> Any:
    """One item, or ``k`` distinct items (in draw order), chosen uniformly."""
    if k is None:
        return items[int(rng.integers(len(items)))]
    return [items[int(j)] for j in rng.choice(len(items), size=k, replace=False)]


def interleave(rng: np.random.Generator, sequences: Iterable[Sequence[Any]]) -> list[Any]:
    """A uniformly random interleaving that keeps the order inside each sequence.

    At each step the next item comes from sequence s with probability remaining(s) / remaining.
    """
    queues = [list(s) for s in sequences if len(s)]
    out: list[Any] = []
    while queues:
        sizes = np.array([len(q) for q in queues], dtype=np.float64)
        s = int(rng.choice(len(queues), p=sizes / sizes.sum()))
        out.append(queues[s].pop(0))
        if not queues[s]:
            queues.pop(s)
    return out


def _draw_entities(rng: np.random.Generator, d: Domain) -> list[_Entity]:
    n_parents = int(rng.integers(2, 4))
    n_children = int(rng.integers(2, n_parents + 1))
    entities = []
    for which, count in (("parent", n_parents), ("child", n_children)):
        kind = d.kind(which)
        ids = _pick(rng, kind.ids, count)
        intros = _pick(rng, kind.intros, count)
        parents = _pick(rng, range(n_parents), count) if which == "child" else [None] * count
        for ident, intro, parent in zip(ids, intros, parents):
            entities.append(_Entity(which, ident, intro, parent, []))
    for e in entities:
        kind = d.kind(e.kind)
        e.mentions = [("mention", m) for m in _pick(rng, kind.mentions, int(rng.integers(1, 4)))]
    return entities


def _threads(entities: list[_Entity], rng: np.random.Generator) -> list[list[tuple[str, int, str]]]:
    """One event thread per parent: its intro, then its mentions interleaved with its child's thread."""
    threads = []
    for p, e in enumerate(entities):
        if e.kind != "parent":
            continue
        own = [(what, p, m) for what, m in e.mentions]
        nested = [
            [("intro", c, c_e.intro.text)] + [(what, c, m) for what, m in c_e.mentions]
            for c, c_e in enumerate(entities)
            if c_e.parent == p
        ]
        threads.append([("intro", p, e.intro.text)] + interleave(rng, [own, *nested]))
    return threads


class _Filler:
    """Fills one turn's template: pool slots and the reference forms it uses."""

    def __init__(self, rng: np.random.Generator, d: Domain, entities: list[_Entity], newest: set[int]):
        self.rng, self.d, self.entities, self.newest = rng, d, entities, newest

    def slots(self) -> dict[str, str]:
        return {name: _pick(self.rng, pool) for name, pool in POOLS.items()}

    def referent(self, e: int, form: str | None = None) -> str:
        """The referent string naming entity ``e`` (form drawn if not given)."""
        ent = self.entities[e]
        if form is None:
            allowed = FORMS if e in self.newest else FORMS[1:]
            form = _pick(self.rng, allowed)
        kind: Kind = self.d.kind(ent.kind)
        return {"anaphor": kind.anaphor, "description": ent.intro.description, "identifier": ent.ident}[form]

    def intro(self, e: int) -> tuple[str, tuple[str, ...], dict[str, str]]:
        ent = self.entities[e]
        values = self.slots()
        uses: tuple[str, ...] = ()
        if ent.parent is not None:
            parent_ref = self.referent(ent.parent)
            values.update(parent=parent_ref, parent_id=self.entities[ent.parent].ident)
            uses = (parent_ref,)
        values["id"] = ent.ident
        kind = self.d.kind(ent.kind)
        binds = {kind.anaphor: ent.ident, ent.intro.description: ent.ident, ent.ident: ent.intro.gist.format(**values)}
        return ent.intro.text.format(**values), uses, binds

    def about(self, template: str, e: int | None, form: str | None = None) -> tuple[str, tuple[str, ...]]:
        values = self.slots()
        if e is None:
            return template.format(**values), ()
        values["ref"] = self.referent(e, form)
        return template.format(**values), (values["ref"],)


def generate(domain: str, seed: int) -> Session:
    """The session of ``domain`` for ``seed`` (see the module docstring for the draws)."""
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {tuple(DOMAINS)}, got {domain!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    d = DOMAINS[domain]
    rng = np.random.default_rng([int(seed), list(DOMAINS).index(domain)])
    system = _pick(rng, d.systems)
    query_kind = _pick(rng, KINDS)
    query = _pick(rng, d.queries[query_kind])
    form = _pick(rng, FORMS)

    entities = _draw_entities(rng, d)
    of_kind = [i for i, e in enumerate(entities) if e.kind == query_kind]
    topics = _pick(rng, query.topic_mentions, int(rng.integers(1, 3)))
    for t in topics:
        entities[_pick(rng, of_kind)].mentions.append(("topic", t))
    distractors = [("honeypot", None, h) for h in _pick(rng, query.honeypots, int(rng.integers(2, 4)))]
    distractors += [("filler", None, f) for f in _pick(rng, d.fillers, int(rng.integers(6, 11)))]
    events = interleave(rng, _threads(entities, rng) + [[x] for x in distractors])

    intro_at = {e: pos for pos, (what, e, _) in enumerate(events) if what == "intro"}
    newest = {max((i for i, e in enumerate(entities) if e.kind == k), key=intro_at.get) for k in KINDS}
    target = max(of_kind, key=intro_at.get)
    fill = _Filler(rng, d, entities, newest)

    turn_of = {e: 1 + pos for e, pos in intro_at.items()}
    texts, kinds, uses, binds, meant = [system], ["system"], [()], [None], [()]
    for what, e, template in events:
        if what == "intro":
            text, used, bound = fill.intro(e)
            about = entities[e].parent
        else:
            (text, used), bound, about = fill.about(template, e), None, e
        texts.append(text)
        kinds.append(what)
        uses.append(used)
        binds.append(bound)
        meant.append(() if about is None else (turn_of[about],))
    text, used = fill.about(query.text, target, form)
    texts.append(text)
    kinds.append("query")
    uses.append(used)
    binds.append(None)
    meant.append((turn_of[target],))

    referenced = {x for xs in uses for x in xs}
    binds = [{x: v for x, v in b.items() if x in referenced} or None if b else None for b in binds]
    return Session(
        domain,
        int(seed),
        tuple(texts),
        tuple(kinds),
        tuple(uses),
        tuple(binds),
        tuple(meant),
        query_kind,
        form,
        used[0],
        turn_of[target],
    )


def generate_all(seeds: Iterable[int], domains: Sequence[str] = tuple(DOMAINS)) -> list[Session]:
    """One session per (seed, domain), seeds outer."""
    return [generate(domain, seed) for seed in seeds for domain in domains]
