"""A scripted model for the OpenAI Agents SDK tests: the SDK's ``Model`` interface, offline.

``ScriptedModel`` replies by the rules of ``tests/_scripted_models.py``: a user message that
starts with "look up" gets a ``lookup`` function call (a call id unique per request), a
function result gets a message naming it, anything else a plain answer.  Every input it is
sent is kept in ``seen``.  ``chat_to_items`` turns the OpenAI-style chat messages of the test
sessions into Responses input items.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def _text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content or ())


class ScriptedModel(Model):
    def __init__(self) -> None:
        self.seen: list[list[Any]] = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.seen.append(items)
        last = items[-1]
        if last.get("type") == "function_call_output":
            output = [self._message(f"Result: {last['output']}")]
        elif last.get("role") == "user" and _text(last).lower().startswith("look up"):
            digest = hashlib.sha256(_text(last).encode() + str(len(items)).encode()).hexdigest()[:12]
            output = [
                ResponseFunctionToolCall(
                    type="function_call", id=f"fc_{digest}", call_id=f"call_{digest}", name="lookup",
                    arguments=json.dumps({"query": _text(last)[8:]}), status="completed",
                )
            ]  # fmt: skip
        else:
            output = [self._message(f"Answered with {len(items)} items in context.")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    @staticmethod
    def _message(text: str) -> ResponseOutputMessage:
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        return ResponseOutputMessage(
            type="message", id=f"msg_{digest}", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )  # fmt: skip

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("the scripted model does not stream")


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
