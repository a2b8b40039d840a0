"""``dsgc-bench longrange``: old personal facts, and the agent policy where there are no tools.

Three measurements per encoder, all deterministic per seed:

1. **Facts kept.**  The conversations of ``longrange`` (one per seed and kind; a fact
   stated once early on, asked about dozens of messages later among same-kind
   distractors), plain and tool-heavy, at budgets of ``FRACTIONS`` of the history, under
   ``POLICIES`` (the BFCL replay's policies of those names): the share of conversations
   whose fact turn is kept, and broken tool pairs.
2. **Hubs.**  The history of every conversation of the first ``HUB_SEEDS`` seeds asked
   each question of ``longrange.PROBES`` in place of its own, at ``HUB_FRACTIONS``, under
   the store default (the agent policy with induced edges), the agent policy without
   induction and with the hand annotations of the batch ``trace_edges``/``induce``: how
   often each history block is kept across the probes.  Reported: the largest share over
   blocks, the blocks kept for every probe (those in the working set, tool calls and
   results, apart), and the blocks induction (or the annotations) alone make kept for every
   probe (kept by every probe with them, not without).
3. **The agent policy without tool units.**  Working-set support needs tool units, so on
   the paper's suites the agent policy must rank as DSGC: every DSGC run of the main suite
   on the neutral family (the paper family places prerequisites after their dependents, which
   a store cannot hold) (its grid, scenarios and budgets) repeated through a ``MemoryStore`` with its default
   (agent) parameters, kept blocks compared with the main suite's own ``dsgc_fast.retain``
   call; and the referent sessions with the agent policy beside DSGC, with and without
   pins (orphan rates, ``referents.evaluate``).

Files: ``raw-longrange.json`` (every conversation's outcome), ``summary-longrange.json``
(aggregates and claims), ``plots/longrange.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dsgc_fast import MemoryStore
from dsgc_fast.memory.messages import message_text

from . import grid, longrange, runner, session_plots
from .bfcl.metrics import broken_pairs, kept_values
from .bfcl.points import Point
from .bfcl.policies import Embeddings, Policy, baselines
from .families import GENERATORS, NEUTRAL
from .markdown import checks_table, image, table
from .referent_sessions import generate_all
from .referents import Prepared, Variant, evaluate
from .scenarios import Scenario
from .suite import RunConfig, Section, read_json, write_json

FRACTIONS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20, 0.25)
HUB_FRACTIONS: tuple[float, ...] = (0.25,)
#: the hub check asks its probes of the conversations of this many seeds (the first ones)
HUB_SEEDS = 5
VARIANTS: tuple[str, ...] = ("plain", "tool-heavy")
#: the policies compared, with what the tables say they are
LABELS: dict[str, str] = {
    "recency-first-fit": "recency (message level, first fit)",
    "similarity": "similarity only (message level)",
    "dsgc": "paper DSGC (message level, `trace_edges`)",
    "store-dsgc": 'store, `policy="dsgc"` (the old default)',
    "store-default": "store default: **the agent policy**, induced edges",
    "store-no-induction": "the agent policy without induction",
    "store-annotated": "agent policy + hand annotations from the batch `trace_edges`/`induce`",
}
AGENT, PLAIN, ANNOTATED = "store-default", "store-no-induction", "store-annotated"
#: the policies of the hub check, and the one each is compared with
HUB_POLICIES: dict[str, str | None] = {PLAIN: None, AGENT: PLAIN, ANNOTATED: PLAIN}
#: the referent-session variants of measurement 3
REFERENT_VARIANTS: tuple[Variant, ...] = (
    Variant("dsgc", "dsgc", False),
    Variant("agent", "agent", False),
    Variant("dsgc+pins", "dsgc", True),
    Variant("agent+pins", "agent", True),
)
_TOOL_KINDS = ("call", "result")


@dataclass(frozen=True)
class Plan:
    """The conversations of both variants, and the main suite's DSGC conditions and scenarios."""

    conversations: dict[str, list[longrange.Conversation]]
    main: list[tuple[runner.Condition, Scenario]]
    referents: list[Prepared]


def _history_kept(point: Point, retained: np.ndarray) -> np.ndarray:
    """Mask over the history (the query left out) of the kept blocks."""
    mask = np.zeros(point.query, dtype=bool)
    kept = retained[retained < point.query]
    mask[kept] = True
    return mask


@dataclass(frozen=True)
class Arm:
    """What records are measured under: the chat variant, the encoder (name, embeddings), the policies."""

    variant: str
    encoder: str
    emb: Embeddings
    rules: dict[str, Policy]

    def cell(self, fraction: float, policy: str, session: str) -> dict[str, Any]:
        """The fields naming a record's cell and conversation."""
        return {
            "variant": self.variant,
            "encoder": self.encoder,
            "fraction": fraction,
            "policy": policy,
            "session": session,
        }


def fact_records(convs: Sequence[longrange.Conversation], arm: Arm, fractions: Sequence[float]) -> list[dict[str, Any]]:
    """One record per conversation, budget and policy: fact kept, broken pairs, tokens."""
    out = []
    for conv in convs:
        point = longrange.to_point(conv)
        for fraction in fractions:
            budget = point.budget(fraction)
            for policy in LABELS:
                sel = arm.rules[policy](point, arm.emb, budget)
                out.append(
                    {
                        **arm.cell(fraction, policy, conv.session),
                        "kept": bool(kept_values(point, sel)[0]),
                        "broken": broken_pairs(point, sel.retained.tolist()),
                        "budget": budget,
                        "history": int(point.costs[: point.query].sum()),
                    }
                )
    return out


def hub_records(convs: Sequence[longrange.Conversation], arm: Arm, fractions: Sequence[float]) -> list[dict[str, Any]]:
    """One record per conversation, budget and store policy: keep counts over the probes."""
    out = []
    for conv in convs:
        probes = [longrange.to_point(conv, q) for q in longrange.PROBES]
        tools = np.array([k in _TOOL_KINDS for k in probes[0].kinds[: probes[0].query]])
        for fraction in fractions:
            always = {}
            for policy, base in HUB_POLICIES.items():
                counts = sum(
                    _history_kept(p, arm.rules[policy](p, arm.emb, p.budget(fraction)).retained).astype(int)
                    for p in probes
                )
                always[policy] = counts == len(probes)
                top = int(counts.max())
                out.append(
                    {
                        **arm.cell(fraction, policy, conv.session),
                        "probes": len(probes),
                        "blocks": int(tools.size),
                        "max_kept": top,
                        "max_kinds": sorted({probes[0].kinds[i] for i in np.flatnonzero(counts == top)}),
                        "always": int(always[policy].sum()),
                        "always_tool": int((always[policy] & tools).sum()),
                    }
                )
                if base is not None:
                    out[-1]["lifted"] = int((always[policy] & ~always[base]).sum())
    return out


def main_records(runs: Sequence[tuple[runner.Condition, Scenario]], config: RunConfig) -> list[dict[str, Any]]:
    """Per DSGC run of the main suite: the store default's kept blocks against the suite's."""
    out = []
    for cond, sc in runs:
        encoder = config.encodings[cond.encoder]
        got, _, budget = runner.run_retention(cond, sc, encoder.encode([sc.query])[0], encoder.encode(sc.texts))
        with MemoryStore(encoder=encoder, tokenizer="whitespace") as store:
            for i, text in enumerate(sc.texts):
                store.add(
                    text, id=sc.ids[i], cost=int(sc.costs[i]), depends_on=[sc.ids[p] for j, p in sc.edges if j == i]
                )
            kept = set(store.compact(sc.query, budget).kept)
        mask = np.array([block in kept for block in sc.ids])
        out.append(
            {
                "encoder": cond.encoder,
                "template": cond.template,
                "regime": sc.regime,
                "seed": sc.seed,
                "same": bool(np.array_equal(mask, got.mask)),
                "full_chain": bool(mask[sc.chain].all()),
            }
        )
    return out


@dataclass(frozen=True)
class LongRangeSuite:
    """Long-range facts in plain and tool-heavy chats, hubs, and the agent policy without tools."""

    name: str = "longrange"
    title: str = "Long-range facts and the agent policy"
    fractions: tuple[float, ...] = FRACTIONS
    hub_fractions: tuple[float, ...] = HUB_FRACTIONS
    hub_seeds: int = HUB_SEEDS

    def build(self, config: RunConfig) -> Plan:
        convs = {v: longrange.conversations(config.seeds, tools=v == "tool-heavy") for v in VARIANTS}
        # neutral stores: the paper family shuffles chain blocks, so a prerequisite can come after
        # its dependent, which a MemoryStore (blocks depend on earlier blocks) cannot express
        main = [(c, GENERATORS[NEUTRAL](c.template, seed, total_blocks=c.total_blocks, honeypot=c.honeypot))
                for c in grid.main_grid(config.encoders, NEUTRAL) if c.method == "dsgc" for seed in config.seeds]  # fmt: skip
        return Plan(convs, main, [Prepared.of(s) for s in generate_all(config.seeds)])

    def run(self, plan: Plan, config: RunConfig) -> dict[str, Any]:
        facts, hubs = [], []
        rules = baselines()
        for name in config.encoders:
            encoder = config.encodings[name]
            emb = Embeddings(encoder)
            for variant, convs in plan.conversations.items():
                encoder.prepare([*(message_text(m) for c in convs for m in c.messages), *longrange.PROBES])
                arm = Arm(variant, name, emb, rules)
                facts += fact_records(convs, arm, self.fractions)
                probed = [c for c in convs if c.seed in config.seeds[: self.hub_seeds]]
                hubs += hub_records(probed, arm, self.hub_fractions)
        return {
            "suite": self.name,
            "seeds": list(config.seeds),
            "encoders": list(config.encoders),
            "fractions": list(self.fractions),
            "hub_fractions": list(self.hub_fractions),
            "hub_seeds": list(config.seeds[: self.hub_seeds]),
            "facts": facts,
            "hubs": hubs,
            "main": main_records(plan.main, config),
            "referents": evaluate(plan.referents, config.encodings, config.encoders, variants=REFERENT_VARIANTS),
        }

    def summarize(self, raw: dict[str, Any], config: RunConfig) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for r in raw["facts"]:
            cell = kept.setdefault(r["variant"], {}).setdefault(r["encoder"], {}).setdefault(r["policy"], {})
            tally = cell.setdefault(f"{r['fraction']:.2f}", {"kept": 0, "conversations": 0, "broken": 0})
            tally["kept"] += r["kept"]
            tally["conversations"] += 1
            tally["broken"] += r["broken"]
        hubs: dict[str, Any] = {}
        for r in raw["hubs"]:
            key = f"{r['variant']}|{r['encoder']}|{r['fraction']:.2f}|{r['policy']}"
            h = hubs.setdefault(
                key,
                {
                    "max_share": 0.0,
                    "max_kinds": [],
                    "always": 0,
                    "always_tool": 0,
                    "lifted": 0,
                    "blocks": 0,
                    "conversations": 0,
                },
            )
            share = r["max_kept"] / r["probes"]
            if share > h["max_share"]:
                h["max_share"], h["max_kinds"] = share, r["max_kinds"]
            elif share == h["max_share"]:
                h["max_kinds"] = sorted(set(h["max_kinds"]) | set(r["max_kinds"]))
            for k in ("always", "always_tool", "blocks"):
                h[k] += r[k]
            h["lifted"] += r.get("lifted", 0)
            h["conversations"] += 1
        main: dict[str, Any] = {}
        for r in raw["main"]:
            m = main.setdefault(f"{r['encoder']}|{r['regime']}", {"runs": 0, "same": 0, "full_chain": 0})
            m["runs"] += 1
            m["same"] += r["same"]
            m["full_chain"] += r["full_chain"]
        summary = {k: raw[k] for k in ("suite", "seeds", "encoders", "fractions", "hub_fractions", "hub_seeds")}
        summary |= {"kept": kept, "hubs": hubs, "main": main, "referents": raw["referents"]}
        return summary | {"checks": checks(summary)}

    def render(self, summary: dict[str, Any], out: Path) -> list[Section]:
        (out / "plots").mkdir(parents=True, exist_ok=True)
        return [
            Section(self.name, self.title, tuple(fact_parts(summary, out)), tuple(summary["checks"])),
        ]

    def save(self, out: Path, raw: dict[str, Any], summary: dict[str, Any]) -> None:
        write_json(out / "raw-longrange.json", raw)
        write_json(out / "summary-longrange.json", summary)

    def load(self, out: Path) -> dict[str, Any] | None:
        return read_json(out / "summary-longrange.json")


def _rate(tally: dict[str, int]) -> float:
    return tally["kept"] / tally["conversations"]


def _key(f: float) -> str:
    return f"{f:.2f}"


def checks(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims: long-range facts, crowding out, hubs, and the paper's wins kept."""
    out = []
    fractions = [_key(f) for f in s["fractions"]]
    for enc in s["encoders"]:
        plain = s["kept"]["plain"][enc]
        worst = min(
            ((f, p, _rate(plain[AGENT][f]) - _rate(plain[p][f])) for f in fractions for p in ("similarity", "dsgc")),
            key=lambda m: m[2],
        )
        out.append(
            {
                "claim": f"plain chats: the agent policy keeps the fact at least as often as similarity-only and paper DSGC ({enc})",
                "measured": f"smallest margin {worst[2]:+.2f} (vs {worst[1]}, {float(worst[0]):.0%})",
                "passed": worst[2] >= 0,
            }
        )
        tools = s["kept"]["tool-heavy"][enc]
        worst = min(
            ((f, _rate(tools[AGENT][f]) - _rate(tools["store-dsgc"][f])) for f in fractions), key=lambda m: m[1]
        )
        out.append(
            {
                "claim": f"tool-heavy chats: working-set support does not crowd the fact out (agent >= store dsgc, {enc})",
                "measured": f"smallest margin {worst[1]:+.2f} ({float(worst[0]):.0%}); agent "
                + ", ".join(f"{_rate(tools[AGENT][f]):.2f}" for f in fractions),
                "passed": worst[1] >= 0,
            }
        )
    lifted = sum(h["lifted"] for k, h in s["hubs"].items() if k.endswith("|" + AGENT))
    top = max(h["max_share"] for k, h in s["hubs"].items() if k.endswith("|" + AGENT))
    plain = max(h["max_share"] for k, h in s["hubs"].items() if k.endswith("|" + PLAIN))
    out.append(
        {
            "claim": "induced edges make no block kept for every question (hub check)",
            "measured": f"{lifted} blocks lifted to always kept; largest keep share {top:.2f} with induction, "
            f"{plain:.2f} without",
            "passed": lifted == 0,
        }
    )
    runs = sum(m["runs"] for m in s["main"].values())
    same = sum(m["same"] for m in s["main"].values())
    out.append(
        {
            "claim": "main suite: the store default (agent policy) keeps exactly what DSGC keeps, run by run",
            "measured": f"{same}/{runs} runs identical",
            "passed": same == runs,
        }
    )
    rows = {(r["encoder"], r["budget"], r["variant"]): r for r in s["referents"]}
    alike = all(
        {k: v for k, v in r.items() if k != "variant"}
        == {k: v for k, v in rows[(e, b, "dsgc" + v[5:])].items() if k != "variant"}
        for (e, b, v), r in rows.items()
        if v.startswith("agent")
    )
    orphans = sum(r["orphans"] for r in s["referents"] if r["variant"] == "agent+pins")
    out.append(
        {
            "claim": "referent sessions: the agent policy with pins leaves 0% orphans, every figure as DSGC's",
            "measured": f"{orphans} orphans; rows identical to DSGC's: {'yes' if alike else 'no'}",
            "passed": orphans == 0 and alike,
        }
    )
    return out


def fact_parts(s: dict[str, Any], out: Path) -> list[str]:
    """The section's blocks: setup, facts kept, figure, hubs, the agent policy without tools, claims."""
    fractions = [_key(f) for f in s["fractions"]]
    n = {v: next(iter(next(iter(s["kept"][v].values())).values()))[fractions[0]]["conversations"] for v in s["kept"]}
    parts = [
        "Long conversations of everyday questions in which the user states one personal fact (a name, a city, a "
        f"birthday) in one of the first turns and asks for it in the last one, among {longrange.DISTRACTORS} "
        "same-kind facts about other people ("
        + ", ".join(f"{v}: {k} conversations" for v, k in n.items())
        + ", one per seed and kind). In the tool-heavy variant the same conversations have the assistant answer "
        f"{longrange.TOOL_SHARE:.0%} of the everyday questions after one or two tool calls (the agent policy's "
        "working set). Budget: a share of the history's whitespace tokens, the question kept on top. Cells: "
        "share of conversations whose fact turn is kept (broken tool pairs in brackets where any).",
    ]
    for variant, by_encoder in s["kept"].items():
        for enc, by_policy in by_encoder.items():
            rows = []
            for policy, label in LABELS.items():
                cells = by_policy[policy]
                rows.append(
                    (
                        f"`{policy}`",
                        label,
                        *(
                            f"{_rate(cells[f]):.2f}" + (f" ({cells[f]['broken']})" if cells[f]["broken"] else "")
                            for f in fractions
                        ),
                    )
                )
            parts += [
                f"### {variant}, {enc} encoder",
                table(["policy", "what", *(f"{float(f):.0%}" for f in fractions)], rows),
            ]
    panels = {
        f"{variant}, {enc}": {policy: {float(f): _rate(by_policy[policy][f]) for f in fractions} for policy in LABELS}
        for variant, by_encoder in s["kept"].items()
        for enc, by_policy in by_encoder.items()
    }
    parts.append(
        image(
            out,
            session_plots.budget_lines(panels, out / "plots" / "longrange.png", ylabel="fact kept"),
            "long-range facts",
        )
    )
    parts.append("### Hubs: how often a history block is kept across questions")
    parts.append(
        f"The history of each conversation of seeds {s['hub_seeds'][0]}..{s['hub_seeds'][-1]} asked the "
        f"{len(longrange.PROBES)} questions of `longrange.PROBES` (every fact question, one question per everyday "
        "topic) in place of its own. **Largest share**: the most questions any one block is "
        "kept for, over every conversation (with the kinds of the blocks reaching it); **always kept**: blocks kept "
        "for every question (of them, tool calls and results: the working set); **lifted**: blocks always kept with "
        "induction (or the hand annotations) but not by the agent policy without them."
    )
    rows = []
    for variant in s["kept"]:
        for enc in s["encoders"]:
            for f in s["hub_fractions"]:
                for policy, base in HUB_POLICIES.items():
                    h = s["hubs"][f"{variant}|{enc}|{_key(f)}|{policy}"]
                    rows.append(
                        (
                            variant,
                            enc,
                            f"{f:.0%}",
                            f"`{policy}`",
                            f"{h['max_share']:.2f} ({', '.join(h['max_kinds'])})",
                            f"{h['always']} of {h['blocks']} ({h['always_tool']} tool)",
                            "—" if base is None else h["lifted"],
                        )
                    )
    parts.append(
        table(
            ["variant", "encoder", "budget", "policy", "largest share", "always kept", f"lifted (vs `{PLAIN}`)"], rows
        )
    )
    parts.append("### The agent policy where there are no tool units")
    parts.append(
        "Working-set support is given to tool calls and results only (`dsgc_fast.memory.messages.working_ages`); without "
        "them the agent policy's score is the paper's, I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1)^p. Checked on "
        "every DSGC run of the main suite, repeated through a `MemoryStore` with its default (agent) parameters, "
        'and on the referent sessions (`policy="agent"` beside `"dsgc"`, with and without pins):'
    )
    parts.append(
        table(
            ["encoder", "regime", "runs", "identical kept blocks", "full-chain retention"],
            [(*k.split("|"), m["runs"], m["same"], f"{m['full_chain'] / m['runs']:.2f}") for k, m in s["main"].items()],
        )
    )
    parts.append(
        table(
            ["encoder", "budget", "variant", "orphan rate", "needed binding", "errors"],
            [
                (
                    r["encoder"],
                    r["budget"],
                    r["variant"],
                    "n/a"
                    if r["orphan_rate"] is None
                    else f"{100 * r['orphan_rate']:.1f}% ({r['orphans']}/{r['resolvable_uses']})",
                    "n/a" if r["needed_rate"] is None else f"{100 * r['needed_rate']:.1f}%",
                    r["errors"],
                )
                for r in s["referents"]
            ],
        )
    )
    parts.append(checks_table(s["checks"]))
    return parts
