"""``dsgc-bench``: run benchmark suites and write raw JSON, summary JSON, report and plots.

    dsgc-bench main --out results                 # the paper's main experiment
    dsgc-bench reproduce --out results            # every suite, then the report
    dsgc-bench scaling --encoder lexical --seeds 5
    dsgc-bench report --out results               # re-render REPORT.md from the summaries
    dsgc-bench referents | induction --out results # the referent-session and induction suites

For each suite, ``OUT/raw-<suite>.json`` holds every run (deterministic: no timestamps, two
runs give identical files), ``OUT/summary-<suite>.json`` the aggregated cells, analyses,
checks and timing; ``OUT/REPORT.md`` and ``OUT/plots/*.png`` cover every suite found in OUT.
Sentence encodings are kept in ``OUT/cache/`` and reused by later suites and runs.
``reproduce`` runs the paper suites, then the referent-session and induction suites (their
own outputs: ``referents.md``, ``induction.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsgc_fast.encoders import ENCODER_NAMES

from .analysis import summarize
from .referents import run_referent_suite
from .report import write_report
from .runner import IMPLS, Encodings, run
from .suites import SUITES


#: suites with their own generators, metrics and reports (referent pinning, edge induction)
OTHER_SUITES: tuple[str, ...] = ("referents", "induction")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dsgc-bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "suite", choices=[*SUITES, *OTHER_SUITES, "reproduce", "report"], help="suite to run, 'reproduce' (all) or 'report'"
    )
    p.add_argument("--seeds", type=int, default=15, help="number of seeds, 0..N-1 (default 15)")
    p.add_argument("--encoder", choices=[*ENCODER_NAMES, "both"], default="both", help="encoder(s) (default both)")
    p.add_argument("--out", type=Path, default=Path("results"), help="output directory (default results)")
    p.add_argument("--impl", choices=IMPLS, default="fast", help="retention engine: dsgc_fast (default) or the dsgc_ref oracle")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar (default: only on a terminal)")
    return p


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="run", disable=not enabled, leave=False)


def run_suite(
    name: str, *, seeds: int, encoders: Sequence[str], out: Path, impl: str, progress: bool, encodings: Encodings
) -> dict:
    """Run one suite, write its raw and summary JSON into ``out``; returns the summary."""
    suite = SUITES[name]
    conditions = suite.build(encoders)
    seed_list = list(range(seeds))
    started, encode_before = time.perf_counter(), encodings.encode_seconds
    with _progress(len(conditions) * seeds, name, progress) as bar:
        records = run(conditions, seed_list, encodings, impl=impl, on_run=bar.update)
    wall = time.perf_counter() - started
    encodings.save()
    raw = {"suite": name, "seeds": seed_list, "encoders": list(encoders), "impl": impl, "records": records}
    (out / f"raw-{name}.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    timing = {"wall_seconds": wall, "encode_seconds": encodings.encode_seconds - encode_before, "runs": len(records)}
    summary = summarize(suite, records, seeds=seed_list, encoders=list(encoders), impl=impl, timing=timing)
    (out / f"summary-{name}.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.seeds < 1:
        raise SystemExit("dsgc-bench: --seeds must be >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    encoders = list(ENCODER_NAMES) if args.encoder == "both" else [args.encoder]
    progress = not args.no_progress and sys.stderr.isatty()
    reproduce = args.suite == "reproduce"
    names = list(SUITES) if reproduce else [args.suite] if args.suite in SUITES else []
    encodings = Encodings(args.out / "cache", progress=progress)
    for name in names:
        summary = run_suite(
            name, seeds=args.seeds, encoders=encoders, out=args.out, impl=args.impl, progress=progress, encodings=encodings
        )
        failed = [c["claim"] for c in summary["checks"] if c["passed"] is False]
        print(
            f"{name}: {summary['timing']['runs']} runs in {summary['timing']['wall_seconds']:.1f} s"
            + (f"; not supported: {'; '.join(failed)}" if failed else "")
        )
    if args.suite == "referents" or reproduce:  # referent sessions (issue 3): own generator and metrics
        ref = run_referent_suite(args.out, range(args.seeds), encoders, cache_dir=args.out / "cache")
        print(f"referents: {ref['n_sessions']} sessions in {sum(ref['seconds'].values()):.1f} s")
    if args.suite == "induction" or reproduce:  # induced edges and referents (issue 9)
        from .induction_suite import run as run_induction

        run_induction(range(args.seeds), encoders, out=args.out, cache_dir=args.out / "cache")
        print(f"induction: {args.out / 'induction.md'}")
    print(f"report: {write_report(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
