"""Run the whole suite: replay, check, score every policy, trace facts, long-range case.

``python -m dsgc_bench.bfcl --encoder lexical --out DIR`` writes ``DIR/bfcl-<encoder>.json``
(every figure; sorted keys, no timestamps, so two runs give identical files) and
``DIR/bfcl-<encoder>.md`` (the tables).  ``--sessions N`` keeps the first N sessions of
each split (a quick run); ``--cache DIR`` keeps sentence encodings between runs;
``--parallel`` replays each turn's calls as one assistant message (a sensitivity variant,
files ``bfcl-<encoder>-parallel.*``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dsgc_fast.encoders import CachedEncoder, make_encoder
from dsgc_fast.messages import message_text

from .. import longrange
from .agent import CANDIDATES, RECOMMENDED_NAME
from .check import check_all
from .data import SPLITS, bfcl_version, load_sessions
from .facts import identifier_share, induction_audit, lost_with_call_kept, previous_turn_share
from .metrics import Score, by_split, gap_closed, score, summarize
from .oracle import unit_oracle
from .points import Point, transcript_points
from .policies import BASELINES, Embeddings, Selection, dsgc_trace
from .replay import Transcript, replay

FRACTIONS = (0.25, 0.5)
LONGRANGE_FRACTIONS = (0.05, 0.10, 0.15, 0.20, 0.25)
LONGRANGE_COUNT = 60
ORACLE = "oracle-units"
RECENCY = "store-recency"


def oracle_policy(point: Point, emb: Embeddings, budget: int) -> Selection:
    return Selection(unit_oracle(point, budget).retained)


def policies() -> dict[str, Callable[[Point, Embeddings, int], Selection]]:
    """Every policy scored, by table name."""
    return {**BASELINES, ORACLE: oracle_policy, **{f"agent {k}": v for k, v in CANDIDATES.items()}}


def run_policy(policy: Callable, points: Sequence[Point], emb: Embeddings, fraction: float) -> list[Score]:
    return [score(p, policy(p, emb, p.budget(fraction)), p.budget(fraction)) for p in points]


def bfcl_tables(points: list[Point], emb: Embeddings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fraction in FRACTIONS:
        cell = {}
        for name, policy in policies().items():
            cell[name] = by_split(run_policy(policy, points, emb, fraction))
        out[f"{fraction:.2f}"] = cell
    return out


def trace_facts(transcripts: list[Transcript], points: list[Point], emb: Embeddings) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    for split in sorted({p.split for p in points}):
        ps = [p for p in points if p.split == split]
        trs = [t for t in transcripts if t.session.split == split]
        held, total = previous_turn_share(ps)
        ident, n = identifier_share(trs, ps)
        audit = {"edges": 0, "schema_edges": 0, "binds": 0, "schema_binds": 0}
        for tr in trs:
            for key, value in induction_audit(tr, [message_text(m) for m in tr.messages]).items():
                audit[key] += value
        lost = {}
        for fraction in FRACTIONS:
            pairs = [lost_with_call_kept(p, dsgc_trace(p, emb, p.budget(fraction))) for p in ps]
            kept, lost_n = sum(a for a, _ in pairs), sum(b for _, b in pairs)
            lost[f"{fraction:.2f}"] = {"call_kept": kept, "lost_result_held": lost_n, "share": kept / lost_n if lost_n else math.nan}
        facts[split] = {
            "previous_turn": {"held": held, "needed": total, "share": held / total if total else math.nan},
            "identifiers": {"identifiers": ident, "needed": n, "share": ident / n if n else math.nan},
            "lost_with_call_kept": lost,
            "induction_audit": {
                **audit,
                "schema_edge_share": audit["schema_edges"] / audit["edges"] if audit["edges"] else math.nan,
                "schema_bind_share": audit["schema_binds"] / audit["binds"] if audit["binds"] else math.nan,
            },
        }
    return facts


def longrange_tables(emb: Embeddings, count: int) -> dict[str, Any]:
    points = longrange.points(count)
    chosen = {k: v for k, v in policies().items() if not k.startswith("store-recency")}
    out = {}
    for fraction in LONGRANGE_FRACTIONS:
        out[f"{fraction:.2f}"] = {name: summarize(run_policy(pol, points, emb, fraction)) for name, pol in chosen.items()}
    return out


# -- rendering ----------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def render(result: dict[str, Any]) -> str:
    lines = [f"# BFCL replay suite ({result['encoder']} encoder)", ""]
    check = result["check"]
    lines += [
        f"bfcl-eval {result['bfcl_eval']}; splits {', '.join(result['splits'])}; {result['sessions']} sessions, "
        f"{result['points']} scoring points; BFCL executor check: {check['calls']} calls, "
        f"{check['mismatches']} mismatches ({check['identical_text']} with identical text).",
        "",
    ]
    for fraction, cell in result["bfcl"].items():
        low, high = cell[RECENCY]["pooled"]["recall"], cell[ORACLE]["pooled"]["recall"]
        lines += [f"## Budget {float(fraction):.0%} of the history", ""]
        splits = [s for s in result["splits"]] + ["pooled"]
        lines.append("| policy | " + " | ".join(f"{s} recall" for s in splits) + " | all kept (pooled) | broken pairs | used/budget | gap closed |")
        lines.append("|---" * (len(splits) + 5) + "|")
        for name, by in cell.items():
            pooled = by["pooled"]
            lines.append(
                f"| {name} | "
                + " | ".join(_fmt(by[s]["recall"]) for s in splits)
                + f" | {_fmt(pooled['all_kept'])} | {pooled['broken']} | {_fmt(pooled['used_share'])} | {_fmt(gap_closed(pooled['recall'], low, high))} |"
            )
        lines.append("")
    lines += ["## Trace facts", ""]
    for split, f in result["facts"].items():
        audit = f["induction_audit"]
        lost = "; ".join(f"{float(k):.0%}: {_fmt(v['share'])} ({v['call_kept']}/{v['lost_result_held']})" for k, v in f["lost_with_call_kept"].items())
        lines += [
            f"- {split}: needed values held by the previous turn {_fmt(f['previous_turn']['share'])} "
            f"({f['previous_turn']['held']}/{f['previous_turn']['needed']}); identifiers among needed values "
            f"{_fmt(f['identifiers']['share'])}; dsgc lost result-held values with the call kept: {lost}; "
            f"induced edges on schema vocabulary only {_fmt(audit['schema_edge_share'])} ({audit['schema_edges']}/{audit['edges']}), "
            f"bindings {_fmt(audit['schema_bind_share'])} ({audit['schema_binds']}/{audit['binds']})"
        ]
    if result.get("longrange"):
        fractions = list(result["longrange"])
        lines += ["", f"## Long-range facts ({result['longrange_count']} conversations): share of facts kept", ""]
        lines.append("| policy | " + " | ".join(f"{float(f):.0%}" for f in fractions) + " |")
        lines.append("|---" * (len(fractions) + 1) + "|")
        for name in result["longrange"][fractions[0]]:
            lines.append(f"| {name} | " + " | ".join(_fmt(result["longrange"][f][name]["recall"]) for f in fractions) + " |")
    lines += ["", f"Recommended candidate: `agent {RECOMMENDED_NAME}`.", ""]
    return "\n".join(lines)


def run(
    encoder: str, out: Path, *, sessions: int | None, cache: Path | None, with_longrange: bool, parallel: bool = False
) -> dict[str, Any]:
    started = time.perf_counter()
    transcripts = []
    for split in SPLITS:
        chosen = load_sessions(split)
        transcripts += [replay(s, parallel=parallel) for s in (chosen if sessions is None else chosen[:sessions])]
    checked = check_all(transcripts)
    points = [p for tr in transcripts for p in transcript_points(tr)]
    wrapped = CachedEncoder(make_encoder(encoder), None if cache is None else cache / f"bfcl-{encoder}.npz")
    wrapped.prepare([t for p in points for t in p.texts])
    emb = Embeddings(wrapped)
    result: dict[str, Any] = {
        "encoder": encoder,
        "parallel_calls": parallel,
        "bfcl_eval": bfcl_version(),
        "splits": list(SPLITS),
        "sessions": len(transcripts),
        "points": len(points),
        "check": {"calls": checked.calls, "mismatches": len(checked.mismatches), "identical_text": checked.identical_text},
        "bfcl": bfcl_tables(points, emb),
        "facts": trace_facts(transcripts, points, emb),
    }
    if with_longrange:
        result["longrange"] = longrange_tables(emb, LONGRANGE_COUNT)
        result["longrange_count"] = LONGRANGE_COUNT
    wrapped.save()
    out.mkdir(parents=True, exist_ok=True)
    stem = f"bfcl-{encoder}" + ("-parallel" if parallel else "")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1, sort_keys=True, allow_nan=True) + "\n")
    (out / f"{stem}.md").write_text(render(result))
    print(f"bfcl {encoder}: {len(points)} points in {time.perf_counter() - started:.1f} s -> {out}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsgc_bench.bfcl", description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", choices=("lexical", "sentence"), default="lexical")
    parser.add_argument("--out", type=Path, default=Path("results/bfcl"))
    parser.add_argument("--sessions", type=int, default=None, help="first N sessions of each split")
    parser.add_argument("--cache", type=Path, default=None, help="folder for encoding caches")
    parser.add_argument("--no-longrange", action="store_true", help="skip the long-range case")
    parser.add_argument("--parallel", action="store_true", help="all of a turn's calls in one assistant message")
    args = parser.parse_args(argv)
    run(
        args.encoder,
        args.out,
        sessions=args.sessions,
        cache=args.cache,
        with_longrange=not args.no_longrange,
        parallel=args.parallel,
    )
    return 0
