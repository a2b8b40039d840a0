"""``dsgc-bench``: run benchmark suites and write raw JSON, summary JSON, report and plots.

    dsgc-bench main --out results                 # the paper's main experiment
    dsgc-bench reproduce --out results            # every suite, then the report
    dsgc-bench scaling --encoder lexical --seeds 5
    dsgc-bench main --scenarios neutral           # any suite on the other scenario family
    dsgc-bench report --out results               # re-render REPORT.md from the files in results
    dsgc-bench bfcl --split base                  # BFCL on one development split

Every suite writes its files into ``OUT`` (the paper's suites: ``raw-<suite>.json``, every
run; ``summary-<suite>.json``, cells, analyses and checks; a family other than ``neutral``
adds its name: ``raw-main-paper.json``); no timestamps and no timings, so two runs give
identical files.  ``--scenarios`` picks the scenario family of every suite that has one
(default: each suite's own, ``paper`` for the paper-facing suites). ``OUT/REPORT.md`` and its plots cover every suite found in
OUT. Sentence encodings are kept in ``OUT/cache/`` and reused by later suites and runs.
Wall time per suite is printed, never written.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsgc_fast.encoders import ENCODER_NAMES

from .bfcl.suite import BfclSuite
from .families import FAMILIES, with_scenarios
from .registry import SUITES
from .report import write_report
from .runner import IMPLS
from .suite import DEFAULT_SEEDS, RunConfig, Unavailable, execute

#: render the report from the files in OUT without running a suite
REPORT = "report"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dsgc-bench", description=__doc__.split("\n\n")[0])
    p.add_argument("suite", choices=[*SUITES, REPORT], help="suite to run ('reproduce': all), or 'report'")
    p.add_argument("--seeds", type=int, default=len(DEFAULT_SEEDS), help="number of seeds, 0..N-1 (default 15)")
    p.add_argument("--encoder", choices=[*ENCODER_NAMES, "both"], default="both", help="encoder(s) (default both)")
    p.add_argument("--out", type=Path, default=Path("results"), help="output directory (default results)")
    p.add_argument(
        "--impl", choices=IMPLS, default="fast", help="retention engine: dsgc_fast (default) or the dsgc_ref oracle"
    )
    p.add_argument(
        "--scenarios", choices=FAMILIES, help="scenario family (default: each suite's own; see dsgc_bench.families)"
    )
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar (default: only on a terminal)")
    p.add_argument(
        "--split",
        action="append",
        dest="splits",
        metavar="NAME",
        help="bfcl only: a split to read, repeatable (default: the development splits base and long_context)",
    )
    p.add_argument(
        "--held-out",
        action="store_true",
        help="bfcl only: allow the held-out splits (miss_func, miss_param, composite) in --split; "
        "never for development",
    )
    return p


def _bfcl_options(suite: Any, args: argparse.Namespace) -> Any:
    """``suite`` with the bfcl options (``--split``, ``--held-out``); they apply to ``bfcl`` alone."""
    if args.splits is None and not args.held_out:
        return suite
    if not isinstance(suite, BfclSuite):
        raise SystemExit("dsgc-bench: --split and --held-out apply to 'bfcl' only")
    try:
        return dataclasses.replace(
            suite, splits=tuple(args.splits) if args.splits else suite.splits, held_out=args.held_out
        )
    except ValueError as exc:
        raise SystemExit(f"dsgc-bench: bfcl: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.seeds < 1:
        raise SystemExit("dsgc-bench: --seeds must be >= 1")
    if args.suite == REPORT and args.scenarios is not None:
        raise SystemExit("dsgc-bench: --scenarios does not apply to 'report' (it shows every family found)")
    suite = _bfcl_options(SUITES.get(args.suite), args)
    if args.scenarios is not None:
        try:
            suite = with_scenarios(suite, args.scenarios)
        except ValueError as exc:
            raise SystemExit(f"dsgc-bench: {exc}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    if args.suite != REPORT:
        config = RunConfig(
            seeds=tuple(range(args.seeds)),
            encoders=ENCODER_NAMES if args.encoder == "both" else (args.encoder,),
            impl=args.impl,
            cache_dir=args.out / "cache",
            progress=not args.no_progress and sys.stderr.isatty(),
            log=print,
        )
        try:
            execute(suite, config, args.out)
        except Unavailable as exc:
            raise SystemExit(f"dsgc-bench: {args.suite}: {exc}") from None
    path, sections = write_report(args.out)
    for section in sections:
        failed = [c["claim"] for c in section.checks if c["passed"] is False]
        if failed:
            print(f"{section.suite}: not supported: {'; '.join(failed)}")
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
