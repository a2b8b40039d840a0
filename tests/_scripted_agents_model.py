"""A scripted model for the OpenAI Agents SDK tests: the SDK's ``Model`` interface, offline.

``PlannedModel`` replies with what a test's plan function returns for its input.
``ScriptedModel`` replies by the rules of ``tests/_scripted_models.py``: a user message that
starts with "look up" gets a ``lookup`` function call (a call id unique per request), a
function result gets a message naming it, anything else a plain answer.  Every input either
is sent is kept in ``seen``.  ``chat_to_items`` turns the OpenAI-style chat messages of the
test sessions into Responses input items.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def text_of(item: dict) -> str:
    """An input message's text (its text parts joined)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content or ())


class PlannedModel(Model):
    """A ``Model`` whose reply is ``plan(items)`` (its output items); every input it was sent is in ``seen``."""

    def __init__(self, plan: Callable[[list[Any]], list[Any]]) -> None:
        self.plan = plan
        self.seen: list[list[Any]] = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.seen.append(items)
        return ModelResponse(output=self.plan(items), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("the scripted model does not stream")


def reply_to(items: list[Any]) -> list[Any]:
    """The scripted reply to an input (see the module docstring)."""
    last = items[-1]
    if last.get("type") == "function_call_output":
        return [message(f"Result: {last['output']}")]
    if last.get("role") == "user" and text_of(last).lower().startswith("look up"):
        digest = hashlib.sha256(text_of(last).encode() + str(len(items)).encode()).hexdigest()[:12]
        return [function_call(f"call_{digest}", "lookup", {"query": text_of(last)[8:]})]
    return [message(f"Answered with {len(items)} items in context.")]


class ScriptedModel(PlannedModel):
    """``PlannedModel`` replying by ``reply_to``."""

    def __init__(self) -> None:
        super().__init__(reply_to)


def message(text: str) -> ResponseOutputMessage:
    """An assistant output message saying ``text``."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return ResponseOutputMessage(
        type="message", id=f"msg_{digest}", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )  # fmt: skip


def function_call(call_id: str, name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    """A call of the function tool ``name`` (its item id derived from ``call_id``)."""
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc_{call_id}", call_id=call_id, name=name, arguments=json.dumps(arguments),
        status="completed",
    )  # fmt: skip


def chat_to_items(messages: list[dict]) -> list[dict]:
    """OpenAI-style chat messages (``dsgc`` annotations dropped) as Responses input items."""
    items = []
    for k, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
            continue
        if message.get("content") is not None:
            if role == "assistant":
                items.append(
                    {"type": "message", "role": "assistant", "id": f"msg_{k}", "status": "completed",
                     "content": [{"type": "output_text", "text": message["content"], "annotations": []}]}
                )  # fmt: skip
            else:
                items.append({"role": role, "content": message["content"]})
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
    return items
