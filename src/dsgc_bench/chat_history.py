"""Long chat histories, and LangChain's ``trim_messages`` set up as in its documentation, for timing.

``chat_history(n)`` is an agent's history of exactly ``n`` OpenAI-style messages: a system
prompt, then the tool-heavy long-range conversations (``dsgc_bench.longrange``) of seeds 0, 1,
2, ... one after another (their closing questions left out, tool-call ids made unique per
seed), cut after a whole exchange, then one closing question.  About a third of the messages
are tool calls and JSON tool results.  ``complete_prefixes`` lists the lengths at which a
prefix of a history is a valid request (no tool call waiting for its result), the points at
which an agent loop asks for its context.

``tiktoken_counter`` is the token counter of LangChain's how-to guide on trimming messages
(the cookbook's per-message rule over ``BaseMessage`` objects: 3 tokens per message plus the
role and the content, 1 more plus the name when set, 3 for the reply), counting with the
offline o200k_base encoding (``dsgc_fast.memory.token_counts.encoding``).  ``trim_call`` returns the
documented ``trim_messages`` call (strategy "last", system message kept, starting on a human
message) over the history converted once to LangChain messages, as a framework holds them.
Both need ``langchain-core`` and the ``tokens`` extra.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from .longrange import conversation

SYSTEM = "You are a helpful assistant for everyday questions. Use the tools when they help, and keep answers short."
CLOSING = "Before we stop: what did I say my name was, and which city do I live in?"


def chat_history(n: int) -> list[dict[str, Any]]:
    """Exactly ``n`` messages (``n >= 2``), a pure function of ``n`` (module docstring)."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    body: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for seed in itertools.count():
        for message in conversation(seed, tools=True).messages[:-1]:
            body.append(_with_seed(message, seed))
        if len(body) >= n:
            break
    cut = max((k for k in complete_prefixes(body) if k <= n - 1 and body[k - 1]["role"] == "assistant"), default=1)
    history = body[:cut]
    while len(history) < n - 1:  # pad to the length with short exchanges
        history.append(
            {"role": "user" if history[-1]["role"] == "assistant" else "assistant", "content": "Thanks, noted."}
        )
    if history[-1]["role"] == "user":
        history[-1] = {"role": "assistant", "content": "Thanks, noted."}
    return history + [{"role": "user", "content": CLOSING}]


def _with_seed(message: dict[str, Any], seed: int) -> dict[str, Any]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{**call, "id": f"s{seed}_{call['id']}"} for call in out["tool_calls"]]
    if "tool_call_id" in out:
        out["tool_call_id"] = f"s{seed}_{out['tool_call_id']}"
    return out


def complete_prefixes(messages: Sequence[dict[str, Any]]) -> list[int]:
    """Lengths k >= 1 at which ``messages[:k]`` has no tool call waiting for its result."""
    out, waiting = [], 0
    for k, message in enumerate(messages, start=1):
        if message.get("role") == "tool":
            waiting -= 1
        waiting += len(message.get("tool_calls") or ())
        if waiting == 0:
            out.append(k)
    return out


def tiktoken_counter() -> Callable[[list[Any]], int]:
    """The how-to guide's counter of a list of ``BaseMessage`` objects, with o200k_base offline."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from dsgc_fast.memory.token_counts import encoding

    enc = encoding("o200k_base")
    roles = {HumanMessage: "user", AIMessage: "assistant", ToolMessage: "tool", SystemMessage: "system"}

    def count(text: str) -> int:
        return len(enc.encode(text))

    def counter(messages: list[Any]) -> int:
        total = 3  # every reply is primed with <|start|>assistant<|message|>
        for message in messages:
            content = message.content if isinstance(message.content, str) else str(message.content)
            total += 3 + count(roles[type(message)]) + count(content)
            if message.name:
                total += 1 + count(message.name)
        return total

    return counter


def trim_call(messages: Sequence[dict[str, Any]], budget: int) -> Callable[[], list[Any]]:
    """``trim_messages`` as documented, over ``messages`` converted once to LangChain messages."""
    from langchain_core.messages import convert_to_messages, trim_messages

    held = convert_to_messages(list(messages))
    counter = tiktoken_counter()
    return lambda: trim_messages(
        held, max_tokens=budget, token_counter=counter, strategy="last", include_system=True, start_on="human"
    )
