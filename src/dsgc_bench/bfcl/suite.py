"""``dsgc-bench bfcl``: the BFCL replay as a suite of the protocol (``dsgc_bench.suite``).

- ``build``: the sessions of the development splits (``BfclSuite.sessions``: only the first
  N of each), replayed (``replay``), checked call by call against BFCL's executor
  (``check``), cut into scoring points (``points``); and the long-range conversations of
  the run's seeds, plain and tool-heavy (``dsgc_bench.longrange``, one per seed and kind);
  and the padded points (``padded``: every point behind the histories of the two sessions
  before its own, with its own budget).
- ``run``: for each encoder (the run's memoizing encoder: sentence encodings persist in the
  run's cache folder) and budget fraction, every policy of ``policies()`` and every prototype
  of ``agent.CANDIDATES`` on every point, one score per point (``metrics.score``); the
  prototypes also on both kinds of long-range points (the needed value is the old fact);
  ``PADDED`` policies and candidates also on the padded points; the
  trace facts (``facts``): the encoder-independent ones once, the values the message-level
  ``dsgc`` loses with their call kept per encoder and fraction.
  Then the product-unit tables (``compare.run_units``): every policy, anchor and oracle of
  ``anchors.POLICIES`` charged the store's own per-message cost, in whitespace and in model
  tokens, at the shares ``SHARES`` of the history, scored on the text each sends.
- ``summarize``: ``metrics.by_split`` of every (encoder, fraction, policy), the gap each
  closes between ``store-recency`` and the unit oracle, and the checked targets; the
  product-unit tables (``compare.summarize_units``) under ``"units"``, with the claim that
  their whitespace cells of the store and the unit oracle equal the old ones point by point.
- ``render``: three sections, the product-unit tables (model tokens beside whitespace), the
  policies in whitespace (tables, figures, trace facts, claims) and the prototype candidates
  (the evidence behind the agent policy).

Files: ``raw-bfcl.json`` (every point's score under every policy and candidate) and
``summary-bfcl.json`` (the aggregates and the claims), as before the product-unit tables, so
they stay byte-identical; ``raw-bfcl-units.json`` and ``summary-bfcl-units.json`` (the
product-unit tables); figures ``plots/bfcl-recall.png`` and ``plots/bfcl-gap.png``.

Splits: the development splits (``data.SPLITS``) unless ``splits`` names others; a held-out
split (``data.HELD_OUT``) is refused unless ``held_out=True`` (``--held-out``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import longrange, session_plots
from ..markdown import checks_table, image, table
from ..suite import RunConfig, Section, read_json, write_json
from .agent import CANDIDATES, PREVIOUS_NAME, RECOMMENDED_NAME
from .check import CheckResult, check_all
from .compare import ANY, SHARES, run_units, summarize_units, unit_parts
from .data import SPLITS, bfcl_version, check_split, load_sessions
from .facts import identifier_share, induction_audit, lost_with_call_kept, previous_turn_share
from .metrics import Score, by_split, gap_closed, score, summarize
from .oracle import unit_oracle
from .padded import padded
from .points import Point, transcript_points
from .policies import Embeddings, Policy, Selection, baselines
from .replay import Transcript, replay

FRACTIONS: tuple[float, ...] = (0.25, 0.5)
LONGRANGE_FRACTIONS: tuple[float, ...] = (0.05, 0.15, 0.25)
ORACLE = "oracle-units"
RECENCY = "store-recency"
TODAY = "store-dsgc"
DEFAULT = "store-default"
PLAIN = "store-no-induction"
#: the long-range variants the candidates also run on, by table name
LONGRANGE: dict[str, bool] = {"longrange-plain": False, "longrange-tool-heavy": True}
#: sessions of padding before each padded point
PADDING = 2
#: the policies and candidates also run on the padded points
PADDED: tuple[str, ...] = (
    RECENCY,
    DEFAULT,
    ORACLE,
    PREVIOUS_NAME,
    RECOMMENDED_NAME,
    "(Z) (P) off when the best history match has z >= 3",
    "(O) (P) + outliers z >= 3 lifted like the newest unit",
    "(O) (R) + outliers z >= 3 lifted like the newest unit",
    "(Q) (P) carrying 16 median relevances",
    "(M) (P) carrying 5/n",
    "(M) (P) carrying 12/n",
)

#: the policies of the product-unit tables that the old table runs too: name there -> name in the old table
#: (the old table's store default sends whole messages: the product-unit ``store-default-whole``)
PORTED: dict[str, str] = {RECENCY: RECENCY, "store-default-whole": DEFAULT, ORACLE: ORACLE}
#: the title of the product-unit section
UNITS_TITLE = "Real agent sessions in the store's units: BFCL v4 in model tokens"

#: what each policy is, as the tables say it
LABELS: dict[str, str] = {
    "recency-prefix": "message level, newest first, stop at the first misfit",
    "recency-first-fit": "message level, newest first, first fit",
    "similarity": "message level, similarity only",
    "dsgc": "message level, paper DSGC with `trace_edges`",
    RECENCY: 'store, `policy="recency"` (the gap\'s low end)',
    TODAY: 'store, `policy="dsgc"` (**today**: the old default)',
    DEFAULT: "store default: **the agent policy**, induced edges (new)",
    PLAIN: "the agent policy without induction (`add_messages(..., induce=False)`)",
    "store-annotated": "the agent policy + hand annotations from the batch `trace_edges`/`induce`",
    ORACLE: "best choice of whole tool units (the gap's high end)",
}


def oracle_policy(point: Point, emb: Embeddings, budget: int) -> Selection:
    """The unit oracle as a policy."""
    return Selection(unit_oracle(point, budget).retained)


def policies() -> dict[str, Policy]:
    """The policies of the main table, in table order (fresh per run: see ``AnnotatedStore``)."""
    return {**baselines(), ORACLE: oracle_policy}


@dataclass(frozen=True)
class Plan:
    """Replayed transcripts, the executor check, the scoring points, the long-range points
    (by variant: ``LONGRANGE``), the padded points."""

    transcripts: list[Transcript]
    check: CheckResult
    points: list[Point]
    longrange: dict[str, list[Point]]
    padded: list[Point]


def _key(fraction: float) -> str:
    return f"{fraction:.2f}"


def _point_row(point: Point, fractions: Sequence[float]) -> dict[str, Any]:
    return {
        "session": point.session,
        "split": point.split,
        "turn": point.turn,
        "needed": len(point.needed),
        "budgets": [point.budget(f) for f in fractions],
    }


def score_cell(
    policy: Policy,
    points: Sequence[Point],
    emb: Embeddings,
    fraction: float,
    seen: Callable[[Point, Selection], None] | None = None,
) -> dict[str, list[int]]:
    """Per-point columns of the scores of ``policy`` at ``fraction`` (``seen`` gets every selection)."""
    cols: dict[str, list[int]] = {"kept": [], "broken": [], "used": [], "over_budget": []}
    for p in points:
        budget = p.budget(fraction)
        selection = policy(p, emb, budget)
        if seen is not None:
            seen(p, selection)
        s = score(p, selection, budget)
        for name in cols:
            cols[name].append(int(getattr(s, name)))
    return cols


def scores_of(rows: Sequence[dict[str, Any]], cell: dict[str, Any], index: int) -> list[Score]:
    """The ``Score`` of every point of a raw cell (``index``: the fraction's budget column)."""
    return [
        Score(r["session"], r["split"], r["turn"], r["needed"], kept, broken, used, r["budgets"][index], bool(over))
        for r, kept, broken, used, over in zip(rows, cell["kept"], cell["broken"], cell["used"], cell["over_budget"])
    ]


def encoder_free_facts(transcripts: Sequence[Transcript], points: Sequence[Point]) -> dict[str, Any]:
    """Per split: needed values held by the previous turn, identifiers among them, the induction audit."""
    out: dict[str, Any] = {}
    for split in dict.fromkeys(p.split for p in points):
        ps = [p for p in points if p.split == split]
        trs = [t for t in transcripts if t.session.split == split]
        held, needed = previous_turn_share(ps)
        ident, named, n = identifier_share(trs, ps)
        audit = {"edges": 0, "schema_edges": 0, "binds": 0, "schema_binds": 0}
        for tr in trs:
            for key, value in induction_audit(tr).items():
                audit[key] += value
        out[split] = {
            "previous_turn": [held, needed],
            "identifiers": [ident, n],
            "json_values": [named, n],
            "induction_audit": audit,
        }
    return out


@dataclass(frozen=True)
class BfclSuite:
    """The BFCL v4 multi-turn replay: needed-value recall of every policy and prototype."""

    name: str = "bfcl"
    title: str = "Real agent sessions: BFCL v4 multi-turn replay"
    #: keep only the first N sessions of each split (None: all)
    sessions: int | None = None
    #: replay each turn's calls as one assistant message (a sensitivity variant of ``replay``)
    parallel: bool = False
    fractions: tuple[float, ...] = FRACTIONS
    longrange_fractions: tuple[float, ...] = LONGRANGE_FRACTIONS
    #: shares of the history of the product-unit tables
    shares: tuple[float, ...] = SHARES
    #: the splits read (``data.check_split``)
    splits: tuple[str, ...] = SPLITS
    #: allow held-out splits in ``splits`` (never for development)
    held_out: bool = False

    def __post_init__(self) -> None:
        if not self.splits:
            raise ValueError("splits must name at least one split")
        for split in self.splits:
            check_split(split, self.held_out)

    def transcripts(self) -> list[Transcript]:
        """The replayed sessions of ``splits`` (the first ``sessions`` of each)."""
        chosen = [s for split in self.splits for s in load_sessions(split, held_out=self.held_out)[: self.sessions]]
        return [replay(s, parallel=self.parallel) for s in chosen]

    def units_only(self, config: RunConfig) -> dict[str, Any]:
        """The product-unit tables alone (``compare.run_units``, then ``compare.summarize_units``;
        ``compare.unit_parts`` renders them), without the suite's other tables."""
        points = [p for tr in self.transcripts() for p in transcript_points(tr)]
        encoders = {name: config.encodings[name] for name in config.encoders}
        for encoder in encoders.values():
            encoder.prepare(t for p in points for t in p.texts)
        return summarize_units(run_units(points, encoders, self.shares), list(config.encoders))

    def build(self, config: RunConfig) -> Plan:
        transcripts = self.transcripts()
        points = [p for tr in transcripts for p in transcript_points(tr)]
        far = {table: longrange.points(config.seeds, tools=tools) for table, tools in LONGRANGE.items()}
        return Plan(transcripts, check_all(transcripts), points, far, padded(points, PADDING))

    def run(self, plan: Plan, config: RunConfig) -> dict[str, Any]:
        cells, lost = [], []
        rules = policies()
        for name in config.encoders:
            encoder = config.encodings[name]
            encoder.prepare(
                t for p in (*plan.points, *(q for ps in plan.longrange.values() for q in ps)) for t in p.texts
            )
            emb = Embeddings(encoder)
            for fraction in self.fractions:
                for policy, rule in rules.items():
                    tally = _LostTally() if policy == "dsgc" else None
                    cols = score_cell(rule, plan.points, emb, fraction, tally)
                    cells.append({"encoder": name, "fraction": fraction, "table": "policies", "policy": policy, **cols})
                    if tally is not None:
                        lost += [
                            {"encoder": name, "fraction": fraction, "split": k, "call_kept": v[0], "lost": v[1]}
                            for k, v in tally.by_split.items()
                        ]
                for policy, rule in CANDIDATES.items():
                    cols = score_cell(rule, plan.points, emb, fraction)
                    cells.append(
                        {"encoder": name, "fraction": fraction, "table": "candidates", "policy": policy, **cols}
                    )
                for policy in PADDED:
                    cols = score_cell(rules.get(policy) or CANDIDATES[policy], plan.padded, emb, fraction)
                    cells.append({"encoder": name, "fraction": fraction, "table": "padded", "policy": policy, **cols})
            for variant, points in plan.longrange.items():
                for fraction in self.longrange_fractions:
                    for policy, rule in CANDIDATES.items():
                        cols = score_cell(rule, points, emb, fraction)
                        cells.append(
                            {"encoder": name, "fraction": fraction, "table": variant, "policy": policy, **cols}
                        )
        encoders = {name: config.encodings[name] for name in config.encoders}
        return {
            "suite": self.name,
            "bfcl_eval": bfcl_version(),
            "splits": list(self.splits),
            "sessions": len(plan.transcripts),
            "parallel_calls": self.parallel,
            "seeds": list(config.seeds),
            "encoders": list(config.encoders),
            "fractions": list(self.fractions),
            "longrange_fractions": list(self.longrange_fractions),
            "check": {
                "calls": plan.check.calls,
                "mismatches": [list(m) for m in plan.check.mismatches],
                "identical_text": plan.check.identical_text,
            },
            "points": [_point_row(p, self.fractions) for p in plan.points],
            "padded_points": [_point_row(p, self.fractions) for p in plan.padded],
            "longrange_points": {
                t: [_point_row(p, self.longrange_fractions) for p in ps] for t, ps in plan.longrange.items()
            },
            "facts": encoder_free_facts(plan.transcripts, plan.points),
            "lost_with_call_kept": lost,
            "cells": cells,
            "units": run_units(plan.points, encoders, self.shares),
        }

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> dict[str, Any]:
        tables: dict[str, Any] = {"policies": {}, "candidates": {}, "padded": {}, **{t: {} for t in LONGRANGE}}
        for cell in raw["cells"]:
            far = cell["table"] in LONGRANGE
            rows, fractions = (
                (raw["longrange_points"][cell["table"]], raw["longrange_fractions"])
                if far
                else (raw["padded_points" if cell["table"] == "padded" else "points"], raw["fractions"])
            )
            scores = scores_of(rows, cell, fractions.index(cell["fraction"]))
            figures = summarize(scores) if far else by_split(scores)
            by_fraction = tables[cell["table"]].setdefault(cell["encoder"], {}).setdefault(_key(cell["fraction"]), {})
            by_fraction[cell["policy"]] = figures
        for by_encoder in (*tables["policies"].values(), *tables["padded"].values()):
            for cell in by_encoder.values():
                low, high = cell[RECENCY], cell[ORACLE]
                for figures in cell.values():
                    for split, f in figures.items():
                        f["gap_closed"] = gap_closed(f["recall"], low[split]["recall"], high[split]["recall"])
        meta = {
            k: raw[k]
            for k in (
                "suite",
                "bfcl_eval",
                "splits",
                "sessions",
                "parallel_calls",
                "seeds",
                "encoders",
                "fractions",
                "longrange_fractions",
            )
        }
        summary = {
            **meta,
            "points": len(raw["points"]),
            "padded_points": len(raw["padded_points"]),
            "longrange_points": {t: len(rows) for t, rows in raw["longrange_points"].items()},
            "check": {**raw["check"], "mismatches": len(raw["check"]["mismatches"])},
            "facts": raw["facts"],
            "lost_with_call_kept": raw["lost_with_call_kept"],
            "same_as_prototype": same_as_prototype(raw),
            **tables,
        }
        units = summarize_units(raw["units"], raw["encoders"])
        same = same_as_before(raw)
        units["checks"].insert(
            0,
            {
                "claim": "in whitespace, `select(..., digests=False)` and the unit oracle keep what the old store policies and oracle "
                "keep (needed values and cost, point by point)",
                "measured": f"{same['same']}/{same['points']} points alike",
                "passed": same["same"] == same["points"],
            },
        )
        return summary | {"checks": checks(summary), "units": units}

    def render(self, summary: dict[str, Any], out: Path) -> list[Section]:
        (out / "plots").mkdir(parents=True, exist_ok=True)
        units = summary["units"]
        return [
            Section(self.name, UNITS_TITLE, tuple(unit_parts(units)), tuple(units["checks"])),
            Section(self.name, self.title, tuple(policy_parts(summary, out)), tuple(summary["checks"])),
            Section(self.name, "BFCL: the agent-policy candidates measured", tuple(candidate_parts(summary))),
        ]

    def save(self, out: Path, raw: dict[str, Any], summary: dict[str, Any]) -> None:
        for kind, data in (("raw", raw), ("summary", summary)):
            write_json(out / f"{kind}-bfcl.json", {k: v for k, v in data.items() if k != "units"})
            write_json(out / f"{kind}-bfcl-units.json", data["units"])

    def load(self, out: Path) -> dict[str, Any] | None:
        summary, units = read_json(out / "summary-bfcl.json"), read_json(out / "summary-bfcl-units.json")
        return None if summary is None or units is None else summary | {"units": units}


class _LostTally:
    """``facts.lost_with_call_kept`` summed per split over the selections it is shown."""

    def __init__(self) -> None:
        self.by_split: dict[str, list[int]] = {}

    def __call__(self, point: Point, selection: Selection) -> None:
        kept, lost = lost_with_call_kept(point, selection)
        tally = self.by_split.setdefault(point.split, [0, 0])
        tally[0] += kept
        tally[1] += lost


def same_as_before(raw: dict[str, Any]) -> dict[str, int]:
    """Points (over encoders and the fractions both tables have) where the product-unit tables'
    whitespace cells of ``PORTED`` keep the same number of needed values and the same cost as
    the old cells of the same policies, and all points compared."""
    old = {(c["encoder"], c["fraction"], c["policy"]): c for c in raw["cells"] if c["table"] == "policies"}
    same = total = 0
    for cell in raw["units"]["cells"]:
        if cell["unit"] != "whitespace" or cell["policy"] not in PORTED:
            continue
        for enc in raw["encoders"] if cell["encoder"] == ANY else (cell["encoder"],):
            before = old.get((enc, cell["share"], PORTED[cell["policy"]]))
            if before is not None:
                pairs = list(zip(cell["kept"], cell["used"], before["kept"], before["used"]))
                same += sum(a == c and b == d for a, b, c, d in pairs)
                total += len(pairs)
    return {"same": same, "points": total}


def same_as_prototype(raw: dict[str, Any]) -> dict[str, int]:
    """Points (over encoders and fractions) where the agent policy without induction and
    prototype (R) keep the same number of needed values and the same tokens, and all points
    compared."""
    cells = {(c["encoder"], c["fraction"], c["table"], c["policy"]): c for c in raw["cells"]}
    same = total = 0
    for (enc, fraction, kind, policy), cell in cells.items():
        if kind == "policies" and policy == PLAIN:
            proto = cells[(enc, fraction, "candidates", RECOMMENDED_NAME)]
            pairs = list(zip(cell["kept"], cell["used"], proto["kept"], proto["used"]))
            same += sum(a == c and b == d for a, b, c, d in pairs)
            total += len(pairs)
    return {"same": same, "points": total}


def _pooled(summary: dict[str, Any], enc: str, fraction: str, policy: str) -> dict[str, Any]:
    return summary["policies"][enc][fraction][policy]["pooled"]


def checks(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims of the suite: the replay is BFCL's, and the targets of the agent policy."""
    fractions = [_key(f) for f in s["fractions"]]
    out = [
        {
            "claim": "every replayed tool result equals BFCL's own executor",
            "measured": f"{s['check']['calls']} calls, {s['check']['mismatches']} mismatches",
            "passed": s["check"]["mismatches"] == 0,
        }
    ]
    for enc in s["encoders"]:
        gaps = [_pooled(s, enc, f, DEFAULT)["gap_closed"] for f in fractions]
        out.append(
            {
                "claim": f"store default closes >= 1/2 of the gap store-recency -> unit oracle, pooled ({enc})",
                "measured": "; ".join(f"{float(f):.0%}: {g:.2f}" for f, g in zip(fractions, gaps)),
                "passed": all(g >= 0.5 for g in gaps),
            }
        )
        margins = [
            (
                f,
                split,
                s["policies"][enc][f][DEFAULT][split]["recall"] - s["policies"][enc][f][RECENCY][split]["recall"],
            )
            for f in fractions
            for split in s["splits"]
        ]
        worst = min(margins, key=lambda m: m[2])
        out.append(
            {
                "claim": f"store default >= store-recency on each split and budget ({enc})",
                "measured": f"smallest margin {worst[2]:+.3f} ({worst[1]}, {float(worst[0]):.0%})",
                "passed": worst[2] >= 0,
            }
        )
        gains = [(f, _pooled(s, enc, f, DEFAULT)["recall"] - _pooled(s, enc, f, PLAIN)["recall"]) for f in fractions]
        out.append(
            {
                "claim": f"induction helps: store default >= the agent policy without induction, pooled ({enc})",
                "measured": "; ".join(f"{float(f):.0%}: {g:+.3f}" for f, g in gains),
                "passed": all(g >= 0 for _, g in gains),
            }
        )
    broken = sum(_pooled(s, enc, f, DEFAULT)["broken"] for enc in s["encoders"] for f in fractions)
    out.append(
        {"claim": "store default breaks no tool pair", "measured": f"{broken} broken pairs", "passed": broken == 0}
    )
    same = s["same_as_prototype"]
    out.append(
        {
            "claim": "the engine's agent policy (without induction) keeps what prototype (R) keeps",
            "measured": f"{same['same']}/{same['points']} points alike (needed values and tokens kept)",
            "passed": same["same"] == same["points"],
        }
    )
    return out


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _share(pair: Sequence[int]) -> str:
    return f"{_fmt(pair[0] / pair[1] if pair[1] else math.nan)} ({pair[0]}/{pair[1]})"


def intro(s: dict[str, Any]) -> str:
    """Data, attribution, setup and metrics of the suite."""
    return (
        "Data: the multi-turn `base` and `long_context` splits of the Berkeley Function Calling Leaderboard "
        "(BFCL) v4 (S. G. Patil, H. Mao, F. Yan, C. C.-J. Ji, V. Suresh, I. Stoica, J. E. Gonzalez, *The Berkeley "
        "Function Calling Leaderboard (BFCL): From Tool Use to Agentic Evaluation of Large Language Models*, "
        "ICML 2025; https://gorilla.cs.berkeley.edu/leaderboard.html), with BFCL's simulated APIs, read at run "
        f"time from the `bfcl-eval` {s['bfcl_eval']} wheel (Apache-2.0); nothing of BFCL is copied into this "
        "project. The other multi-turn splits are held out and never read.\n\n"
        f"The ground-truth calls of each of the {s['sessions']} sessions are replayed against the APIs into an "
        "OpenAI-style transcript (one assistant message per call, its tool message holding the result as JSON). "
        f"Before every turn after the first ({s['points']} scoring points) the history must fit "
        + " or ".join(f"{f:.0%}" for f in s["fractions"])
        + " of its whitespace tokens (the turn's user message, the query, is kept on top). **Needed-value recall**: "
        "of the leaf argument values of the turn's ground-truth calls that are neither in the query nor in the "
        "tool schema but somewhere in the history, the share held by a kept block (pooled over values); "
        "**all kept**: points keeping every needed value; **broken**: tool calls kept without their result or "
        "the reverse; **gap closed**: (recall - store-recency) / (unit oracle - store-recency), per split. Store "
        "policies go through `MemoryStore` + `compact_messages` (tool units whole, the query a live root); "
        "message-level policies through `dsgc_fast.retain` on the messages."
    )


def headline(s: dict[str, Any]) -> str:
    """One sentence per encoder: the new default beside today's, recency and the oracle."""
    parts = []
    for enc in s["encoders"]:
        cells = [
            (f, {p: _pooled(s, enc, _key(f), p) for p in (DEFAULT, TODAY, RECENCY, ORACLE)}) for f in s["fractions"]
        ]
        parts.append(
            f"{enc}: the agent policy keeps "
            + " / ".join(_fmt(c[DEFAULT]["recall"]) for _, c in cells)
            + " of the needed values ("
            + " / ".join(f"{f:.0%}" for f, _ in cells)
            + "), today's default "
            + " / ".join(_fmt(c[TODAY]["recall"]) for _, c in cells)
            + ", recency "
            + " / ".join(_fmt(c[RECENCY]["recall"]) for _, c in cells)
            + ", the unit oracle "
            + " / ".join(_fmt(c[ORACLE]["recall"]) for _, c in cells)
            + ": gap closed "
            + " / ".join(f"{c[DEFAULT]['gap_closed']:.2f}" for _, c in cells)
        )
    return "**Result.** " + "; ".join(parts) + "."


def policy_parts(s: dict[str, Any], out: Path) -> list[str]:
    """The blocks of the policies section: intro, headline, one table per encoder and budget,
    figures, claims, trace facts."""
    splits = [*s["splits"], "pooled"]
    parts = [intro(s), headline(s)]
    for enc in s["encoders"]:
        for f in s["fractions"]:
            cell = s["policies"][enc][_key(f)]
            rows = []
            for policy, label in LABELS.items():
                by = cell[policy]
                p = by["pooled"]
                rows.append(
                    (
                        f"`{policy}`",
                        label,
                        *(_fmt(by[x]["recall"]) for x in splits),
                        _fmt(p["all_kept"]),
                        p["broken"],
                        _fmt(p["used_share"]),
                        p["over_budget"],
                        " / ".join(_fmt(by[x]["gap_closed"]) for x in splits),
                    )
                )
            parts.append(f"### {enc} encoder, budget {f:.0%} of the history")
            parts.append(
                table(
                    [
                        "policy",
                        "what",
                        *(f"{x} recall" for x in splits),
                        "all kept",
                        "broken",
                        "used / budget",
                        "over budget",
                        "gap closed (" + " / ".join(splits) + ")",
                    ],
                    rows,
                )
            )
    recall = {
        f"{enc}, {f:.0%}": {p: {x: s["policies"][enc][_key(f)][p][x]["recall"] for x in splits} for p in LABELS}
        for enc in s["encoders"]
        for f in s["fractions"]
    }
    gap = {
        f"{enc}, {f:.0%}": {p: {x: s["policies"][enc][_key(f)][p][x]["gap_closed"] for x in splits} for p in LABELS}
        for enc in s["encoders"]
        for f in s["fractions"]
    }
    plots = out / "plots"
    parts.append(
        image(
            out,
            session_plots.grouped_bars(recall, splits, plots / "bfcl-recall.png", ylabel="needed-value recall"),
            "BFCL recall",
        )
    )
    parts.append(
        image(
            out,
            session_plots.grouped_bars(gap, splits, plots / "bfcl-gap.png", ylabel="gap closed", ylim=(-1.5, 2.5)),
            "BFCL gap closed",
        )
    )
    parts.append(checks_table(s["checks"]))
    parts.append("Trace facts (what the policy design rests on):")
    lines = []
    for split, f in s["facts"].items():
        audit = f["induction_audit"]
        lost = "; ".join(
            f"{r['encoder']} {r['fraction']:.0%} {_share([r['call_kept'], r['lost']])}"
            for r in s["lost_with_call_kept"]
            if r["split"] == split
        )
        lines.append(
            f"- {split}: needed values held by the turn just before the query {_share(f['previous_turn'])}; "
            f"identifiers by the prose rules among them {_share(f['identifiers'])}, values by the JSON value rules "
            f"{_share(f['json_values'])}; of the result-held values the message-level `dsgc` loses, share whose "
            f"call it kept: {lost}; induced edges (the store's induction) resting on schema vocabulary only "
            f"{_share([audit['schema_edges'], audit['edges']])}, bindings (`induce_messages` with pinned referents) "
            f"{_share([audit['schema_binds'], audit['binds']])}."
        )
    parts.append("\n".join(lines))
    return parts


def candidate_parts(s: dict[str, Any]) -> list[str]:
    """The blocks of the candidates section: what the prototypes are, one table per encoder."""
    fractions = [_key(f) for f in s["fractions"]]
    far = [_key(f) for f in s["longrange_fractions"]]
    n = s["longrange_points"]["longrange-plain"]
    parts = [
        "The agent policy was chosen among NumPy prototypes (`dsgc_bench/bfcl/agent.py`, whose docstring gives "
        "each symbol) run on the same points: a recency prior in the score (a), a reserved working window (b), "
        "unit aggregation and density (c), query -> history edges (d) and combinations (e). Candidates that lift "
        "every recent block win on BFCL but lose the old fact of plain long-range conversations (`plain` columns: "
        f"{n} conversations of the long-range suite, share of facts kept); lifting tool units only, "
        f"`{PREVIOUS_NAME}`, leaves a conversation without tools ranked as by DSGC, but carrying the query's own "
        "relevance r_q it lifts the working set over every other block, and in the tool-heavy variant of the same "
        "conversations (`tools` columns) the lifted units crowd the old fact out at small budgets. The engine's "
        f"agent policy is `{RECOMMENDED_NAME}` (the claim above checks that the engine keeps what it keeps): the "
        "same working set carrying 8 mean relevances (8/n; the n relevances sum to 1), so a block the query asks "
        "for explicitly outranks a working block once its relevance exceeds it by that margin. Measured beside it: "
        "the top history relevance (S) or the median relevance (Q) as the scale, other weights (M), a working set "
        "capped in tokens (W), the working set switched off when the query's best history match stands z standard "
        "deviations above the history's mean similarity (Z, the explicit-query gate), and such outlier blocks "
        "lifted like the newest unit (O). A z-score of the best of N blocks cannot exceed sqrt(N - 1), and BFCL's "
        "histories hold 5-25 blocks, so the `padded` columns rerun the policies marked there on every point behind "
        f"the histories of the {PADDING} sessions before its own (pooled recall, the point's own budget and needed "
        "values; `dsgc_bench/bfcl/padded.py`). Gap closed is against the store-recency and unit-oracle rows of the "
        "policies table; on the padded points store-recency and the unit oracle keep "
        + "; ".join(
            f"{enc} "
            + " / ".join(
                f"{_fmt(s['padded'][enc][f][RECENCY]['pooled']['recall'])} and "
                f"{_fmt(s['padded'][enc][f][ORACLE]['pooled']['recall'])}"
                for f in fractions
            )
            for enc in s["encoders"]
        )
        + " ("
        + " / ".join(f"{float(f):.0%}" for f in fractions)
        + "), the store default "
        + "; ".join(
            f"{enc} " + " / ".join(_fmt(s["padded"][enc][f][DEFAULT]["pooled"]["recall"]) for f in fractions)
            for enc in s["encoders"]
        )
        + ".",
    ]
    for enc in s["encoders"]:
        rows = []
        for cand in CANDIDATES:
            row: list[Any] = [f"`{cand}`"]
            for f in fractions:
                by = s["candidates"][enc][f][cand]
                base = s["policies"][enc][f]
                row += [_fmt(by[x]["recall"]) for x in (*s["splits"], "pooled")]
                row.append(
                    _fmt(
                        gap_closed(
                            by["pooled"]["recall"], base[RECENCY]["pooled"]["recall"], base[ORACLE]["pooled"]["recall"]
                        )
                    )
                )
            for variant in LONGRANGE:
                row += [_fmt(s[variant][enc][f][cand]["recall"]) for f in far]
            padded_cells = s["padded"][enc]
            row += [
                _fmt(padded_cells[f][cand]["pooled"]["recall"]) if cand in padded_cells[f] else "—" for f in fractions
            ]
            rows.append(row)
        header = ["candidate"]
        for f in fractions:
            header += [f"{x} {float(f):.0%}" for x in (*s["splits"], "pooled")] + [f"gap {float(f):.0%}"]
        for variant in LONGRANGE:
            header += [f"{variant.split('-', 1)[1].replace('tool-heavy', 'tools')} {float(f):.0%}" for f in far]
        header += [f"padded {float(f):.0%}" for f in fractions]
        parts += [f"### {enc} encoder", table(header, rows)]
    return parts
