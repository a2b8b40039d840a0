"""The agent path's timings beside ``trim_messages``: the session, its unseen variants, fresh-process code.

Shared by ``tools/agent_path.py`` and ``asv_bench/benchmarks/bench_agent_path.py``.  The history
is a recorded chat session (``tests/data/support_long.jsonl`` in a source checkout) without its
``dsgc`` annotations, budgeted at a quarter of its o200k_base cost with chat framing.

``variant(chat, mark)`` is the session as a process has never seen it: every text content
marked (a JSON object content gets a ``"round"`` key, other text a suffix), so no token count,
encoding or parsed history of an earlier variant is reused.  ``FRESH`` holds, per fresh-process
measurement, the code run untimed (``setup``) and the statement timed (``run``), as asv's
``timeraw_`` benchmarks take them; ``fresh_code`` makes one script of them that prints the
statement's seconds.  Needs ``langchain-core`` and the ``tokens`` extra.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

#: the recorded 168-message support session, in a source checkout
SESSION = Path(__file__).resolve().parents[2] / "tests" / "data" / "support_long.jsonl"


def load_session(path: Path = SESSION) -> list[dict[str, Any]]:
    """The session's messages without their ``dsgc`` annotations."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "dsgc"} for line in lines]


def variant(chat: list[dict[str, Any]], mark: int) -> list[dict[str, Any]]:
    """``chat`` with every text content marked ``mark``; tool calls and other fields as they are."""
    out = []
    for message in chat:
        content = message.get("content")
        if isinstance(content, str):
            try:
                value = json.loads(content)
            except ValueError:
                value = None
            if isinstance(value, dict):
                content = json.dumps({**value, "round": mark}, separators=(",", ":"))
            else:
                content = f"{content} (round {mark})"
        out.append({**message, "content": content})
    return out


#: loads the session as ``chat`` (dicts) and ``held`` (LangChain messages), its ``budget``, and the
#: o200k_base encoding (which the tiktoken counter of ``trim_messages`` needs built)
_SESSION_SETUP = """
from langchain_core.messages import convert_to_messages
from dsgc_bench.agent_path import load_session
from dsgc_bench.chat_history import trim_call
from dsgc_fast.memory.token_counts import conversation_tokens, encoding
chat = load_session()
budget = conversation_tokens(chat) // 4
held = convert_to_messages(chat)
encoding("o200k_base")
"""

#: ``{name: (setup, run)}`` of each fresh-process measurement
FRESH: dict[str, tuple[str, str]] = {
    "import adapter": ("", "import dsgc_fast.integrations.langchain"),
    "import langchain_core.messages": ("", "import langchain_core.messages"),
    "first select_messages": (
        _SESSION_SETUP + "from dsgc_fast.integrations.langchain import select_messages\n",
        "select_messages(held, max_tokens=budget)",
    ),
    "first trim_messages": (_SESSION_SETUP + "trim = trim_call(chat, budget)\n", "trim()"),
}

_SCRIPT = """
import sys, time
{setup}
started = time.perf_counter()
{run}
sys.stdout.write(repr(time.perf_counter() - started))
"""


def fresh_code(setup: str, run: str) -> str:
    """A script that runs ``setup``, then ``run`` timed, and prints ``run``'s seconds."""
    return _SCRIPT.format(setup=textwrap.dedent(setup), run=run)
