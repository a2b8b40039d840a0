"""The feature table: dsgc's adapters beside LangChain's ``trim_messages``, LlamaIndex ``Memory``
and the Agents SDK's ``SQLiteSession``, measured on ``tests/data/support_long.jsonl``.

For each tool and each budget (a share of the session's o200k_base tokens, chat framing
included) it builds the context the tool would send for the session's last turn, "Did that
account clear KYC?", and records: whether the binder of "that account" (turn 25, or a
binding table naming 8841-C) is in it, how many tool messages are orphaned (a result without
its call, a call without its results), the o200k_base tokens it costs, and its size.  The
per-tool facts below the table (what the limit counts, explanations, persistence, what
happens to dropped messages) come from these runs and the libraries' documentation.

    python tools/feature_table.py                 # prints the Markdown tables
    python tools/feature_table.py --out docs/FEATURES.md

Needs the ``langchain`` and ``openai-agents`` extras; LlamaIndex (``llama-index-core``, the
``peers`` extra) is measured when it is installed and reported as not installed otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import warnings
from collections.abc import Callable, Container
from pathlib import Path

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the scripted models in tests/

from dsgc_fast.memory.messages import message_text
from dsgc_fast.memory.token_counts import message_tokens, token_counter

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "tests" / "data" / "support_long.jsonl"
SHARES = (0.05, 0.10, 0.25, 0.50, 0.75)
COUNT = token_counter("o200k_base")
BINDER_PREFIX = "Urgent: account 8841-C"

Chat = list[dict]


def load() -> tuple[Chat, Chat]:
    """The session as chat messages with and without their ``dsgc`` annotations."""
    annotated = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()]
    return annotated, [{k: v for k, v in m.items() if k != "dsgc"} for m in annotated]


def cost(messages: Chat) -> int:
    return sum(message_tokens(m, COUNT) for m in messages)


def orphans(messages: Chat) -> int:
    """Tool results without their call, plus calls whose results are missing."""
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
    results = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    return len(results - calls) + len(calls - results)


def keeps_binder(messages: Chat) -> bool:
    texts = [message_text(m) for m in messages]
    return any(t.startswith(BINDER_PREFIX) or ("that account" in t and "8841-C" in t) for t in texts)


# -- the tools ------------------------------------------------------------------------------
def dsgc_thread_memory_messages(records: Chat) -> list:
    """The session as LangChain messages with ids, annotations in ``additional_kwargs``."""
    from tests._scripted_models import langchain_messages

    return langchain_messages(records, ids="s")


def dsgc_thread_memory(annotated: bool) -> Callable[[Chat, Chat, int], Chat]:
    from langchain_core.messages import convert_to_openai_messages

    from dsgc_fast.integrations.langchain import ThreadMemory

    def run(with_notes: Chat, plain: Chat, budget: int) -> Chat:
        memory = ThreadMemory(budget, tokenizer="o200k_base")
        return [
            convert_to_openai_messages(m)
            for m in memory.select(dsgc_thread_memory_messages(with_notes if annotated else plain))
        ]

    return run


def dsgc_input_filter(with_notes: Chat, plain: Chat, budget: int) -> Chat:
    from agents.models.chatcmpl_converter import Converter

    from dsgc_fast.integrations.openai_agents import InputFilter
    from tests._scripted_agents_model import chat_to_items

    notes = {m["content"]: m["dsgc"] for m in with_notes if "dsgc" in m}
    items = chat_to_items(plain)

    def annotate(item: dict) -> dict | None:
        return notes.get(item.get("content")) if isinstance(item.get("content"), str) else None

    return Converter.items_to_messages(InputFilter(budget, tokenizer="o200k_base", annotate=annotate).select(items))


def dsgc_select_messages(with_notes: Chat, plain: Chat, budget: int) -> Chat:
    from langchain_core.messages import convert_to_openai_messages

    from dsgc_fast.integrations.langchain import select_messages

    messages = dsgc_thread_memory_messages(with_notes)
    return [convert_to_openai_messages(m) for m in select_messages(messages, max_tokens=budget, tokenizer="o200k_base")]


def trim(recommended: bool) -> Callable[[Chat, Chat, int], Chat]:
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages

    def counter(messages: list) -> int:  # trim_messages calls it with a list of messages
        return sum(message_tokens(convert_to_openai_messages(m), COUNT) for m in messages)

    def run(with_notes: Chat, plain: Chat, budget: int) -> Chat:
        options = {"include_system": True, "start_on": "human", "end_on": ("human", "tool")} if recommended else {}
        kept = trim_messages(
            convert_to_messages(plain), max_tokens=budget, token_counter=counter, strategy="last", **options
        )
        return [convert_to_openai_messages(m) for m in kept]

    return run


def llama_memory(with_notes: Chat, plain: Chat, budget: int) -> Chat:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory

    memory = Memory.from_defaults(
        session_id="support", token_limit=budget, chat_history_token_ratio=1.0,
        token_flush_size=max(1, budget // 10), tokenizer_fn=lambda text: [0] * COUNT(text),
    )  # fmt: skip
    for m in plain:
        extra = {"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}
        if m.get("tool_call_id"):
            extra["tool_call_id"] = m["tool_call_id"]
        memory.put(ChatMessage(role=m["role"], content=m.get("content"), additional_kwargs=extra))
    out = []
    for message in memory.get():
        record = {"role": str(message.role.value), "content": message.content}
        record.update(message.additional_kwargs)
        out.append(record)
    return out


def sdk_session(with_notes: Chat, plain: Chat, budget: int) -> Chat:
    from agents import SQLiteSession
    from agents.models.chatcmpl_converter import Converter

    from tests._scripted_agents_model import chat_to_items

    items = chat_to_items(plain)
    limit = 0  # the largest item count whose newest items fit the budget: the best limit a user could set
    while limit < len(items) and cost(Converter.items_to_messages(items[-(limit + 1) :])) <= budget:
        limit += 1

    async def session_items():
        session = SQLiteSession("support")
        await session.add_items(items)
        return await session.get_items(limit=max(limit, 1))

    got = asyncio.run(session_items())
    try:
        return Converter.items_to_messages(got)
    except Exception:  # a leading function_call_output the converter cannot place: count it as sent
        return [
            {"role": "tool", "tool_call_id": i["call_id"], "content": i["output"]}
            if i.get("type") == "function_call_output"
            else i
            for i in got
        ]


TOOLS: list[tuple[str, Callable[[], Callable[[Chat, Chat, int], Chat]]]] = [
    ("dsgc ThreadMemory (LangGraph hook), annotated", lambda: dsgc_thread_memory(True)),
    ("dsgc ThreadMemory, no annotations", lambda: dsgc_thread_memory(False)),
    ("dsgc InputFilter (Agents SDK), annotated", lambda: dsgc_input_filter),
    ("dsgc select_messages (trim_messages-shaped), annotated", lambda: dsgc_select_messages),
    ("trim_messages, recommended options", lambda: trim(True)),
    ("trim_messages, max_tokens only", lambda: trim(False)),
    ("LlamaIndex Memory", lambda: llama_memory),
    ("Agents SDK SQLiteSession(limit=best fit)", lambda: sdk_session),
]

FACTS = {
    # tool: (what the limit counts, explains decisions, persists, what happens to dropped messages)
    "dsgc": (
        "model tokens with chat framing (tokenizer=)",
        "yes: a reason and score parts per block (report.explain)",
        "nothing of its own: a pure function of the thread's messages (LangGraph checkpointer for the thread)",
        "left in the caller's list, sent again when a new message needs them; removed ones kept nowhere",
    ),
    "trim_messages": (
        "whatever token_counter counts",
        "no",
        "no (stateless; the caller keeps the list)",
        "left in the caller's list",
    ),
    "LlamaIndex Memory": (
        "tokens of tokenizer_fn (default tiktoken cl100k)",
        "no",
        "SQL chat store (async SQLAlchemy)",
        "archived in its SQL store, passed to memory blocks",
    ),
    "SQLiteSession": (
        "items (limit=), not tokens",
        "no",
        "SQLite file",
        "kept in the session; only the newest `limit` items are read",
    ),
}


def measure(
    names: Container[str] | None = None,
) -> tuple[int, list[tuple[str, list[tuple[int, bool, int, int, int, int]] | str]]]:
    """The session's tokens and one row per tool of ``TOOLS`` (those in ``names``, if given)."""
    annotated, plain = load()
    total = cost(plain)
    rows = []
    for name, make in TOOLS:
        if names is not None and name not in names:
            continue
        try:
            run = make()
        except ImportError as exc:
            rows.append((name, f"not installed ({exc.name})"))
            continue
        cells = []
        for share in SHARES:
            budget = int(total * share)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sent = run(annotated, plain, budget)
            cells.append((budget, keeps_binder(sent), orphans(sent), cost(sent), len(sent), len(plain)))
        rows.append((name, cells))
    return total, rows


def versions() -> str:
    from importlib import metadata

    found = []
    for name in ("langchain-core", "langgraph", "llama-index-core", "openai-agents"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def render(total: int, rows) -> str:
    lines = [
        "# dsgc beside trim_messages, LlamaIndex Memory and the Agents SDK session",
        "",
        f"Written by `python tools/feature_table.py --out docs/FEATURES.md` ({versions()}).",
        "",
        f"Session: `tests/data/support_long.jsonl`, {len(load()[1])} messages, {total} o200k_base tokens with chat framing; "
        'the context each tool sends for the last turn ("Did that account clear KYC?").',
        "",
        'Each cell: binder of "that account" kept (yes/no) · orphaned tool messages · tokens sent (o200k_base) · messages sent.',
        "Budgets are shares of the session's tokens. trim_messages counts with the same o200k_base framing counter,",
        "LlamaIndex Memory with o200k_base as `tokenizer_fn` (chat_history_token_ratio 1.0, flush size a tenth of the",
        "budget), SQLiteSession's `limit` is the largest item count whose newest items fit the budget (it counts items,",
        'not tokens). The annotated rows mark message 26 (index 25) as binding "that account" and the last turn as using it;',
        "the others get no annotations (they have no place for them).",
        "",
        "| tool | " + " | ".join(f"{int(s * 100)}% ({int(total * s)} tok)" for s in SHARES) + " |",
        "| --- |" + " --- |" * len(SHARES),
    ]
    for name, cells in rows:
        if isinstance(cells, str):
            lines.append(f"| {name} | " + " | ".join([cells] * len(SHARES)) + " |")
            continue
        parts = []
        for budget, binder, orphan, used, sent, _ in cells:
            over = " **over**" if used > budget else ""
            parts.append(f"{'yes' if binder else 'no'} · {orphan} · {used}{over} · {sent}")
        lines.append(f"| {name} | " + " | ".join(parts) + " |")
    lines += [
        "",
        "| tool | the limit counts | explains decisions | persists | dropped messages |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, facts in FACTS.items():
        lines.append(f"| {name} | " + " | ".join(facts) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the tables to this Markdown file")
    args = parser.parse_args()
    table = render(*measure())
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
