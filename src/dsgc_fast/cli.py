"""The ``dsgc`` command: retain a JSONL session under a token budget and explain why.

    dsgc retain  --input session.jsonl --budget N [--query TEXT] [--encoder lexical|sentence]
                 [--format table|json] [--write-messages OUT] [scoring options]
    dsgc explain --input session.jsonl --budget N [--id ID ...] (same options)

The scoring options are the fields of ``dsgc_ref.contract.Params`` (``--policy``,
``--selection``, ``--lambda-pi``, ``--tau``, ``--hops``, ``--decay``,
``--density-exponent``), generated from it, so the CLI takes what every entry point takes.

Each line of the session is an OpenAI-style chat message or a plain block (see
``dsgc_fast.messages``).  System messages and the newest user turn are live roots; the
query defaults to the newest user message.  Output is a table on a terminal and JSON when
piped, unless ``--format`` says otherwise.  Input errors name the line and exit with status 2;
a budget too small even for the live roots plus the binding table exits with status 1; an
internal error (a bug) prints its traceback and exits with status 3.  Text for a person
(tables, explanations, error lines) shows control characters escaped; JSON stays exact.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback
from collections.abc import Sequence

from dsgc_ref.contract import Params, ReferentEvictionError

from ._terminal import printable
from .encoders import ENCODER_NAMES, make_encoder
from .explain import CompactionReport
from .messages import SessionError, compact_messages, load_session, to_messages, write_jsonl
from .store import AGENT_PARAMS, MemoryStore

EXIT_INPUT = 2
EXIT_BUDGET = 1
EXIT_INTERNAL = 3


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
    common.add_argument("--input", required=True, help="JSONL session: chat messages and/or blocks, one per line")
    common.add_argument("--budget", required=True, type=int, help="token budget for the kept blocks")
    common.add_argument("--query", help="query text (default: the newest user message)")
    common.add_argument("--encoder", choices=ENCODER_NAMES, default="lexical")
    common.add_argument("--format", choices=("table", "json"), help="default: table on a terminal, json otherwise")
    _add_param_options(common)
    parser = argparse.ArgumentParser(prog="dsgc", description="Dependency-aware retention of agent memory.")
    sub = parser.add_subparsers(dest="command", required=True)
    retain = sub.add_parser("retain", parents=[common], help="print kept and evicted blocks with reasons")
    retain.add_argument("--write-messages", metavar="OUT", help="write the kept chat messages to OUT as JSONL")
    explain = sub.add_parser("explain", parents=[common], help="explain each decision with its score parts")
    explain.add_argument("--id", action="append", dest="ids", metavar="ID", help="explain only this block (repeatable)")
    return parser


def _params(args: argparse.Namespace) -> Params:
    """The ``Params`` the options give; an invalid value is a ``ValueError`` naming it."""
    try:
        return Params(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Params)})
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _run(args: argparse.Namespace) -> tuple[MemoryStore, CompactionReport]:
    params = _params(args)
    store = MemoryStore(encoder=make_encoder(args.encoder), params=params)
    load_session(store, args.input)
    return store, compact_messages(store, args.budget, query=args.query)


def _explain_output(report: CompactionReport, ids: Sequence[str] | None, fmt: str) -> str:
    for block_id in ids or ():
        if block_id not in report.decisions:
            raise SessionError(f"--id {block_id!r} is not a block of the session")
    chosen = [report.decisions[i] for i in ids] if ids else list(report.decisions.values())
    if fmt == "json":
        return json.dumps([d.to_dict() for d in chosen], indent=2)
    return "\n\n".join([report.summary()] + [d.explain() for d in chosen])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dsgc`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character gets an escape
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    try:
        store, report = _run(args)
        if args.command == "retain":
            print(report.table() if fmt == "table" else report.to_json())
            if args.write_messages:
                write_jsonl(to_messages(store), args.write_messages)
        else:
            print(_explain_output(report, args.ids, fmt))
    except BrokenPipeError:  # the reader (e.g. `head`) went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SessionError as exc:
        return _fail(f"{args.input}: {exc}", EXIT_INPUT)
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
