"""The agent path beside LangChain's ``trim_messages`` with a tiktoken counter: four ratios in one run.

    .venv/bin/python tools/agent_path.py                 # 5 rounds
    .venv/bin/python tools/agent_path.py --rounds 9

The history is the recorded 168-message support session ``tests/data/support_long.jsonl``
(``dsgc_bench.agent_path``), held as LangChain messages; the budget a quarter of what it costs
in o200k_base tokens with chat framing.  ``select_messages`` is the LangChain adapter
(``dsgc_fast.integrations.langchain``) with its defaults; ``trim_messages`` is the documented
call of ``dsgc_bench.chat_history.trim_call`` (strategy "last", system message kept, starting on
a human message, the how-to guide's tiktoken counter).  Best of ``--rounds`` rounds, the
contenders interleaved round by round:

import          ``import dsgc_fast.integrations.langchain`` beside ``import langchain_core.messages``,
                each in a fresh process (the import alone, not the interpreter's start), with
                the modules' bytecode cached as an install leaves it (the children write
                ``__pycache__`` even where ``PYTHONDONTWRITEBYTECODE`` is set: without it every
                import compiles dsgc's sources again, while site-packages hold compiled ones);
first call      in a fresh process, after the imports, the session's conversion to LangChain
                messages and the o200k_base encoding's load (the tiktoken counter needs it built),
                the first ``select_messages`` beside the first ``trim_messages``; Numba's on-disk
                cache is made warm by an untimed fresh process first;
new history     in a warm process, ``select_messages`` on a history the process has not seen
                (each round ``dsgc_bench.agent_path.variant`` of the session: every text gets a
                round mark, so nothing of it is cached) beside ``trim_messages`` on it;
same history    ``select_messages`` on the same list again (the process cache's hit) beside
                ``trim_messages`` on it (``dsgc_bench.timing.interleaved``).

Ratios are dsgc time over peer time; the targets are those of issue 29.  Needs the
``langchain`` and ``tokens`` extras.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from dsgc_bench.agent_path import FRESH, SESSION, fresh_code, load_session, variant
from dsgc_bench.timing import interleaved


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} us"


def fresh(name: str) -> float:
    """Seconds of ``FRESH[name]``'s statement in a new interpreter (this one's ``sys.path`` and environment)."""
    code = fresh_code(*FRESH[name])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # bytecode kept, as installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise RuntimeError(f"{name}: the child process failed\n{out.stderr}")
    return float(out.stdout.strip().splitlines()[-1])


def warm(rounds: int) -> dict[str, float]:
    """Best times of ``select_messages`` and ``trim_messages`` on new and on same histories in this process."""
    from langchain_core.messages import convert_to_messages

    from dsgc_bench.chat_history import trim_call
    from dsgc_fast.integrations.langchain import select_messages
    from dsgc_fast.memory.token_counts import conversation_tokens

    chat = load_session()
    budget = conversation_tokens(chat) // 4
    held = convert_to_messages(chat)
    same = interleaved([lambda: select_messages(held, max_tokens=budget), trim_call(chat, budget)], rounds)
    best = {"select, same": same[0], "trim, same": same[1], "select, new": float("inf"), "trim, new": float("inf")}
    for mark in range(rounds):  # one call each per new history: a second call would find it cached
        new_chat = variant(chat, mark)
        new_held, new_trim = convert_to_messages(new_chat), trim_call(new_chat, budget)
        t0 = time.perf_counter()
        new_trim()
        t1 = time.perf_counter()
        select_messages(new_held, max_tokens=budget)
        t2 = time.perf_counter()
        best["trim, new"] = min(best["trim, new"], t1 - t0)
        best["select, new"] = min(best["select, new"], t2 - t1)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    fresh("first select_messages")  # Numba's on-disk cache and the bytecode made warm (and the OS's file cache)
    times = dict.fromkeys(FRESH, float("inf"))
    for _ in range(args.rounds):
        for name in FRESH:
            times[name] = min(times[name], fresh(name))
    times.update(warm(args.rounds))
    rows = [
        ("adapter import (fresh process)", "import adapter", "import langchain_core.messages", "<= 2"),
        ("first call (fresh process)", "first select_messages", "first trim_messages", "<= 2"),
        ("new history (warm process)", "select, new", "trim, new", "<= 2"),
        ("same history again", "select, same", "trim, same", "<= 0.5"),
    ]
    print(f"Session: `{SESSION.name}`, best of {args.rounds} rounds.\n")
    print("| step | dsgc | peer | dsgc / peer | target |")
    print("|---|---:|---:|---:|---:|")
    for label, mine, peer, target in rows:
        print(f"| {label} | {_fmt(times[mine])} | {_fmt(times[peer])} | {times[mine] / times[peer]:.2f}x | {target} |")


if __name__ == "__main__":
    main()
