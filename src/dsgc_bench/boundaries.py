"""What causes the paper's boundaries: the paper's 53 cells under four scenario variants.

Variants (``VARIANTS``), each a scenario generator run on every condition and seed:

- ``paper``: the paper family (``paper_family.generate``);
- ``paper-no-duplicates``: the same stores with every repeated filler copy removed;
- ``paper-no-suffix``: the same stores, queries without " Answer yes or no.";
- ``neutral``: our own generator (``scenarios.generate``).

Conditions: those of the 53 published cells (``paper_cells``) plus the targets at M = 3
(similarity-only and DSGC), for the run's encoders.  Every record is the runner's (with its
``by_size`` list: chain blocks first-fit kept after skipping a higher-ranked block) plus
``"scenarios"``, the variant.  The raw file also describes every store of the paper variants
(size, distinct fillers, largest number of copies of one filler).

The summary holds, per variant, the 53 cells with the Fisher p against the paper; the
boundary cells; per cell the successes and failures that kept a chain block by size; Table 3
(lexical profile DSGC failures) with both margins; and the checks.  It renders three report
sections: the 53-cell table, "What causes the paper's boundaries" and "The `neutral`
generator and the paper's".  Files: ``raw-boundaries.json``, ``summary-boundaries.json``.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import families, paper, paper_cells, runner
from .analysis import by_size_counts
from .families import NEUTRAL, PAPER
from .markdown import checks_table, table
from .metrics import Record, find_cell, group
from .runner import Condition
from .scenarios import Scenario
from .sections import paper_margin
from .suite import RunConfig, Section, read_json, write_json
from .templates import TARGETS

Summary = dict[str, Any]
#: the keys that identify a cell of the boundary tables
CELL_KEYS: tuple[str, ...] = ("scenarios", "encoder", "template", "method", "multiplier", "lambda_pi", "total_blocks")


@dataclass(frozen=True)
class Variant:
    """A scenario generator under test: a family and the switches of its ablation."""

    name: str
    label: str
    family: str
    options: tuple[tuple[str, bool], ...] = ()

    def generator(self) -> Callable[..., Scenario]:
        base = families.GENERATORS[self.family]
        return functools.partial(base, **dict(self.options)) if self.options else base


VARIANTS: tuple[Variant, ...] = (
    Variant("paper", "`paper` family", PAPER),
    Variant("paper-no-duplicates", "no duplicate fillers", PAPER, (("duplicates", False),)),
    Variant("paper-no-suffix", "no query suffix", PAPER, (("suffix", False),)),
    Variant(NEUTRAL, "`neutral` family", NEUTRAL),
)
LABELS = {v.name: v.label for v in VARIANTS}


def conditions(encoders: Sequence[str]) -> list[Condition]:
    """The 53 cells' conditions plus the targets at M = 3 (similarity-only and DSGC)."""
    extra = [
        Condition(template=t, encoder=e, method=m, multiplier=3.0)
        for e in encoders
        for t in TARGETS
        for m in ("similarity", "dsgc")
    ]
    return list(dict.fromkeys([*paper_cells.conditions(encoders), *extra]))


def store_record(variant: str, sc: Scenario, total_blocks: int) -> dict[str, Any]:
    """Size, distinct fillers and the largest number of copies of one filler in a store."""
    fillers = Counter(t for t, k in zip(sc.texts, sc.kinds) if k == "filler")
    return {
        "scenarios": variant,
        "template": sc.template,
        "total_blocks": total_blocks,
        "seed": sc.seed,
        "n_blocks": sc.n_blocks,
        "distinct_fillers": len(fillers),
        "max_copies": max(fillers.values(), default=0),
    }


# -- summary ---------------------------------------------------------------------------------


def tally(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per (variant, condition): runs, successes, successes and failures that kept a chain block by size."""
    return by_size_counts(records, CELL_KEYS)


def cell_table(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The 53 cells: the paper's count and, per variant, ours with the Fisher p."""
    by_variant = group(records, ("scenarios",))
    rows = []
    for cell in paper_cells.CELLS:
        row = {"source": cell.source, "label": cell.label, "published": [cell.paper_count, cell.paper_runs]}
        row.update({v.name: paper_cells.compare(cell, by_variant.get((v.name,), [])) for v in VARIANTS})
        rows.append(row)
    return rows


def table3(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The lexical profile DSGC failures at the main setting, per variant, with both margins."""
    rows = []
    for r in records:
        main = r["multiplier"] == 2.0 and r["lambda_pi"] == 1.0 and r["total_blocks"] == 20
        if r["encoder"] == "lexical" and r["template"] == "profile" and r["method"] == "dsgc" and main and r["trace"]:
            t = r["trace"]
            for d in t["displaced"]:
                rows.append(
                    {
                        "scenarios": r["scenarios"],
                        "seed": r["seed"],
                        "ranks": t["ranks"],
                        "top_non_chain": t["top_non_chain"],
                        "displaced": d["block"],
                        "rank": d["rank"],
                        "competitor": d["competitor"],
                        "caption_margin": d["margin"],
                        "paper_margin": paper_margin(t, d),
                        "by_size": r["by_size"],
                    }
                )
    return rows


def find(rows: Sequence[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    """The one row whose fields equal ``match`` (defaults: M 2, lambda_pi 1, 20 blocks)."""
    return find_cell(rows, **{"multiplier": 2.0, "lambda_pi": 1.0, "total_blocks": 20, **match})


def _agree(cells: Sequence[dict[str, Any]], variant: str) -> tuple[int, int]:
    tested = [c[variant] for c in cells if c[variant] is not None]
    return sum(t["p"] >= paper_cells.ALPHA for t in tested), len(tested)


def _table3_pattern(rows: Sequence[dict[str, Any]]) -> tuple[int, int]:
    mine = [r for r in rows if r["scenarios"] == PAPER]
    ok = [
        r
        for r in mine
        if r["displaced"] == "c1" and {r["ranks"]["c2"], r["ranks"]["c3"]} == {1, 2} and 6 <= r["rank"] <= 10
    ]
    return len(ok), len(mine)


def _rate(row: dict[str, Any] | None) -> str:
    return "n/a" if row is None else f"{row['successes']}/{row['runs']}"


def checks(
    cells: Sequence[dict[str, Any]], counts: Sequence[dict[str, Any]], t3: Sequence[dict[str, Any]]
) -> list[dict]:
    out = []
    for variant in (PAPER, NEUTRAL):
        agree, tested = _agree(cells, variant)
        if tested:
            out.append(
                {
                    "claim": f"`{variant}` family: each of the paper's 53 cells within sampling error (Fisher p >= 0.05)",
                    "measured": f"{agree}/{tested} cells",
                    "passed": agree == tested,
                }
            )
    ok, failures = _table3_pattern(t3)
    if failures:
        out.append(
            {
                "claim": "`paper` family, Table 3: every lexical profile DSGC failure ranks c2, c3 first and loses only c1, at rank 6-10",
                "measured": f"{ok}/{failures} failures",
                "passed": ok == failures,
            }
        )
    for t in TARGETS:
        dup = find(counts, scenarios=PAPER, encoder="lexical", template=t, method="dsgc", total_blocks=50)
        nodup = find(
            counts, scenarios="paper-no-duplicates", encoder="lexical", template=t, method="dsgc", total_blocks=50
        )
        if dup and nodup:
            out.append(
                {
                    "claim": f"{t} (lexical, 50 blocks): removing the duplicate filler copies raises DSGC retention",
                    "measured": f"{_rate(dup)} -> {_rate(nodup)}",
                    "passed": nodup["successes"] > dup["successes"],
                }
            )
    return out


# -- report ----------------------------------------------------------------------------------


def _count(x: dict[str, Any] | None) -> str:
    return "—" if x is None else f"{x['ours'][0]}/{x['ours'][1]}"


def _p(x: dict[str, Any] | None) -> str:
    return "—" if x is None else (f"{x['p']:.3f}" if x["p"] >= paper_cells.ALPHA else f"**{x['p']:.3f}**")


def render_cells(s: Summary) -> str:
    rows = [
        (
            c["source"],
            c["label"],
            f"{c['published'][0]}/{c['published'][1]}",
            _count(c[PAPER]),
            _p(c[PAPER]),
            _count(c[NEUTRAL]),
            _p(c[NEUTRAL]),
        )
        for c in s["cells"]
    ]
    return table(["source", "cell", "paper", "`paper` family", "Fisher p", "`neutral`", "Fisher p"], rows)


def _variant_row(counts: Sequence[dict[str, Any]], label: str, **match: Any) -> tuple[str, ...]:
    return (label, *(_rate(find(counts, scenarios=v.name, **match)) for v in VARIANTS))


#: the cells that draw the paper's boundaries: (label, condition fields)
BOUNDARY_CELLS: tuple[tuple[str, dict[str, Any]], ...] = (
    *((f"{t}, DSGC, 20 blocks", dict(template=t, method="dsgc")) for t in TARGETS),
    *((f"{t}, DSGC, 50 blocks", dict(template=t, method="dsgc", total_blocks=50)) for t in TARGETS),
    *((f"{t}, DSGC, M = 1", dict(template=t, method="dsgc", multiplier=1.0)) for t in TARGETS),
    *((f"{t}, DSGC, lambda_pi 0.5", dict(template=t, method="dsgc", lambda_pi=0.5)) for t in TARGETS),
    *(
        (f"{t}, similarity-only, M = {m:g}", dict(template=t, method="similarity", multiplier=m))
        for t in TARGETS
        for m in (2.0, 3.0, 5.0)
    ),
)


def _by_size_row(counts: Sequence[dict[str, Any]], label: str, **match: Any) -> tuple[str, ...]:
    row = find(counts, scenarios=PAPER, encoder="lexical", **match)
    if row is None:
        return (label, "—", "—", "—")
    return (
        label,
        f"{row['successes']}/{row['runs']}",
        f"{row['successes_by_size']}",
        f"{row['failures_with_by_size']}",
    )


def findings(s: Summary) -> str:
    """The mechanisms in numbers (lexical): what each switch moves."""
    counts = s["counts"]

    def rate(variant: str, **match: Any) -> str:
        return _rate(find(counts, scenarios=variant, encoder="lexical", **match))

    def kept(**match: Any) -> str:
        row = find(counts, scenarios=PAPER, encoder="lexical", **match)
        return "n/a" if row is None else f"{row['successes_by_size']} of its {row['successes']} successes"

    failures = Counter(r["scenarios"] for r in s["table3"])
    return "\n".join(
        [
            "- Copies at the cutoff: without duplicate fillers, DSGC at 50 blocks goes from "
            f"{rate(PAPER, template='role', method='dsgc', total_blocks=50)} to "
            f"{rate('paper-no-duplicates', template='role', method='dsgc', total_blocks=50)} (role) and from "
            f"{rate(PAPER, template='profile', method='dsgc', total_blocks=50)} to "
            f"{rate('paper-no-duplicates', template='profile', method='dsgc', total_blocks=50)} (profile), "
            f"and the Table 3 failures from {failures[PAPER]} to {failures['paper-no-duplicates']}.",
            "- Kept by size: at M = 1 DSGC keeps the profile chain by size in "
            f"{kept(template='profile', method='dsgc', multiplier=1.0)}, the role chain in "
            f"{kept(template='role', method='dsgc', multiplier=1.0)}; similarity-only at M = 5 in "
            f"{kept(template='profile', method='similarity', multiplier=5.0)} (profile) and "
            f"{kept(template='role', method='similarity', multiplier=5.0)} (role).",
            "- The suffix: without it, DSGC at 50 blocks goes from "
            f"{rate(PAPER, template='role', method='dsgc', total_blocks=50)} to "
            f"{rate('paper-no-suffix', template='role', method='dsgc', total_blocks=50)} (role) and from "
            f"{rate(PAPER, template='profile', method='dsgc', total_blocks=50)} to "
            f"{rate('paper-no-suffix', template='profile', method='dsgc', total_blocks=50)} (profile).",
        ]
    )


def render_boundaries(s: Summary) -> list[str]:
    counts, stores = s["counts"], s["stores"]
    parts = [
        "The paper explains its boundary cells by the one-hop radius (c1 gets no support from c3) and, "
        "at 50 blocks, by score diffusion. The one-hop radius says which block is exposed, not when it "
        "is lost; and score diffusion cannot be the mechanism: the softmax divides every r_i and every "
        "pi_i by one normalizer, so adding blocks never reorders the blocks already present, and a "
        "larger store can only hurt through new blocks that outrank a chain block. In the `paper` "
        "family three mechanisms decide the boundary cells: identical filler copies that tie and fill "
        "the budget at the cutoff, first-fit selection that keeps a short chain block by size after "
        "skipping a longer, higher-ranked block, and the query suffix, whose words generic fillers "
        "share. Each column switches one of them off on the same stores (same seeds, same draws); "
        "full-chain successes / runs, lexical encoder:",
        table(
            ["cell", *(v.label for v in VARIANTS)],
            [_variant_row(counts, label, encoder="lexical", **m) for label, m in BOUNDARY_CELLS],
        ),
        findings(s),
    ]
    if stores:
        rows = []
        for (variant, blocks), runs in group(stores, ("scenarios", "total_blocks")).items():
            rows.append(
                (
                    LABELS[variant],
                    blocks,
                    f"{min(r['n_blocks'] for r in runs)}-{max(r['n_blocks'] for r in runs)}",
                    f"{min(r['distinct_fillers'] for r in runs)}-{max(r['distinct_fillers'] for r in runs)}",
                    f"{min(r['max_copies'] for r in runs)}-{max(r['max_copies'] for r in runs)}",
                )
            )
        parts += [
            "The stores behind the table (every template and seed): blocks, distinct filler texts, and "
            "the largest number of identical copies of one filler.",
            table(["variant", "total blocks", "blocks", "distinct fillers", "copies of one filler"], rows),
        ]
    parts += [
        "First-fit keeps a chain block *by size* when it skips a higher-ranked block that does not fit "
        "and the chain block still does; prefix selection would have evicted it. Per cell of the "
        "`paper` family (lexical): successes, the successes that kept a chain block by size, and the "
        "failing runs that kept one by size:",
        table(
            ["cell", "successes", "successes by size", "failures with a block kept by size"],
            [_by_size_row(counts, label, **m) for label, m in BOUNDARY_CELLS],
        ),
        "Table 3 under each variant: every lexical profile DSGC failure at M = 2, 20 blocks; the "
        "*caption margin* is the lowest retained competitor's score minus the displaced block's (the "
        "paper's caption), the *paper margin* the top non-chain block's score minus the displaced "
        "block's (the paper's digits: 0.043, 0.007, 0.043).",
        _table3(s["table3"]),
    ]
    return parts


def _margin(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _table3(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "_No failing runs._"
    body = [
        (
            LABELS[r["scenarios"]],
            r["seed"],
            "(" + ", ".join(str(v) for v in r["ranks"].values()) + ")",
            r["top_non_chain"],
            r["displaced"],
            r["competitor"] or "—",
            _margin(r["caption_margin"]),
            _margin(r["paper_margin"]),
            ", ".join(r["by_size"]) or "—",
        )
        for r in rows
    ]
    paper_rows = [
        ("paper (Table 3)", seed, str(ranks), top, d, "—", "—", f"{mg:.3f}", "—")
        for seed, (ranks, top, d, mg) in paper.TABLE3.items()
    ]
    header = [
        "scenarios",
        "seed",
        "ranks (c1, c2, c3)",
        "top non-chain",
        "displaced",
        "competitor",
        "caption margin",
        "paper margin",
        "kept by size",
    ]
    return table(header, [*paper_rows, *body])


NEUTRAL_DIFFERENCES = (
    "What the `neutral` generator changes relative to the paper's (which the `paper` family models):\n\n"
    "- fillers: drawn without replacement from 12,000 distinct notes, each ending with its own note "
    "number, instead of with replacement from 16 generic sentences: no store holds two copies, so no "
    "tie of copies fills the budget at the cutoff, and a larger store only adds distinct fillers;\n"
    "- chain positions: the chain blocks keep their upstream order (c1 is always the oldest) instead "
    "of taking random positions in any order among the shuffled blocks;\n"
    '- queries: no " Answer yes or no." suffix, whose function words generic fillers share;\n'
    "- texts: 2-8 values per slot and 4-5 honeypots per strength (the paper's: 4 and 8); the middle "
    "block shares no word with its query (the paper's profile c2 shares a function word), and the "
    "profile c1 has 11 words (the paper's: 7, often the shortest block)."
)

#: (what the neutral family cannot show, cell label, condition fields); the paper's figure is looked up
WEAKER: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("role degrades with store size", "role, DSGC, 20 blocks", dict(template="role", method="dsgc")),
    ("", "role, DSGC, 50 blocks", dict(template="role", method="dsgc", total_blocks=50)),
    (
        "profile degrades materially",
        "profile, DSGC, 50 blocks",
        dict(template="profile", method="dsgc", total_blocks=50),
    ),
    (
        "similarity-only recovers at a loose budget",
        "role, similarity-only, M = 5",
        dict(template="role", method="similarity", multiplier=5.0),
    ),
    ("", "profile, similarity-only, M = 5", dict(template="profile", method="similarity", multiplier=5.0)),
    (
        "DSGC keeps the chain in part of the runs at M = 1",
        "role, DSGC, M = 1",
        dict(template="role", method="dsgc", multiplier=1.0),
    ),
    ("", "profile, DSGC, M = 1", dict(template="profile", method="dsgc", multiplier=1.0)),
)


def published(template: str, method: str, multiplier: float = 2.0, total_blocks: int = 20) -> str:
    """The paper's lexical figure for a target cell, as successes / 15."""
    rate = paper.TABLE6.get(("lexical", template, total_blocks)) if method == "dsgc" and multiplier == 2.0 else None
    rate = rate or paper.TABLE5.get((template, multiplier, method))
    return "—" if rate is None else f"{round(rate[0] * paper_cells.PAPER_SEEDS)}/{paper_cells.PAPER_SEEDS}"


def render_neutral(s: Summary) -> list[str]:
    counts = s["counts"]
    rows = []
    for what, label, match in WEAKER:
        mine = find(counts, scenarios=PAPER, encoder="lexical", **match)
        theirs = find(counts, scenarios=NEUTRAL, encoder="lexical", **match)
        rows.append((what, label, published(**match), _rate(mine), _rate(theirs)))
    return [
        NEUTRAL_DIFFERENCES,
        "Where it is the weaker test of the paper's claims (lexical encoder; successes / runs):",
        table(["the paper's finding", "cell", "paper", "`paper` family", "`neutral`"], rows),
        'So where a `neutral` section calls a budget or scaling claim "not supported", it measures '
        "this generator, not the paper's rule: on the `paper` family's stores the same engine "
        "reproduces the paper's cells (the 53-cell table). The `neutral` family stays the stricter "
        "test of the rule's own properties: distinct fillers up to 10,000 blocks, c1 always the oldest "
        "block, no tie of copies at the cutoff.",
    ]


# -- the suite -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundariesSuite:
    """The paper's 53 cells and the mechanisms behind its boundaries (module docstring)."""

    name: str = "boundaries"
    title: str = "What causes the paper's boundaries"
    variants: tuple[Variant, ...] = VARIANTS

    def build(self, config: RunConfig) -> list[Condition]:
        return conditions(config.encoders)

    def run(self, plan: list[Condition], config: RunConfig) -> dict[str, Any]:
        records, stores = [], []
        for v in self.variants:
            generate = v.generator()
            for r in runner.run(plan, config.seeds, config.encodings, impl=config.impl, generator=generate):
                records.append({**r, "scenarios": v.name})
            if v.family == PAPER:
                keys = dict.fromkeys((c.template, c.total_blocks) for c in plan)
                stores += [
                    store_record(v.name, generate(t, s, total_blocks=n), n) for t, n in keys for s in config.seeds
                ]
        meta = {"suite": self.name, "seeds": list(config.seeds), "encoders": list(config.encoders), "impl": config.impl}
        return {**meta, "variants": [v.name for v in self.variants], "stores": stores, "records": records}

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> Summary:
        counts, t3 = tally(raw["records"]), table3(raw["records"])
        cells = cell_table(raw["records"])
        meta = {k: raw[k] for k in ("suite", "seeds", "encoders", "impl", "variants", "stores")}
        return {**meta, "cells": cells, "counts": counts, "table3": t3, "checks": checks(cells, counts, t3)}

    def render(self, summary: Summary, out: Path) -> list[Section]:
        n = len(summary["seeds"])
        agree = {v: _agree(summary["cells"], v) for v in (PAPER, NEUTRAL)}
        cells_intro = (
            f"Each published figure against ours over {n} seeds: the paper's successes / runs (its rate "
            "times its runs: 15 seeds per condition, 30 for a Table 1 regime row, 60 for the recency "
            "figure), ours, and the two-sided Fisher exact p of the two counts (bold: p < 0.05). "
            f"Within sampling error: `paper` family {agree[PAPER][0]}/{agree[PAPER][1]}, `neutral` "
            f"{agree[NEUTRAL][0]}/{agree[NEUTRAL][1]}."
        )
        runs = sum(r["runs"] for r in summary["counts"])
        overview = (n, ", ".join(summary["encoders"]), summary["impl"], runs)
        checks_part = checks_table(summary["checks"])
        return [
            Section(
                "paper-cells",
                "The paper's 53 cells: paper, `paper` family, `neutral`",
                (cells_intro, render_cells(summary)),
            ),
            Section(
                self.name, self.title, (*render_boundaries(summary), checks_part), tuple(summary["checks"]), overview
            ),
            Section("neutral", "The `neutral` generator and the paper's", tuple(render_neutral(summary))),
        ]

    def save(self, out: Path, raw: dict[str, Any], summary: Summary) -> None:
        write_json(out / f"raw-{self.name}.json", raw)
        write_json(out / f"summary-{self.name}.json", summary)

    def load(self, out: Path) -> Summary | None:
        return read_json(out / f"summary-{self.name}.json")
