"""The product-unit tables: every policy and anchor in whitespace and in model tokens, side by side.

``run_units(points, encoders, shares)``: for each cost unit of ``units.UNITS`` the points in
that unit (``units.in_unit``), and for each share of the history (``SHARES``: 10%, 25%, 50%
of everything but the live roots, on top of the roots) every policy of ``anchors.POLICIES``
on every point, scored on what it sends (``units.score_sent``).  Policies that read the
encoder run once per encoder (each with a ``SelectCache`` of the run's encoder); the others
once, their cells shown under every encoder.  ``summarize_units``: ``metrics.by_split`` of
every (unit, encoder, share, policy) with the sent-text counts, and the claims.
``unit_parts``: one table per encoder and share, whitespace and model-token recall side by
side per split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dsgc_fast import SelectCache

from ..markdown import table
from .anchors import POLICIES, Context, clear_source
from .metrics import by_split, summarize
from .points import Point
from .units import UNITS, SentScore, in_unit, score_sent

#: shares of the history (beyond the live roots) the budgets give
SHARES: tuple[float, ...] = (0.10, 0.25, 0.50)
#: the per-point columns of a cell
COLUMNS: tuple[str, ...] = ("kept", "broken", "invalid", "used", "over_budget", "misreported")
#: encoder label of the cells of policies that read no encoder
ANY = "any"
DEFAULT, RECENCY, ORACLE, DIGEST = "store-default", "store-recency", "oracle-units", "oracle-digest"
#: the anchors the store default must match or beat (issue 25's targets)
ANCHORS: tuple[str, ...] = (RECENCY, "clear-tool-uses", "observation-masking")
#: issue 25's targets for the store default's pooled recall in model tokens, by share
TARGETS: dict[str, float] = {"0.10": 0.65, "0.25": 0.75, "0.50": 0.90}


def share_key(share: float) -> str:
    return f"{share:.2f}"


def run_units(points: Sequence[Point], encoders: Mapping[str, Any], shares: Sequence[float]) -> dict[str, Any]:
    """Every policy in every unit at every share (module docstring): points' rows and cells."""
    caches = {name: SelectCache(encoder) for name, encoder in encoders.items()}
    runs = [
        (policy, encoder, rule, Context(unit, caches[encoder if reads_encoder else next(iter(caches))]))
        for unit in UNITS
        for policy, (_, rule, reads_encoder) in POLICIES.items()
        for encoder in (caches if reads_encoder else (ANY,))
    ]
    rows: list[dict[str, Any]] = [
        {"session": p.session, "split": p.split, "turn": p.turn, "needed": len(p.needed)} for p in points
    ]
    cols: dict[tuple[str, str, str, float], dict[str, list[int]]] = {
        (c.unit, policy, enc, share): {k: [] for k in COLUMNS} for policy, enc, _, c in runs for share in shares
    }
    for unit in UNITS:
        # point by point, so that every select call on a point reuses its parsed history
        for p, row in zip((in_unit(p, unit) for p in points), rows):
            row.setdefault("budgets", {})[unit] = budgets = [p.budget(s) for s in shares]
            for policy, encoder, rule, context in runs:
                if context.unit != unit:
                    continue
                for share, budget in zip(shares, budgets):
                    got = score_sent(p, rule(p, budget, context), budget, context.counter)
                    for name, col in cols[(unit, policy, encoder, share)].items():
                        col.append(int(getattr(got, name)))
    cells = [
        {"unit": unit, "encoder": encoder, "share": share, "policy": policy, **c}
        for (unit, policy, encoder, share), c in cols.items()
    ]
    return {
        "shares": list(shares),
        "units": list(UNITS),
        "policies": list(POLICIES),
        "clear_tool_uses": clear_source(),
        "points": rows,
        "cells": cells,
    }


def _scores(rows: Sequence[dict[str, Any]], cell: dict[str, Any], index: int) -> list[SentScore]:
    return [
        SentScore(
            r["session"], r["split"], r["turn"], r["needed"], kept, broken, used, r["budgets"][cell["unit"]][index],
            bool(over), invalid, wrong,
        )
        for r, kept, broken, invalid, used, over, wrong in zip(rows, *(cell[c] for c in COLUMNS))
    ]  # fmt: skip


def summarize_sent(scores: Sequence[SentScore]) -> dict[str, Any]:
    """``metrics.summarize`` with the transcript problems and cost mismatches summed, and the
    points that spent more than their budget although the roots fit (``over_spent``)."""
    return {
        **summarize(scores),
        "invalid": sum(s.invalid for s in scores),
        "misreported": sum(s.misreported for s in scores),
        "over_spent": sum(s.used > s.budget and not s.over_budget for s in scores),
    }


def summarize_units(raw: dict[str, Any], encoders: Sequence[str]) -> dict[str, Any]:
    """``tables[unit][encoder][share][policy][split]`` (``by_split`` with the sent-text counts) and the claims."""
    shares = raw["shares"]
    tables: dict[str, Any] = {u: {e: {share_key(s): {} for s in shares} for e in encoders} for u in raw["units"]}
    for cell in raw["cells"]:
        index = shares.index(cell["share"])
        figures = by_split(_scores(raw["points"], cell, index), summary=summarize_sent)
        for enc in encoders if cell["encoder"] == ANY else (cell["encoder"],):
            tables[cell["unit"]][enc][share_key(cell["share"])][cell["policy"]] = figures
    splits = sorted({r["split"] for r in raw["points"]})
    summary = {
        "shares": shares,
        "units": raw["units"],
        "splits": splits,
        "encoders": list(encoders),
        "clear_tool_uses": raw["clear_tool_uses"],
        "tables": tables,
    }
    return summary | {"checks": unit_checks(summary)}


def unit_checks(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims of the product-unit tables (model tokens)."""
    tokens = s["tables"]["tokens"]
    every = [
        cell for unit in s["tables"].values() for enc in unit.values() for sh in enc.values() for cell in sh.values()
    ]
    out = [
        {
            "claim": "the charged cost of what `select` sends equals its `used`, at every point",
            "measured": f"{sum(c['pooled']['misreported'] for c in every)} points differ",
            "passed": all(c["pooled"]["misreported"] == 0 for c in every),
        },
        {
            "claim": "every policy and anchor stays within its budget whenever the live roots fit",
            "measured": f"{sum(c['pooled']['over_spent'] for c in every)} points over",
            "passed": all(c["pooled"]["over_spent"] == 0 for c in every),
        },
    ]
    for enc in s["encoders"]:
        cells = tokens[enc]
        broken = sum(cells[f][DEFAULT]["pooled"]["broken"] + cells[f][DEFAULT]["pooled"]["invalid"] for f in cells)
        out.append(
            {
                "claim": f"store default: 0 broken pairs, every sent transcript valid, model tokens ({enc})",
                "measured": f"{broken} broken pairs and transcript problems",
                "passed": broken == 0,
            }
        )
        recalls = {f: cells[f][DEFAULT]["pooled"]["recall"] for f in cells}
        out.append(
            {
                "claim": "store default pooled recall >= 0.65 / 0.75 / 0.90 at 10% / 25% / 50%, model tokens "
                f"({enc}; issue 25)",
                "measured": " / ".join(_fmt(recalls[f]) for f in recalls),
                "passed": all(recalls[f] >= TARGETS.get(f, 0.0) for f in recalls),
            }
        )
        margins = [
            (f, split, cells[f][DEFAULT][split]["recall"] - max(cells[f][a][split]["recall"] for a in ANCHORS))
            for f in cells
            for split in (*s["splits"], "pooled")
        ]
        worst = min(margins, key=lambda m: m[2])
        out.append(
            {
                "claim": "store default >= the best of store recency, `clear_tool_uses` and masking on every split "
                f"and share, model tokens ({enc}; issue 25)",
                "measured": f"smallest margin {worst[2]:+.3f} ({worst[1]}, {float(worst[0]):.0%})",
                "passed": worst[2] >= 0,
            }
        )
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def unit_parts(s: dict[str, Any]) -> list[str]:
    """The blocks of the product-unit section: the rule, one table per encoder and share."""
    splits = [*s["splits"], "pooled"]
    parts = [
        "Every policy, anchor and oracle is charged what the store charges: each message's tokens exactly as "
        "`MemoryStore` and `select` count them by default (`token_counts.block_tokens`: o200k_base with chat "
        "framing), beside the suite's former unit, whitespace words of the message text. The budget at share f "
        "is the cost of the live roots (system messages, the newest user turn) plus f times the cost of the rest "
        "of the history. Recall is scored on the text each policy **sends**: a needed value counts when a sent "
        "message (or an oracle's `key: value` line) holds it, so a cleared, masked, cut or digested tool result "
        "keeps only the values its sent text holds. Anchors: Anthropic's `clear_tool_uses` as LangChain's "
        "`ClearToolUsesEdit` (trigger = the budget, `clear_at_least` = the excess, the newest 3 results never "
        "cleared: older results are cleared oldest first until the history fits), then the oldest units dropped "
        "until it does; observation masking (the newest 10 tool outputs "
        "kept, older ones blanked, then the oldest units dropped). The digest oracle works on values: a needed "
        "value held by a tool result may be kept as one `key: value` line charged its own tokens (no framing, "
        "no call), an optimistic bound for any policy that digests. Each recall cell is whitespace / model "
        "tokens; *broken*: calls sent without their result or the reverse; *invalid*: transcript problems "
        "(a result answering no sent call, a call without its result, a root not sent, order); both in model "
        f"tokens, summed over the splits. `clear-tool-uses` decided by: {s['clear_tool_uses']}.",
    ]
    overview = []
    for policy in POLICIES:
        overview.append(
            (
                f"`{policy}`",
                *(
                    f"{_fmt(s['tables']['tokens'][enc][share_key(f)][policy]['pooled']['recall'])} "
                    f"({_fmt(s['tables']['whitespace'][enc][share_key(f)][policy]['pooled']['recall'])})"
                    for enc in s["encoders"]
                    for f in s["shares"]
                ),
            )
        )
    parts.append(
        "Pooled needed-value recall over "
        + " + ".join(f"`{x}`" for x in s["splits"])
        + ", model tokens (whitespace in parentheses):"
    )
    parts.append(table(["policy", *(f"{enc} {f:.0%}" for enc in s["encoders"] for f in s["shares"])], overview))
    for enc in s["encoders"]:
        for share in s["shares"]:
            f = share_key(share)
            rows = []
            for policy, (label, _, _) in POLICIES.items():
                ws, tk = s["tables"]["whitespace"][enc][f][policy], s["tables"]["tokens"][enc][f][policy]
                rows.append(
                    (
                        f"`{policy}`",
                        label,
                        *(f"{_fmt(ws[x]['recall'])} / {_fmt(tk[x]['recall'])}" for x in splits),
                        f"{_fmt(ws['pooled']['all_kept'])} / {_fmt(tk['pooled']['all_kept'])}",
                        tk["pooled"]["broken"],
                        tk["pooled"]["invalid"],
                        _fmt(tk["pooled"]["used_share"]),
                        tk["pooled"]["over_budget"],
                    )
                )
            header = [
                "policy",
                "what",
                *(f"{x} recall (ws / tokens)" for x in splits),
                "all kept (ws / tokens)",
                "broken",
                "invalid",
                "used / budget (tokens)",
                "over budget",
            ]
            parts += [f"### {enc} encoder, {share:.0%} of the history", table(header, rows)]
    return parts
