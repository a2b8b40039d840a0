"""Many workers, one session: a LangGraph agent checkpointed in a real PostgreSQL server.

The test starts a PostgreSQL server (``tests/_postgres.py``) and two worker processes
(``tests/_langgraph_worker.py``), each a ``create_react_agent`` with dsgc's ``ThreadMemory`` as
``pre_model_hook`` and ``PostgresSaver`` as checkpointer.  The turns of one support session
alternate between the workers: each worker loads the thread from PostgreSQL and sends the
model a context dsgc selected within the budget (tool calls with their results, the binder of
"that account" when a turn uses it).  What is sent is a function of the thread's messages
alone, so after every turn both workers, whichever ran the turns so far, would send the same
context; the checkpointer is the session's only record.

Skipped with the reason on a machine without a PostgreSQL server or without the
``langchain`` / ``postgres`` extras; in CI (``CI`` set) that is a failure instead: ``make
test`` installs and starts what it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._requires import require, skip_or_fail

require("langgraph.checkpoint.postgres", "postgres")

from dsgc_fast.memory.messages import check_messages
from dsgc_fast.memory.token_counts import message_tokens, token_counter
from tests._postgres import ServerUnavailable, running_postgres

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "tests" / "data" / "support_long.jsonl"
BUDGET = 600
COUNT = token_counter(None)


@pytest.fixture(scope="module")
def postgres_uri():
    try:
        with running_postgres() as uri:
            yield uri
    except ServerUnavailable as exc:
        skip_or_fail(f"no PostgreSQL server: {exc}")


class Worker:
    def __init__(self, uri: str) -> None:
        env_path = f"{ROOT / 'src'}:{ROOT}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests._langgraph_worker", uri, str(BUDGET)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": env_path},
        )
        line = self.proc.stdout.readline().strip()
        assert line == "ready", self.proc.stderr.read()

    def turn(self, thread: str, messages: list[dict]) -> dict:
        return self.ask({"thread": thread, "messages": messages})

    def peek(self, thread: str) -> list[dict]:
        """What this worker's hook would send now for ``thread``."""
        return self.ask({"thread": thread, "peek": True})["selected"]

    def ask(self, command: dict) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()


def test_a_session_continues_across_two_workers_through_postgres(postgres_uri):
    history = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()]
    first, question = history[:-1], history[-1]
    one = Worker(postgres_uri)
    two = Worker(postgres_uri)
    try:
        turns = [
            (one, first[:60]),  # the session so far, written by worker one
            (two, first[60:]),  # continued by worker two, which meets the thread for the first time
            (one, [question]),  # back to worker one: it catches up with worker two's turn
            (
                two,
                [
                    {
                        "role": "user",
                        "content": "look up the CloudHost charge of that account",
                        "dsgc": {"uses": ["that account"]},
                    }
                ],
            ),
        ]
        state = 0
        for k, (worker, messages) in enumerate(turns):
            out = worker.turn("support-7", messages)
            assert out["pid"] == worker.proc.pid
            assert out["state"] > state + len(messages) - 1  # the thread holds every earlier turn, whoever ran it
            state = out["state"]
            for sent in out["sent"]:
                assert 0 < len(sent) < out["state"], "the model was sent an empty context, or all of it"
                assert sum(message_tokens(m, COUNT) for m in sent) <= BUDGET
                check_messages(sent)
            if k >= 2:  # these turns use "that account": its binder (or a binding table) is sent
                assert any("8841-C" in str(m.get("content")) for m in out["sent"][0])
            assert one.peek("support-7") == two.peek("support-7")  # the same context on both workers
        assert out["sent"][-1][-1]["role"] == "tool" and "CloudHost" in out["sent"][-1][-1]["content"]
    finally:
        one.close()
        two.close()
