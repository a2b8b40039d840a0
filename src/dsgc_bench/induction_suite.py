"""Induction suite: induced edges and referents against the generators' ground truth.

Three measurements, all deterministic per seed:

1. **Edge quality** on the main-suite scenarios (``scenarios.generate``, 20 blocks, medium
   honeypots by default): ``induce_edges(texts)`` against the generator's true edges, per
   template and pooled per regime (controls, targets).  Precision = TP / (TP + FP) and
   recall = TP / (TP + FN), pooled over seeds (micro averages); every false positive is
   listed with the kinds of the two blocks it joins.
2. **Retention** on the same scenarios: DSGC (tau 0.25, lambda_pi 1.0, one hop, budget
   ``ceil(2.0 * L(q))``) with the supplied edges, the induced edges and no edges, under
   each encoder; the primary metric is full-chain retention (mean and sample std over seeds).
3. **Referent sessions** (``referent_sessions.generate``): ``induce_edges`` and the edges
   implied by ``induce_referents`` (a use resolved to its newest binder) against the
   session's reference edges; and whether the induced referents pin the query's needed
   binder from the live roots (system prompt + query turn), with the number of pinned
   blocks the true referents would not pin.

Files: ``raw-induction.json`` (every record), ``summary-induction.json`` (the pooled
figures) and ``induction.md`` (its report section); ``dsgc-bench induction --out DIR``.  The
scenarios of part 1 and 2 come from the neutral family by default (``--scenarios paper``:
the paper family, files named ``...-induction-paper...``, see ``families``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import dsgc_fast
from dsgc_fast.induction import induce_edges, induce_referents

from . import families
from .families import NEUTRAL, HasFamily
from .metrics import mean_std
from .referent_domains import DOMAINS
from .referent_sessions import Session, generate_all
from .runner import Encodings
from .scenarios import TEMPLATES, Scenario
from .suite import RunConfig, Section, read_json, write_json

EDGE_SOURCES: tuple[str, ...] = ("supplied", "induced", "none")
MULTIPLIER = 2.0
TAU = 0.25
LAMBDA_PI = 1.0

Pairs = set[tuple[int, int]]


def _pairs(edges: Iterable[Sequence[int]]) -> Pairs:
    return {(int(a), int(b)) for a, b in edges}


def score_edges(induced: Pairs, truth: Pairs) -> dict[str, int]:
    """True positives, false positives and false negatives of an induced edge set."""
    return {"tp": len(induced & truth), "fp": len(induced - truth), "fn": len(truth - induced)}


def precision_recall(counts: Iterable[dict[str, int]]) -> dict[str, Any]:
    """Pooled counts with precision (None when nothing was induced) and recall (None without truth)."""
    tp = fp = fn = 0
    for c in counts:
        tp, fp, fn = tp + c["tp"], fp + c["fp"], fn + c["fn"]
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
    }


def edge_records(scenarios: Sequence[Scenario]) -> list[dict[str, Any]]:
    """One record per scenario: the induced edges scored against the true edges."""
    records = []
    for sc in scenarios:
        induced = _pairs(induce_edges(sc.texts))
        truth = _pairs(sc.edges)
        records.append(
            {
                "template": sc.template,
                "regime": sc.regime,
                "seed": sc.seed,
                **score_edges(induced, truth),
                "false_positives": [
                    {"edge": [sc.ids[j], sc.ids[i]], "kinds": [sc.kinds[j], sc.kinds[i]]}
                    for j, i in sorted(induced - truth)
                ],
                "missed": [[sc.ids[j], sc.ids[i]] for j, i in sorted(truth - induced)],
            }
        )
    return records


def retention_records(
    scenarios: Sequence[Scenario], encoders: Sequence[str], encodings: Encodings
) -> list[dict[str, Any]]:
    """One record per (scenario, encoder, edge source): DSGC full-chain retention."""
    records = []
    induced = {(sc.template, sc.seed): induce_edges(sc.texts) for sc in scenarios}
    for name in encoders:
        encoder = encodings[name]
        encoder.prepare(t for sc in scenarios for t in (sc.query, *sc.texts))
        for sc in scenarios:
            embs = encoder.encode(sc.texts)
            query = encoder.encode([sc.query])[0]
            sources = {
                "supplied": np.asarray(sc.edges, dtype=np.int64).reshape(-1, 2),
                "induced": induced[(sc.template, sc.seed)],
                "none": None,
            }
            for source in EDGE_SOURCES:
                res = dsgc_fast.retain(
                    query,
                    embs,
                    sc.costs,
                    sc.budget(MULTIPLIER),
                    edges=sources[source],
                    policy="dsgc",
                    lambda_pi=LAMBDA_PI,
                    tau=TAU,
                )
                records.append(
                    {
                        "template": sc.template,
                        "regime": sc.regime,
                        "seed": sc.seed,
                        "encoder": name,
                        "edges": source,
                        "full_chain": bool(res.mask[sc.chain].all()),
                    }
                )
    return records


def _live_binders(binds: Sequence[dict[str, str] | None]) -> dict[str, int]:
    live: dict[str, int] = {}
    for i, b in enumerate(binds):
        for name in b or ():
            live[name] = i
    return live


def referent_edges(uses: Sequence[Sequence[str]], binds: Sequence[dict[str, str] | None]) -> Pairs:
    """``(user, newest binder)`` for every induced use that resolves (a block never depends on itself)."""
    live = _live_binders(binds)
    return {(u, live[x]) for u, xs in enumerate(uses) for x in xs if x in live and live[x] != u}


def session_records(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    """Per session: identifier and referent edges scored, and the query binder's pin outcome."""
    records = []
    for s in sessions:
        truth = _pairs(s.reference_edges())
        binds, uses = induce_referents(list(s.texts))
        pinned = set(dsgc_fast.pin_closure(list(s.live), uses, binds).tolist())
        true_pinned = set(dsgc_fast.pin_closure(list(s.live), list(s.uses), list(s.binds)).tolist())
        records.append(
            {
                "domain": s.domain,
                "seed": s.seed,
                "form": s.form,
                "identifier_edges": score_edges(_pairs(induce_edges(list(s.texts))), truth),
                "referent_edges": score_edges(referent_edges(uses, binds), truth),
                "binder_pinned": s.binder in pinned,
                "extra_pins": len(pinned - true_pinned),
            }
        )
    return records


def _rate(values: Sequence[float]) -> dict[str, float]:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std}


#: the fields of ``summary-induction.json``
SUMMARY_FIELDS: tuple[str, ...] = ("edge_quality", "retention", "sessions")


def summarize(edges: Sequence[dict], retention: Sequence[dict], sessions: Sequence[dict]) -> dict[str, Any]:
    """Per-template / per-regime edge quality, retention per (template, encoder, source), session rates."""
    quality: dict[str, Any] = {}
    for key, field in (("template", "template"), ("regime", "regime")):
        for value in dict.fromkeys(r[field] for r in edges):
            quality[f"{key}:{value}"] = precision_recall(r for r in edges if r[field] == value)
    quality["all"] = precision_recall(edges)
    kept: dict[str, Any] = {}
    for r in retention:
        kept.setdefault(f"{r['template']}|{r['encoder']}|{r['edges']}", []).append(float(r["full_chain"]))
    by_domain: dict[str, Any] = {}
    for domain in dict.fromkeys(r["domain"] for r in sessions):
        runs = [r for r in sessions if r["domain"] == domain]
        by_domain[domain] = {
            "identifier_edges": precision_recall(r["identifier_edges"] for r in runs),
            "referent_edges": precision_recall(r["referent_edges"] for r in runs),
            "binder_pinned": _rate([float(r["binder_pinned"]) for r in runs]),
            "extra_pins": _rate([float(r["extra_pins"]) for r in runs]),
        }
    return {
        "edge_quality": quality,
        "retention": {k: _rate(v) for k, v in kept.items()},
        "sessions": by_domain,
    }


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def markdown(summary: dict[str, Any], encoders: Sequence[str], n_seeds: int) -> str:
    """The section's text below its heading: edge quality, retention by edge source, sessions."""
    q = summary["edge_quality"]
    lines = [
        f"{n_seeds} seeds; scenarios: 20 blocks, medium honeypots; DSGC tau {TAU}, lambda_pi {LAMBDA_PI}, "
        f"budget multiplier {MULTIPLIER}.",
        "",
        "### Induced edges vs the generator's true edges",
        "",
        "| scope | TP | FP | FN | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for scope, c in q.items():
        lines.append(f"| {scope} | {c['tp']} | {c['fp']} | {c['fn']} | {_fmt(c['precision'])} | {_fmt(c['recall'])} |")
    lines += [
        "",
        "### DSGC full-chain retention by edge source",
        "",
        "| template | encoder | supplied | induced | none |",
        "|---|---|---:|---:|---:|",
    ]
    templates = dict.fromkeys(k.split("|")[0] for k in summary["retention"])
    for t in templates:
        for enc in encoders:
            cells = [summary["retention"].get(f"{t}|{enc}|{src}") for src in EDGE_SOURCES]
            lines.append(
                f"| {t} | {enc} | "
                + " | ".join(f"{c['mean']:.2f} ± {c['std']:.2f}" if c else "n/a" for c in cells)
                + " |"
            )
    lines += [
        "",
        "### Referent sessions",
        "",
        "| domain | identifier edges P / R | referent edges P / R | query binder pinned | extra pins |",
        "|---|---:|---:|---:|---:|",
    ]
    for domain, d in summary["sessions"].items():
        ie, re_ = d["identifier_edges"], d["referent_edges"]
        lines.append(
            f"| {domain} | {_fmt(ie['precision'])} / {_fmt(ie['recall'])} | {_fmt(re_['precision'])} / "
            f"{_fmt(re_['recall'])} | {d['binder_pinned']['mean']:.2f} | {d['extra_pins']['mean']:.2f} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Plan:
    """What the induction suite measures: main-suite scenarios and referent sessions."""

    scenarios: list[Scenario]
    sessions: list[Session]


@dataclass(frozen=True)
class InductionSuite(HasFamily):
    """Induced edges and referents against the truth, and DSGC retention by edge source.

    The summary file holds the pooled figures; the run's seeds and encoders, which its
    report section also shows, are read back from the raw file.
    """

    name: str = "induction"
    title: str = "Induced edges and referents"
    templates: tuple[str, ...] = tuple(TEMPLATES)
    domains: tuple[str, ...] = tuple(DOMAINS)
    total_blocks: int = 20
    honeypot: str = "medium"
    scenarios: str = NEUTRAL

    def build(self, config: RunConfig) -> Plan:
        generate = families.GENERATORS[self.scenarios]
        scenarios = [
            generate(t, s, total_blocks=self.total_blocks, honeypot=self.honeypot)
            for t in self.templates
            for s in config.seeds
        ]
        return Plan(scenarios, generate_all(config.seeds, self.domains))

    def run(self, plan: Plan, config: RunConfig) -> dict[str, Any]:
        return {
            **families.tag(self.scenarios),
            "suite": self.name,
            "seeds": list(config.seeds),
            "encoders": list(config.encoders),
            "edges": edge_records(plan.scenarios),
            "retention": retention_records(plan.scenarios, config.encoders, config.encodings),
            "sessions": session_records(plan.sessions),
        }

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> dict[str, Any]:
        return {
            **families.tag(self.scenarios),
            "seeds": raw["seeds"],
            "encoders": raw["encoders"],
            **summarize(raw["edges"], raw["retention"], raw["sessions"]),
        }

    def render(self, summary: dict[str, Any], out: Path) -> list[Section]:
        body = markdown(summary, summary["encoders"], len(summary["seeds"]))
        return [Section(self.stem, families.titled(self.title, self.scenarios), (body,))]

    def save(self, out: Path, raw: dict[str, Any], summary: dict[str, Any]) -> None:
        write_json(out / f"raw-{self.stem}.json", raw)
        figures = {k: summary[k] for k in (*families.tag(self.scenarios), *SUMMARY_FIELDS)}
        write_json(out / f"summary-{self.stem}.json", figures)
        (out / f"{self.stem}.md").write_text(self.render(summary, out)[0].text + "\n")

    def load(self, out: Path) -> dict[str, Any] | None:
        figures, raw = read_json(out / f"summary-{self.stem}.json"), read_json(out / f"raw-{self.stem}.json")
        if figures is None or raw is None:
            return None
        return {"seeds": raw["seeds"], "encoders": raw["encoders"], **figures}
