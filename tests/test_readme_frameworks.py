"""The README's framework quick starts run as written (each block after a ``<!-- quickstart: NAME -->``
marker), offline; the LangGraph one prints the output the README shows after it."""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path

import pytest

from tests._requires import require

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


def quickstart(name: str) -> tuple[str, str | None]:
    """The code block after the marker, and the plain block right after it (its output), if any."""
    found = re.search(
        rf"<!-- quickstart: {re.escape(name)} -->\n```python\n(.*?)```\n(?:\n```\n(.*?)```\n)?", README, re.S
    )
    assert found, f"no quick start {name!r} in README.md"
    return found.group(1), found.group(2)


def run(code: str, **names) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__", **names})
    return out.getvalue()


def test_the_langgraph_quick_start_prints_what_the_readme_shows():
    require("langgraph", "langchain")
    code, shown = quickstart("langgraph")
    assert len(code.strip().splitlines()) <= 20
    assert run(code) == shown


def test_the_langchain_create_agent_quick_start_prints_what_the_readme_shows():
    require("langchain", "langchain")
    code, shown = quickstart("langchain")
    assert run(code) == shown


def test_the_select_messages_quick_start_prints_what_the_readme_shows():
    require("langchain_core", "langchain")
    code, shown = quickstart("select_messages")
    assert run(code) == shown


def test_the_openai_agents_quick_start_runs_with_a_scripted_model():
    require("agents", "openai-agents")
    from tests._scripted_agents_model import ScriptedModel

    code, _ = quickstart("openai-agents")
    model = ScriptedModel()
    printed = run(code, model=model)
    assert printed.startswith("Answered with")
    sent = model.seen[-1]
    assert sent[0]["content"].startswith("Account 8841-C") and sent[-1]["content"] == "Did that account clear KYC?"
    assert len(sent) < 5


@pytest.mark.parametrize("name", ["langgraph", "langchain", "select_messages", "openai-agents"])
def test_each_quick_start_is_short(name):
    code, _ = quickstart(name)
    statements = [line for line in code.splitlines() if line.strip() and not line.startswith((" ", "from ", "import "))]
    assert len(statements) <= 12, statements
