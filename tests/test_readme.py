"""The README's store example and CLI table are exactly what the code prints.

The store example runs twice in a row in one process (it keeps its archive in memory, so a
second run starts afresh) and must print the output block shown under it; the CLI table must
be what ``dsgc retain`` prints for the command shown.  Both need the ``tokens`` extra (the
default tokenizer is then o200k_base, in which the README's budgets are written).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from dsgc_fast.cli import main
from dsgc_fast.token_counts import offline_encodings_available

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(not offline_encodings_available(), reason="the README's budgets are o200k_base tokens")


def fenced(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of Markdown ``text``: (info string, content) in order."""
    out, lines, info = [], None, ""
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if lines is None:
                lines, info = [], line[3:].strip()
            else:
                out.append((info, "".join(lines)))
                lines = None
        elif lines is not None:
            lines.append(line)
    return out


def section(title: str) -> str:
    start = README.index(title)
    return README[start : README.index("\n## ", start + 1)]


def test_the_store_example_prints_its_output_twice_in_a_row():
    (_, code), (_, shown), *_ = fenced(section("## Agent memory store and CLI"))
    for _ in range(2):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README store example", "exec"), {"__name__": "readme"})
        assert printed.getvalue() == shown


def test_the_cli_table_is_what_the_command_prints(capsys, monkeypatch):
    shown = next(b for _, b in fenced(README) if b.startswith("$ dsgc retain --input tests/data/support_triage.jsonl"))
    command, *table = shown.splitlines()
    argv = command.split()[2:]  # after "$ dsgc"
    monkeypatch.chdir(ROOT)
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == table
