"""Every Python block of README.md and docs/ runs as written, and prints what the page shows.

The rule the pages follow: a fenced block tagged ``python`` is a complete program (no names
defined elsewhere) and runs here, in this process, offline; a ``text`` block right after it
(blank lines only between) is its exact standard output.  Blocks that are not Python carry
another tag (``bash`` or ``console`` for shell commands, ``text`` for output, ``json`` or
``jsonl`` for data); an untagged block fails, so no Python hides from these tests.  Models are offline: the LangChain blocks
use LangChain's own fake chat model, and an OpenAI Agents SDK model name is routed to the
scripted ``agents.Model`` of ``tests/_scripted_agents_model.py``.

Outputs are in o200k_base tokens, the default tokenizer with the ``tokens`` extra.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path
from unittest import mock

import pytest

from dsgc_fast.cli import main
from dsgc_fast.memory.token_counts import offline_encodings_available
from tests._requires import require

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: the tags a fenced block may carry: Python runs; the others are shell commands, output or data
TAGS = ("python", "text", "console", "bash", "json", "jsonl")
#: a block importing one of these needs its extra
EXTRAS = {"langchain": "langchain", "langchain_core": "langchain", "langgraph": "langchain", "agents": "openai-agents"}
FENCE = re.compile(r"^```(?P<tag>[^\n`]*)\n(?P<body>.*?)^```\n", re.S | re.M)


def fenced(text: str) -> list[tuple[str, str, int]]:
    """The fenced blocks of Markdown ``text``: (tag, content, end offset) in order."""
    return [(m["tag"].strip(), m["body"], m.end()) for m in FENCE.finditer(text)]


def python_blocks() -> list[tuple[str, str, str | None]]:
    """(id, code, the output shown right after it or None) of every Python block."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = fenced(text)
        for k, (tag, body, end) in enumerate(blocks):
            if tag != "python":
                continue
            shown = None
            if k + 1 < len(blocks) and blocks[k + 1][0] == "text":
                gap = text[end : text.index("```text\n", end)]
                shown = blocks[k + 1][1] if not gap.strip() else None
            line = text[: text.index(body)].count("\n") + 1
            out.append((f"{page.relative_to(ROOT)}:{line}", body, shown))
    return out


BLOCKS = python_blocks()


def run(code: str, name: str) -> str:
    """Run ``code`` in a fresh namespace; return what it printed."""
    imported = {module for module in EXTRAS if re.search(rf"^\s*(from|import) {module}\b", code, re.M)}
    for module in imported:
        require(module, EXTRAS[module])
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    printed = io.StringIO()
    with contextlib.ExitStack() as stack:
        if "agents" in imported:
            from agents.models.multi_provider import MultiProvider

            from tests._scripted_agents_model import ScriptedModel

            stack.enter_context(mock.patch.object(MultiProvider, "get_model", lambda self, name: ScriptedModel()))
        stack.enter_context(contextlib.redirect_stdout(printed))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        exec(compile(code, name, "exec"), {"__name__": "__docs__"})
    return printed.getvalue()


def test_every_block_is_tagged():
    for page in PAGES:
        tags = [tag for tag, _, _ in fenced(page.read_text(encoding="utf-8"))]
        assert all(tag in TAGS for tag in tags), f"{page.relative_to(ROOT)}: a block tagged outside {TAGS}: {tags}"


def test_the_pages_have_python_blocks():
    pages = {name.split(":")[0] for name, _, _ in BLOCKS}
    assert {"README.md", "docs/engine.md", "docs/memory.md", "docs/frameworks.md", "docs/induction.md"} <= pages


@pytest.mark.parametrize(("name", "code", "shown"), BLOCKS, ids=[name for name, _, _ in BLOCKS])
def test_the_block_runs_and_prints_what_the_page_shows(name, code, shown):
    if shown is not None and not offline_encodings_available():
        pytest.skip("the pages' outputs are in o200k_base tokens (the tokens extra)")
    # twice in a row: a block leaves nothing behind that changes its next run (stores start afresh)
    for _ in range(2 if shown is not None else 1):
        printed = run(code, name)
        if shown is not None:
            assert printed == shown, name


def langgraph_block() -> str:
    return next(code for name, code, _ in BLOCKS if name.startswith("README.md") and "create_agent" in code)


def test_select_messages_replaces_trim_messages_by_one_line():
    require("langchain", "langchain")
    code = langgraph_block()
    lines = code.splitlines()
    select = next(k for k, line in enumerate(lines) if line.strip().startswith("kept = select_messages("))
    trim = next(k for k, line in enumerate(lines) if line.strip().startswith("# kept = trim_messages("))
    with_trim = list(lines)
    with_trim[select] = lines[trim].replace("# ", "", 1)
    del with_trim[trim]
    without_comment = [line for k, line in enumerate(lines) if k != trim]
    assert sum(a != b for a, b in zip(without_comment, with_trim, strict=True)) == 1
    printed = run("\n".join(with_trim) + "\n", "README.md, with trim_messages")
    assert "Account 8841-C" not in printed  # trim_messages loses the account the question refers to
    assert "Account 8841-C" in run(code, "README.md")


def test_the_readme_example_sends_the_same_without_its_notes():
    """The README says the notes are optional there: induction finds the one account."""
    require("langchain", "langchain")
    code = langgraph_block()
    plain = code.replace('additional_kwargs={"dsgc": notes}', "")
    assert plain != code
    assert run(plain, "README.md, no notes") == run(code, "README.md")


def test_the_cli_table_is_what_the_command_prints(capsys, monkeypatch):
    if not offline_encodings_available():
        pytest.skip("the table is in o200k_base tokens (the tokens extra)")
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = next(b for _, b, _ in fenced(text) if b.startswith("$ dsgc retain --input tests/data/support_triage.jsonl"))
    command, *table = shown.splitlines()
    monkeypatch.chdir(ROOT)
    assert main(command.split()[2:]) == 0  # after "$ dsgc"
    assert capsys.readouterr().out.splitlines() == table


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert "make reproduce" in readme and "make test" in readme
    assert "create_react_agent" not in readme
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link
    examples = [code for name, code, _ in BLOCKS if name.startswith("README.md")]
    for needle in ("create_agent(", "InputFilter(", "select("):  # one agent example per framework, and none
        assert any(needle in code for code in examples), needle
    for code in examples:  # short: at most 12 statements besides imports (indented lines are parts)
        statements = [
            line
            for line in code.splitlines()
            if line.strip() and not line.startswith((" ", ")", "]", "from ", "import ", "#", "@"))
        ]
        assert len(statements) <= 12, statements
