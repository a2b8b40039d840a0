"""The ``dsgc`` command: retain a JSONL session under a token budget and explain why.

    dsgc retain  --input session.jsonl|- --budget N [--query TEXT] [--encoder lexical|sentence]
                 [--tokenizer NAME] [--on-over-budget raise|roots_only|truncate]
                 [--format table|json] [--write-messages OUT] [scoring options]
    dsgc explain --input session.jsonl|- --budget N [--id ID ...] [--html FILE] (same options)
    dsgc --version

The scoring options are the fields of ``dsgc_ref.contract.Params`` (``--policy``,
``--selection``, ``--lambda-pi``, ``--tau``, ``--hops``, ``--decay``,
``--density-exponent``), generated from it, so the CLI takes what every entry point takes.

Each line of the session (a file, or standard input for ``-``) is an OpenAI-style chat
message or a plain block (see ``dsgc_fast.memory.messages``); the session is whole, so a tool call
without its result is an input error.  The budget is in model tokens of ``--tokenizer``
(default: o200k_base with the ``tokens`` extra, else the approximate counter; ``whitespace``
is the paper's cost).  System messages and the newest user turn are live roots; the query
defaults to the newest user message.  Output is a table on a terminal and JSON when piped,
unless ``--format`` says otherwise; JSON carries ``schema_version``.  Long encodes show a
progress bar on a terminal's standard error (with tqdm installed).  ``--write-messages`` is
checked before any work.  Input errors name the line and exit with status 2; a budget too
small even for the live roots plus the binding table exits with status 1 (unless
``--on-over-budget`` says otherwise); an internal error (a bug) prints its traceback and
exits with status 3.  ``explain --html FILE`` writes the decision as one self-contained HTML
page (``CompactionReport.to_html``: the timeline, the budget bar, the referent links and
dependency edges drawn; ``--id`` blocks highlighted) instead of printing it; FILE, like
``--write-messages``, is checked before any work.  Text for a person (tables, explanations, error lines) shows control
characters escaped; JSON stays exact.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from dsgc_ref.contract import DsgcValueError, Params, ReferentEvictionError

from ._terminal import printable
from .encoders import ENCODER_NAMES, CachedEncoder, make_encoder
from .memory.compaction import OVER_BUDGET
from .memory.explain import SCHEMA_VERSION, CompactionReport
from .memory.messages import (
    SessionError,
    add_records,
    compact_messages,
    plan_records,
    read_jsonl,
    to_messages,
    write_jsonl,
)
from .memory.store import AGENT_PARAMS, MemoryStore
from .memory.token_counts import TOKENIZERS, default_tokenizer

EXIT_INPUT = 2
EXIT_BUDGET = 1
EXIT_INTERNAL = 3
#: texts encoded per step of the progress bar; sessions with fewer texts show none
PROGRESS_CHUNK = 512


def _add_param_options(parser: argparse.ArgumentParser) -> None:
    """One option per ``Params`` field, type and help from the field, default the store's."""
    group = parser.add_argument_group("scoring options (dsgc Params; defaults: the store's, the agent policy)")
    for f in dataclasses.fields(Params):
        default = getattr(AGENT_PARAMS, f.name)
        group.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=_PARSE[type(f.default)],
            default=default,
            metavar=f.metadata["metavar"] or type(f.default).__name__.upper(),
            help=f"{f.metadata['help']} (default {default})",
        )


def _text(value: str) -> str:
    return value


def _parse_int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None


def _parse_float(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


_PARSE = {str: _text, int: _parse_int, float: _parse_float}


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--input",
        required=True,
        help="JSONL session (chat messages and/or blocks, one per line); - reads standard input",
    )
    common.add_argument(
        "--budget", required=True, type=int, help="token budget for the kept blocks, in --tokenizer tokens"
    )
    common.add_argument("--query", help="query text (default: the newest user message)")
    common.add_argument("--encoder", choices=ENCODER_NAMES, default="lexical")
    common.add_argument(
        "--tokenizer", choices=TOKENIZERS, default=None,
        help=f"what a token is (default {default_tokenizer()}: o200k_base with the tokens extra, else approx)",
    )  # fmt: skip
    common.add_argument(
        "--on-over-budget", choices=OVER_BUDGET, default="raise",
        help="when even the live roots do not fit: fail (exit 1, the default), keep only them, or cut their largest tool results",
    )  # fmt: skip
    common.add_argument("--format", choices=("table", "json"), help="default: table on a terminal, json otherwise")
    common.add_argument(
        "--digests", action=argparse.BooleanOptionalAction, default=True,
        help="agent policy: a tool result may be sent as a digest of its values (default on)",
    )  # fmt: skip
    common.add_argument(
        "--values", action=argparse.BooleanOptionalAction, default=True,
        help="agent policy, with digests: the values of what is left out go in a value table (default on)",
    )  # fmt: skip
    _add_param_options(common)
    parser = argparse.ArgumentParser(prog="dsgc", description="Dependency-aware retention of agent memory.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    retain = sub.add_parser("retain", parents=[common], help="print kept and evicted blocks with reasons")
    retain.add_argument("--write-messages", metavar="OUT", help="write the kept chat messages to OUT as JSONL")
    explain = sub.add_parser("explain", parents=[common], help="explain each decision with its score parts")
    explain.add_argument("--id", action="append", dest="ids", metavar="ID", help="explain only this block (repeatable)")
    explain.add_argument(
        "--html", metavar="FILE",
        help="write the explanation as one self-contained HTML page (a timeline of every block; --id ones highlighted)",
    )  # fmt: skip
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("dsgc")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def _params(args: argparse.Namespace) -> Params:
    """The ``Params`` the options give; an invalid value is a ``ValueError`` naming it."""
    try:
        return Params(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Params)})
    except TypeError as exc:
        raise DsgcValueError(str(exc)) from None


def _run(args: argparse.Namespace) -> tuple[MemoryStore, CompactionReport]:
    params = _params(args)
    encoder = CachedEncoder(make_encoder(args.encoder))
    store = MemoryStore(encoder=encoder, tokenizer=args.tokenizer, params=params)
    records = [
        (f"line {number}", record)
        for number, record in read_jsonl(sys.stdin.buffer if args.input == "-" else args.input)
    ]
    texts = [kwargs["text"] for kwargs in plan_records(store, records, complete=True)]  # every line checked first
    _encode_all(encoder, texts)
    add_records(store, records, complete=True)
    report = compact_messages(
        store, args.budget, query=args.query, on_over_budget=args.on_over_budget, digests=args.digests,
        values=args.values,
    )  # fmt: skip
    return store, report


def _encode_all(encoder: CachedEncoder, texts: list[str]) -> None:
    """Encode the session's texts in one pass, with a progress bar on a terminal for long sessions."""
    bar = _progress_bar(len(texts)) if len(texts) > PROGRESS_CHUNK and sys.stderr.isatty() else None
    for start in range(0, len(texts), PROGRESS_CHUNK):
        encoder.prepare(texts[start : start + PROGRESS_CHUNK])
        if bar is not None:
            bar.update(min(PROGRESS_CHUNK, len(texts) - start))
    if bar is not None:
        bar.close()


def _progress_bar(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="text", desc="encoding", file=sys.stderr, leave=False)


def _check_output(path: str | None, option: str) -> None:
    """``--write-messages`` / ``--html``: refuse, before any work, a path that cannot be written."""
    if path is None:
        return
    if os.path.isdir(path):
        raise DsgcValueError(f"{option} {path!r} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise DsgcValueError(f"{option} {path!r}: directory {parent!r} does not exist")
    if not os.access(path if os.path.exists(path) else parent, os.W_OK):
        raise DsgcValueError(f"{option} {path!r} is not writable")


def _explain_output(report: CompactionReport, ids: Sequence[str] | None, fmt: str) -> str:
    _check_ids(report, ids)
    chosen = [report.decisions[i] for i in ids] if ids else list(report.decisions.values())
    if fmt == "json":
        return json.dumps({"schema_version": SCHEMA_VERSION, "decisions": [d.to_dict() for d in chosen]}, indent=2)
    return "\n\n".join([report.summary()] + [d.explain() for d in chosen])


def _check_ids(report: CompactionReport, ids: Sequence[str] | None) -> None:
    for block_id in ids or ():
        if block_id not in report.decisions:
            raise SessionError(f"--id {block_id!r} is not a block of the session")


def _write_html(report: CompactionReport, ids: Sequence[str] | None, path: str) -> None:
    """``explain --html``: the page of ``report`` (``ids`` highlighted) written to ``path`` as UTF-8."""
    _check_ids(report, ids)
    with open(path, "w", encoding="utf-8") as out:
        out.write(report.to_html(focus=ids or ()))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dsgc`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character gets an escape
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    source = "<stdin>" if args.input == "-" else args.input
    try:
        _check_output(getattr(args, "write_messages", None), "--write-messages")
        _check_output(getattr(args, "html", None), "--html")
        store, report = _run(args)
        if args.command == "retain":
            print(report.table() if fmt == "table" else report.to_json())
            if args.write_messages:
                write_jsonl(to_messages(store), args.write_messages)
        elif args.html:
            _write_html(report, args.ids, args.html)
        else:
            print(_explain_output(report, args.ids, fmt))
    except BrokenPipeError:  # the reader (e.g. `head`) went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SessionError as exc:
        return _fail(f"{source}: {exc}", EXIT_INPUT)
    except ReferentEvictionError as exc:
        return _fail(f"budget too small: {exc}", EXIT_BUDGET)
    except (OSError, ValueError, ImportError) as exc:
        return _fail(str(exc), EXIT_INPUT)
    except MemoryError:
        return _fail("out of memory: the session is too large", EXIT_INPUT)
    except Exception:  # a bug, not an input error: show where, under its own exit status
        traceback.print_exc()
        return _fail("internal error (a bug: please report the traceback above)", EXIT_INTERNAL)
    return 0


def _fail(message: str, status: int) -> int:
    """Print one ``dsgc:`` line (terminal-steering characters escaped) and return ``status``."""
    print(printable(f"dsgc: {message}"), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
