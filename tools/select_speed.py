"""``dsgc_fast.select`` against LangChain's ``trim_messages`` with a tiktoken counter, in one run.

    .venv/bin/python tools/select_speed.py                  # 100 and 1,000 messages
    .venv/bin/python tools/select_speed.py --sizes 1000 --rounds 9

The history is ``dsgc_bench.chat_history.chat_history(n)`` (an agent's chat: about a third of
it tool calls and JSON results), the budget a quarter of what the whole history costs in
o200k_base tokens.  Per call, contenders interleaved round by round (best round reported):

trim_messages   the documented call (strategy "last", system message kept, starting on a
                human message) with the how-to guide's tiktoken counter, over the history held
                as LangChain messages (``dsgc_bench.chat_history.trim_call``);
select, grown   the agent loop: the cache holds the history up to its previous complete
                prefix (the last tool call and its result, or the last message, are new), as
                after the previous model call;
select, same    the same history again (nothing new);
select, cold    an empty cache: every message planned, counted and encoded.

Both sides count o200k_base tokens offline; ``select`` uses the lexical encoder.  Ratios are
``select`` time over ``trim_messages`` time.  Needs ``langchain-core`` and the ``tokens`` extra.
"""

from __future__ import annotations

import argparse
import time

from dsgc_bench.chat_history import chat_history, complete_prefixes, trim_call
from dsgc_fast import SelectCache, select
from dsgc_fast.memory.token_counts import conversation_tokens


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} us"


def _grown(messages: list[dict], budget: int, reps: int) -> float:
    """Best time of ``select`` on ``messages`` with a cache that holds their previous complete prefix."""
    previous = max(k for k in complete_prefixes(messages) if k < len(messages))
    best = float("inf")
    for _ in range(reps):
        cache = SelectCache()
        select(messages[:previous], budget, cache=cache)
        started = time.perf_counter()
        select(messages, budget, cache=cache)
        best = min(best, time.perf_counter() - started)
    return best


def _best(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def measure(n: int, rounds: int) -> dict[str, float]:
    messages = chat_history(n)
    budget = conversation_tokens(messages) // 4
    trim = trim_call(messages, budget)
    same = SelectCache()
    contenders = {
        "trim_messages": lambda reps: _best(trim, reps),
        "select, grown": lambda reps: _grown(messages, budget, reps),
        "select, same": lambda reps: _best(lambda: select(messages, budget, cache=same), reps),
        "select, cold": lambda reps: _best(lambda: select(messages, budget, cache=SelectCache()), reps),
    }
    for run in contenders.values():  # warm-up: compilation, encodings, token counts
        run(1)
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, run in contenders.items():
            best[name] = min(best[name], run(3))
    return {"budget": budget, **best}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(
        "| messages | budget | trim_messages | select, grown | select, same | select, cold | grown / trim | same / trim | cold / trim |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        got = measure(n, args.rounds)
        trim = got["trim_messages"]
        times = [got[k] for k in ("trim_messages", "select, grown", "select, same", "select, cold")]
        ratios = [got[k] / trim for k in ("select, grown", "select, same", "select, cold")]
        print(
            f"| {n:,} | {got['budget']:,} | "
            + " | ".join(map(_fmt, times))
            + " | "
            + " | ".join(f"{r:.3f}x" for r in ratios)
            + " |"
        )


if __name__ == "__main__":
    main()
