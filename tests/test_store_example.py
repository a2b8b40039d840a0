"""The offline agent-loop example (examples/agent_loop.py) runs and keeps the account."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_loop.py"


def run_example(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_with_referents_the_last_turn_recalls_and_resolves_the_account():
    lines = run_example()
    assert "turn 7: m15 uses ['that account'], recalled ['m7'] from the archive" in lines
    assert lines[lines.index("") - 1].endswith('{"account": "8841-C", "kyc": "cleared", "checked": "2026-11-02"}')
    assert "the account block m7 is active; the last model call saw 119 of 120 tokens" in lines
    assert "m7: kept: pinned through m15 -uses 'that account'-> m7" in lines


def test_without_referents_the_same_loop_loses_the_account():
    lines = run_example("--no-referents")
    assert lines[lines.index("") - 1].endswith("I cannot tell which account you mean.")
    assert any(line.startswith("the account block m7 is archived") for line in lines)
