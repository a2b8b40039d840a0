"""The analyses of the paper's suites: one ``analyze_<suite>`` per suite.

Each takes a suite's raw records and its aggregated cells (mean / std per grid cell) and
returns ``(analysis, checks)``: suite-specific tables, and each claim of the benchmark or
prediction of the paper with the measured value and whether our data supports it
(``passed`` is None when the suite did not run what the claim needs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import diagnostics, paper
from .grid import ENCODERS, KHOP_METHODS, LAMBDAS, MULTIPLIERS, NOISE_RATES
from .metrics import Record, aggregate, find_cell, group, paired
from .noise import SPURIOUS_KINDS
from .templates import CONTROLS, STRENGTHS, TARGETS

Cell = dict[str, Any]


def value(cells: Sequence[Cell], metric: str = "full_chain", **match: Any) -> float | None:
    """The ``metric`` of the one cell matching ``match`` (None if absent)."""
    cell = find_cell(cells, **match)
    return None if cell is None else cell[metric]


def series(cells: Sequence[Cell], key: str, levels: Iterable[Any], **match: Any) -> list[float] | None:
    """The full-chain values y_k = value(cells, **match, key=levels[k]), one per level in order.

    None when any of those cells is absent: a claim over the series then has nothing to test.
    """
    got = [value(cells, **match, **{key: x}) for x in levels]
    present = [x for x in got if x is not None]
    return present if len(present) == len(got) else None


def check(claim: str, measured: str, passed: bool | None) -> dict[str, Any]:
    return {"claim": claim, "measured": measured, "passed": passed}


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def trace_rows(records: Sequence[Record]) -> list[dict[str, Any]]:
    """One row per failing run: where it happened plus its diagnostic trace."""
    keep = ("encoder", "template", "method", "seed", "total_blocks", "multiplier", "lambda_pi")
    return [{**{k: r[k] for k in keep}, **r["trace"]} for r in records if r["trace"] is not None]


def class_counts(records: Sequence[Record], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Failing runs per failure class (``diagnostics.CLASSES``) for each ``keys`` group."""
    rows = []
    for key, runs in group([r for r in records if r["trace"] is not None], keys).items():
        counts = {c: sum(r["trace"]["class"] == c for r in runs) for c in diagnostics.CLASSES}
        rows.append({**dict(zip(keys, key)), "failures": len(runs), **counts})
    return rows


def _regime_cells(records: Sequence[Record]) -> list[Cell]:
    return aggregate(records, ("encoder", "regime", "method"))


def analyze_main(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    regime = _regime_cells(records)
    same = {}
    for enc, runs in group(records, ("encoder",)).items():
        pairs = paired(runs, ("template",), "method", "similarity", "no_graph")
        same[enc[0]] = {"pairs": len(pairs), "identical": sum(a["retained"] == b["retained"] for a, b in pairs)}
    checks = []
    for enc in ENCODERS:
        ctrl = [c for c in cells if c["encoder"] == enc and c["template"] in CONTROLS]
        if ctrl:
            low = min(c["full_chain"] for c in ctrl)
            checks.append(check(f"controls >= 0.95 for every policy ({enc})", f"lowest cell {low:.2f}", low >= 0.95))
        if enc in same:
            s = same[enc]
            checks.append(
                check(
                    f"no-graph identical to similarity-only run by run ({enc})",
                    f"{s['identical']}/{s['pairs']} runs keep the same blocks",
                    s["pairs"] > 0 and s["identical"] == s["pairs"],
                )
            )
    for enc, method, op, bound in (
        ("lexical", "similarity", "<=", 0.35),
        ("lexical", "dsgc", ">=", 0.85),
        ("sentence", "dsgc", ">=", 0.95),
    ):
        got = value(regime, encoder=enc, regime="target", method=method)
        ok = None if got is None else (got <= bound if op == "<=" else got >= bound)
        checks.append(check(f"targets, {method} {op} {bound} ({enc})", _fmt(got), ok))
    analysis = {
        "regime_cells": regime,
        "no_graph_vs_similarity": same,
        "traces": trace_rows(records),
        "class_counts": class_counts(records, ("encoder", "regime", "method")),
    }
    return analysis, checks


def analyze_lambda(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    checks = []
    for enc in ENCODERS:
        for t in TARGETS:
            sim = value(cells, encoder=enc, template=t, method="similarity")
            ours = series(cells, "lambda_pi", LAMBDAS, encoder=enc, template=t, method="dsgc")
            if sim is None or ours is None:
                continue
            checks.append(
                check(
                    f"{t} ({enc}): DSGC beats similarity-only at every lambda_pi",
                    f"sim {sim:.2f}; DSGC " + " / ".join(f"{x:.2f}" for x in ours),
                    all(x > sim for x in ours),
                )
            )
    lex = series(cells, "lambda_pi", LAMBDAS, encoder="lexical", template="profile", method="dsgc")
    if lex is not None:
        checks.append(
            check(
                "profile (lexical) does not decrease as lambda_pi grows (paper: 0.67 -> 0.80 -> 0.87)",
                " -> ".join(f"{x:.2f}" for x in lex),
                lex[0] <= lex[1] <= lex[2],
            )
        )
    return {"class_counts": class_counts(records, ("encoder", "method", "lambda_pi"))}, checks


def analyze_budget(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    checks = []
    for enc in ENCODERS:
        gaps = {}
        for m in MULTIPLIERS:
            d = series(cells, "template", TARGETS, encoder=enc, method="dsgc", multiplier=m)
            s = series(cells, "template", TARGETS, encoder=enc, method="similarity", multiplier=m)
            if d is not None and s is not None:
                gaps[m] = sum(d) / len(d) - sum(s) / len(s)
        if {1.0, 2.0, 5.0} <= set(gaps):
            checks.append(
                check(
                    f"targets ({enc}): the DSGC - similarity gap at M=2 exceeds the gaps at M=1 and M=5",
                    ", ".join(f"M={m:g}: {g:+.2f}" for m, g in gaps.items()),
                    gaps[2.0] > gaps[1.0] and gaps[2.0] > gaps[5.0],
                )
            )
    rec = [r for r in records if r["method"] == "recency" and r["multiplier"] == 2.0 and r["encoder"] == "lexical"]
    if rec:
        mean = sum(r["full_chain"] for r in rec) / len(rec)
        checks.append(
            check(
                f"recency keeps the full chain rarely (paper: {paper.RECENCY_ALL_TEMPLATES:.2f}, lexical, M=2, all templates)",
                f"{mean:.2f}",
                mean <= 0.25,
            )
        )
    return {}, checks


def analyze_scaling(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    sizes = sorted({c["total_blocks"] for c in cells})
    checks = []
    for t in TARGETS:
        a = value(cells, encoder="lexical", template=t, method="dsgc", total_blocks=20)
        b = value(cells, encoder="lexical", template=t, method="dsgc", total_blocks=50)
        if a is not None and b is not None:
            p20, p50 = paper.TABLE6[("lexical", t, 20)][0], paper.TABLE6[("lexical", t, 50)][0]
            checks.append(
                check(
                    f"{t} (lexical): DSGC degrades from 20 to 50 blocks (paper {p20:.2f} -> {p50:.2f})",
                    f"{a:.2f} -> {b:.2f}",
                    b < a,
                )
            )
        s = value(cells, encoder="sentence", template=t, method="dsgc", total_blocks=50)
        if s is not None:
            checks.append(
                check(f"{t} (sentence): DSGC stays saturated at 50 blocks (paper 1.00)", f"{s:.2f}", s >= 0.95)
            )
    for t in TARGETS:
        curve = series(cells, "total_blocks", sizes, encoder="lexical", template=t, method="dsgc")
        if curve:
            checks.append(
                check(
                    f"{t} (lexical): one-hop DSGC degrades somewhere as the store grows to {max(sizes):,} blocks",
                    " -> ".join(f"{x:.2f}" for x in curve),
                    min(curve) < curve[0],
                )
            )
    for enc in ENCODERS:
        largest = max(sizes, default=0)
        for m in ("dsgc_k2", "dsgc_norm"):
            one = series(cells, "template", TARGETS, encoder=enc, method="dsgc", total_blocks=largest)
            fix = series(cells, "template", TARGETS, encoder=enc, method=m, total_blocks=largest)
            if one is None or fix is None:
                continue
            checks.append(
                check(
                    f"targets ({enc}, {largest:,} blocks): {m} repairs the one-hop rule's degradation",
                    "one hop " + " / ".join(f"{x:.2f}" for x in one) + f"; {m} " + " / ".join(f"{x:.2f}" for x in fix),
                    all(f >= max(o, 0.85) for f, o in zip(fix, one)),
                )
            )
    return {"class_counts": class_counts(records, ("encoder", "method", "total_blocks"))}, checks


def transitions(records: Sequence[Record], base: str, other: str) -> list[dict[str, Any]]:
    """Run by run, per (encoder, template, blocks): seeds ``other`` recovers and newly loses vs ``base``."""
    rows = []
    for key, runs in group(records, ("encoder", "template", "total_blocks")).items():
        pairs = paired(runs, (), "method", base, other)
        rows.append(
            {
                **dict(zip(("encoder", "template", "total_blocks"), key)),
                "method": other,
                "base_failures": sorted(a["seed"] for a, _ in pairs if not a["full_chain"]),
                "recovered": sorted(a["seed"] for a, b in pairs if not a["full_chain"] and b["full_chain"]),
                "new_failures": sorted(a["seed"] for a, b in pairs if a["full_chain"] and not b["full_chain"]),
            }
        )
    return rows


def analyze_khop(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    rows = [row for m in KHOP_METHODS[1:] for row in transitions(records, KHOP_METHODS[0], m)]
    checks = []
    for (enc, blocks, m), mine in group(rows, ("encoder", "total_blocks", "method")).items():
        failures = sum(len(r["base_failures"]) for r in mine)
        recovered = sum(len(r["recovered"]) for r in mine)
        new = sum(len(r["new_failures"]) for r in mine)
        checks.append(
            check(
                f"{m} ({enc}, {blocks:,} blocks) recovers every one-hop failure and adds no new one",
                f"recovered {recovered}/{failures}; new failures {new}",
                recovered == failures and new == 0,
            )
        )
    analysis = {"transitions": rows, "class_counts": class_counts(records, ("encoder", "method", "total_blocks"))}
    return analysis, checks


def _lifted_by_spurious(r: Record) -> bool:
    """A failing run in which a block lifted by a spurious edge took budget ahead of a displaced chain block."""
    lifted = {i for _, i in r.get("edges_added", [])}
    return r["trace"] is not None and any(lifted.intersection(d["ahead"]) for d in r["trace"]["displaced"])


def analyze_graph_noise(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    effects = []
    for key, runs in group(
        [r for r in records if r["noise"] != "none"], ("encoder", "template", "noise", "noise_rate")
    ).items():
        enc, t = key[0], key[1]
        clean = value(cells, encoder=enc, template=t, method="dsgc", noise="none")
        mean = sum(r["full_chain"] for r in runs) / len(runs)
        effects.append(
            {
                **dict(zip(("encoder", "template", "noise", "noise_rate"), key)),
                "loss": None if clean is None else clean - mean,
                "failures_lifted_by_spurious_edge": sum(_lifted_by_spurious(r) for r in runs),
            }
        )
    checks = []
    for enc in ENCODERS:
        floor = {c["template"]: c["full_chain"] for c in cells if c["encoder"] == enc and c["method"] == "similarity"}
        margins = {
            kind: [c["full_chain"] - floor[c["template"]] for c in cells if c["encoder"] == enc and c["noise"] == kind]
            for kind in ("drop", *SPURIOUS_KINDS)
        }
        if not floor or not all(margins.values()):
            continue
        checks.append(
            check(
                f"missing edges only fall back towards similarity-only ({enc}): DSGC with dropped edges never below it",
                f"smallest margin over similarity-only {min(margins['drop']):+.2f}",
                min(margins["drop"]) >= 0,
            )
        )
        for kind in SPURIOUS_KINDS:
            lifted = sum(
                e["failures_lifted_by_spurious_edge"] for e in effects if e["encoder"] == enc and e["noise"] == kind
            )
            checks.append(
                check(
                    f"the paper's prediction: a block lifted by a spurious edge displaces a chain block ({enc}, {kind})",
                    f"failing runs with a lifted block retained ahead of the displaced one: {lifted}",
                    lifted > 0,
                )
            )
            checks.append(
                check(
                    f"our prediction: spurious edges push DSGC below the similarity-only floor ({enc}, {kind})",
                    f"smallest margin over similarity-only {min(margins[kind]):+.2f}",
                    min(margins[kind]) < 0,
                )
            )
    return {"effects": effects, "rates": list(NOISE_RATES)}, checks


def by_size_counts(records: Sequence[Record], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Per ``keys`` group: runs, full-chain successes, and the successes and failures that kept a chain block by size."""
    rows = []
    for key, runs in group(records, keys).items():
        wins = [r for r in runs if r["full_chain"]]
        rows.append(
            {
                **dict(zip(keys, key)),
                "runs": len(runs),
                "successes": len(wins),
                "successes_by_size": sum(bool(r["by_size"]) for r in wins),
                "failures_with_by_size": sum(bool(r["by_size"]) for r in runs if not r["full_chain"]),
            }
        )
    return rows


def analyze_honeypot(records: Sequence[Record], cells: Sequence[Cell]) -> tuple[dict, list]:
    wins = by_size_counts(records, ("encoder", "template", "method", "honeypot"))
    checks = []
    for enc in ENCODERS:
        for t in (*CONTROLS, *TARGETS):
            sims = series(cells, "honeypot", STRENGTHS, encoder=enc, template=t, method="similarity")
            rescued = [find_cell(wins, encoder=enc, template=t, method="similarity", honeypot=h) for h in STRENGTHS]
            if sims is None or None in rescued:
                continue
            checks.append(
                check(
                    f"our prediction: similarity-only does not gain as honeypots get stronger ({t}, {enc})",
                    " / ".join(f"{h} {x:.2f}" for h, x in zip(STRENGTHS, sims))
                    + "; successes kept by size "
                    + " / ".join(f"{w['successes_by_size']}/{w['successes']}" for w in rescued),
                    sims[0] >= sims[1] >= sims[2],
                )
            )
        easy_ctrl = [
            value(cells, encoder=enc, template=t, method=m, honeypot="easy")
            for t in CONTROLS
            for m in ("similarity", "dsgc")
        ]
        if None not in easy_ctrl:
            checks.append(
                check(
                    f"our prediction: easy honeypots are too weak to challenge the controls ({enc})",
                    f"lowest control cell {min(easy_ctrl):.2f}",
                    min(easy_ctrl) >= 0.95,
                )
            )
    analysis = {"class_counts": class_counts(records, ("encoder", "method", "honeypot")), "by_size": wins}
    return analysis, checks
