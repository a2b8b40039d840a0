"""The referent-session suite: do kept turns lose the turns that say what they refer to?

Every session of ``referent_sessions`` (one per domain and seed) is encoded by each
encoder, then ``dsgc_fast.retain`` runs every variant at every budget:

- ``similarity``: rank by <q, e_i>, no pins;  ``dsgc``: DSGC (tau 0.25, lambda_pi 1) whose
  dependency edges are the reference edges (a turn depends on the live binder of every
  referent it uses), no pins;  ``recency``: newest first, no pins;
- ``dsgc+pins`` / ``recency+pins``: the same with the live roots (system prompt and current
  turn) pinned and ``uses``/``binds`` supplied (closure-aware selection, escalation);
- ``dsgc+pins+qdist``: dsgc+pins scored against the last 3 user turns as a query
  distribution with weights 0.2, 0.3, 0.5 (oldest to newest).

The query is the current (last) turn's embedding.  Budgets are ``ceil(f * total cost)`` of
the session and ``ceil(f * pinned cost)`` (the cost of the live roots' closure), which
forces the binding table.

Metrics (per encoder, budget and variant, summed over sessions; a session where the
engine raises ``ReferentEvictionError`` counts in ``errors`` and in nothing else):

- orphan rate = orphans / resolvable uses by kept turns, where a resolvable use is a pair
  (kept turn, referent it uses) whose referent has a live binder, and an orphan is such a
  pair whose binder was evicted and is not in the binding table (``dsgc_fast.orphans``);
- sessions with an orphan = share of sessions with at least one orphan;
- needed binding survived = share of sessions whose query's referent still resolves: its
  live binder is kept or the referent is in the binding table;
- evicted tokens = evicted turns' cost / total cost; evicted turns = mean per session;
- escalations = sessions where the pinned set did not fit and the binding table replaced it
  (with the table's cost and the cost of the turns it replaced).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import dsgc_fast
from dsgc_fast import Reason, ReferentIndex
from dsgc_fast.encoders import CachedEncoder

from . import plots
from .referent_domains import DOMAINS, FORMS
from .referent_sessions import QUERY_WEIGHTS, Session, generate_all
from .runner import Encodings, PolicyVariant
from .suite import RunConfig, Section, read_json


@dataclass(frozen=True)
class Variant(PolicyVariant):
    """A retention variant: engine policy, whether pins are on, which query it scores against."""

    pins: bool
    query_distribution: bool = False


@dataclass(frozen=True)
class Budget:
    """``ceil(fraction * base)`` with base the session's ``"total"`` or ``"pinned"`` cost."""

    base: str
    fraction: float

    @property
    def label(self) -> str:
        return f"{self.fraction:g} x {self.base}"

    def of(self, total: int, pinned: int) -> int:
        return math.ceil(Fraction(str(self.fraction)) * (total if self.base == "total" else pinned))


VARIANTS: tuple[Variant, ...] = (
    Variant("similarity", "similarity", False),
    Variant("dsgc", "dsgc", False),
    Variant("recency", "recency", False),
    Variant("dsgc+pins", "dsgc", True),
    Variant("recency+pins", "recency", True),
    Variant("dsgc+pins+qdist", "dsgc", True, query_distribution=True),
)
BUDGETS: tuple[Budget, ...] = (Budget("pinned", 0.8), Budget("total", 0.2), Budget("total", 0.3), Budget("total", 0.5))


#: the sums of one (encoder, budget, variant) cell, in the order its row lists them
COUNTS: tuple[str, ...] = (
    "sessions", "errors", "escalations", "orphans", "resolvable_uses", "sessions_with_orphan", "needed_survived",
    "evicted_tokens", "total_tokens", "evicted_turns", "table_tokens", "tabled_tokens",
)  # fmt: skip


class Tally:
    """Sums over the sessions of one (encoder, budget, variant) cell: one count per name of ``COUNTS``."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNTS, 0)

    def add(self, **counts: int) -> None:
        """Add to the named counts (a name not in ``COUNTS`` is a ``KeyError``)."""
        for name, n in counts.items():
            self.counts[name] += n

    def row(self) -> dict[str, Any]:
        """The sums plus the rates (None where the denominator is zero)."""
        c = self.counts
        ok = c["sessions"] - c["errors"]

        def ratio(a: int, b: int) -> float | None:
            return a / b if b else None

        return dict(c) | {
            "orphan_rate": ratio(c["orphans"], c["resolvable_uses"]),
            "session_orphan_rate": ratio(c["sessions_with_orphan"], ok),
            "needed_rate": ratio(c["needed_survived"], ok),
            "evicted_token_share": ratio(c["evicted_tokens"], c["total_tokens"]),
            "evicted_turns_mean": ratio(c["evicted_turns"], ok),
            "table_tokens_mean": ratio(c["table_tokens"], c["escalations"]),
            "tabled_tokens_mean": ratio(c["tabled_tokens"], c["escalations"]),
        }


@dataclass(frozen=True)
class Prepared:
    """What every variant of one session shares: costs, reference edges, referent index."""

    session: Session
    costs: np.ndarray
    edges: np.ndarray
    index: ReferentIndex
    pinned_cost: int

    @classmethod
    def of(cls, session: Session) -> Prepared:
        costs = session.costs
        index = ReferentIndex.from_lists(session.uses, session.binds)
        pinned = dsgc_fast.pin_closure(session.live, referents=index)
        edges = np.array(session.reference_edges(), dtype=np.int64).reshape(-1, 2)
        return cls(session, costs, edges, index, int(costs[pinned].sum()))

    def resolvable_uses(self, mask: np.ndarray) -> int:
        """Pairs (kept turn, used referent with a live binder)."""
        owner = np.repeat(np.arange(self.index.n), np.diff(self.index.use_indptr))
        bound = self.index.live_binder[self.index.use_ids] >= 0
        return int((mask[owner] & bound).sum())


def run_variant(p: Prepared, embs: np.ndarray, variant: Variant, budget: int, tally: Tally) -> None:
    """Retain one session under one variant and budget; add the outcome to ``tally``."""
    s = p.session
    tally.add(sessions=1)
    if variant.query_distribution:
        turns = s.query_turns()
        query, weights = embs[turns], QUERY_WEIGHTS[-len(turns) :]
    else:
        query, weights = embs[s.query], None
    pins = {"live": list(s.live), "referents": p.index} if variant.pins else {}
    try:
        got = dsgc_fast.retain(
            query, embs, p.costs, budget, edges=p.edges, policy=variant.policy, query_weights=weights, **pins
        )
    except dsgc_fast.ReferentEvictionError:
        tally.add(errors=1)
        return
    table = got.binding_table
    lost = dsgc_fast.orphans(got.retained, referents=p.index, table=table)
    tabled = {e[0] for e in table.entries} if table is not None else set()
    tally.add(
        orphans=len(lost),
        sessions_with_orphan=bool(lost),
        resolvable_uses=p.resolvable_uses(got.mask),
        needed_survived=bool(got.mask[s.binder] or s.needed in tabled),
        evicted_tokens=int(p.costs[~got.mask].sum()),
        total_tokens=int(p.costs.sum()),
        evicted_turns=int((~got.mask).sum()),
    )
    if table is not None:
        tally.add(
            escalations=1, table_tokens=table.cost, tabled_tokens=int(p.costs[got.reasons == Reason.TABLED].sum())
        )


def encode_sessions(sessions: Sequence[Session], encoder: CachedEncoder) -> list[np.ndarray]:
    """Per session, its (turns, dim) embedding matrix; every distinct text is encoded once."""
    encoder.encode([t for s in sessions for t in s.texts])
    return [encoder.encode(list(s.texts)) for s in sessions]


def evaluate(
    prepared: Sequence[Prepared],
    encodings: Encodings,
    encoders: Iterable[str],
    budgets: Sequence[Budget] = BUDGETS,
    variants: Sequence[Variant] = VARIANTS,
) -> list[dict[str, Any]]:
    """Result rows: one per encoder, budget and variant, summed over the sessions."""
    sessions = [p.session for p in prepared]
    rows: list[dict[str, Any]] = []
    for name in encoders:
        embeddings = encode_sessions(sessions, encodings[name])
        for budget in budgets:
            for variant in variants:
                tally = Tally()
                for p, embs in zip(prepared, embeddings):
                    run_variant(p, embs, variant, budget.of(int(p.costs.sum()), p.pinned_cost), tally)
                cell = {"encoder": name, "budget": budget.label, "variant": variant.name, "pins": variant.pins}
                rows.append(cell | tally.row())
    return rows


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def headline(rows: Sequence[dict[str, Any]]) -> str:
    """One sentence per encoder: pinned orphans versus the similarity-only range over budgets."""
    parts = []
    for enc in dict.fromkeys(r["encoder"] for r in rows):
        mine = [r for r in rows if r["encoder"] == enc]
        pinned = sum(r["orphans"] for r in mine if r["pins"])
        sim = [r for r in mine if r["variant"] == "similarity"]
        orphan = [r["orphan_rate"] or 0.0 for r in sim]
        needed = [r["needed_rate"] or 0.0 for r in sim]
        parts.append(
            f"{enc}: {pinned} orphans under every pinned variant and budget; similarity-only orphan rate "
            f"{_pct(min(orphan))}-{_pct(max(orphan))}, its needed binding survives in "
            f"{_pct(min(needed))}-{_pct(max(needed))} of sessions"
        )
    return "**Result.** " + "; ".join(parts) + "."


def markdown(result: dict[str, Any]) -> str:
    """The section's text below its heading: setup, metric definitions, the table, the plot."""
    rows = result["rows"]
    lines = [
        f"{result['n_sessions']} generated sessions ({', '.join(result['domains'])}; seeds "
        f"{result['seeds'][0]}..{result['seeds'][-1]}), {result['turns_mean']:.1f} turns and "
        f"{result['tokens_mean']:.0f} tokens on average; live roots = system prompt + current turn "
        f"(pinned closure {result['pinned_tokens_mean']:.0f} tokens on average). Queries refer back by "
        + ", ".join(f"{k} ({v})" for k, v in result["forms"].items())
        + ".",
        "",
        "- **orphan rate**: orphans (`dsgc_fast.orphans`, binding table honoured) / uses by kept turns "
        "whose referent has a live binder; **sessions w/ orphan**: share with at least one orphan.",
        "- **needed binding**: share of sessions whose query's referent still resolves (live binder kept, "
        "or the referent is in the binding table).",
        "- **evicted tokens**: evicted cost / total cost; **evicted turns**: mean per session; "
        "**escalations**: sessions answered with a binding table; **errors**: `ReferentEvictionError` "
        "(the engine refused: roots + binding table exceed the budget); rates are over the sessions answered.",
        "- `dsgc` uses the reference edges (user turn -> live binder) as its dependency graph; "
        "`+qdist` scores against the last 3 user turns weighted 0.2/0.3/0.5.",
        "",
        headline(rows),
        "",
        "| encoder | budget | variant | orphan rate | sessions w/ orphan | needed binding "
        "| evicted tokens | evicted turns | escalations | errors |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['encoder']} | {r['budget']} | {r['variant']} | {_pct(r['orphan_rate'])} "
            f"({r['orphans']}/{r['resolvable_uses']}) | {_pct(r['session_orphan_rate'])} | "
            f"{_pct(r['needed_rate'])} | {_pct(r['evicted_token_share'])} | "
            f"{r['evicted_turns_mean']:.1f} | {r['escalations']} | {r['errors']} |"
        )
    escalated = [r for r in rows if r["escalations"]]
    if escalated:
        table = sum(r["table_tokens"] for r in escalated) / sum(r["escalations"] for r in escalated)
        tabled = sum(r["tabled_tokens"] for r in escalated) / sum(r["escalations"] for r in escalated)
        lines += [
            "",
            f"An escalation's binding table costs {table:.1f} tokens on average and stands in for "
            f"{tabled:.1f} tokens of pinned turns.",
        ]
    lines += ["", "![referent sessions](referents.png)"]
    return "\n".join(lines)


@dataclass(frozen=True)
class ReferentSuite:
    """The referent-session suite: one session per domain and seed, every variant and budget.

    Files: ``referents.json`` (the summary: setup, per-session averages, the result rows),
    ``referents.md`` (its report section) and ``referents.png``.
    """

    name: str = "referents"
    title: str = "Referent sessions"
    budgets: tuple[Budget, ...] = BUDGETS
    variants: tuple[Variant, ...] = VARIANTS

    def build(self, config: RunConfig) -> list[Prepared]:
        return [Prepared.of(s) for s in generate_all(config.seeds)]

    def run(self, plan: list[Prepared], config: RunConfig) -> dict[str, Any]:
        rows = evaluate(plan, config.encodings, config.encoders, self.budgets, self.variants)
        sessions = [p.session for p in plan]
        return {
            "suite": self.name,
            "seeds": list(config.seeds),
            "domains": list(DOMAINS),
            "encoders": list(config.encoders),
            "budgets": [b.label for b in self.budgets],
            "variants": [asdict(v) for v in self.variants],
            "n_sessions": len(sessions),
            "turns_mean": float(np.mean([s.n_blocks for s in sessions])),
            "tokens_mean": float(np.mean([int(s.costs.sum()) for s in sessions])),
            "pinned_tokens_mean": float(np.mean([p.pinned_cost for p in plan])),
            "forms": {f: sum(s.form == f for s in sessions) for f in FORMS},
            "rows": rows,
        }

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> dict[str, Any]:
        """The rows are already sums over sessions; the summary adds the pinned orphan total."""
        return raw | {"pinned_orphans": sum(r["orphans"] for r in raw["rows"] if r["pins"])}

    def render(self, summary: dict[str, Any], out: Path) -> list[Section]:
        plots.referent_rates(summary["rows"], out / "referents.png")
        return [Section(self.name, self.title, (markdown(summary),))]

    def save(self, out: Path, raw: dict[str, Any], summary: dict[str, Any]) -> None:
        (out / "referents.json").write_text(json.dumps(summary, indent=1))
        (out / "referents.md").write_text(self.render(summary, out)[0].text + "\n")

    def load(self, out: Path) -> dict[str, Any] | None:
        return read_json(out / "referents.json")
