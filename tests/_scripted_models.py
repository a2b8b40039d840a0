"""Scripted chat models for the framework-adapter tests: offline, deterministic, recording.

``ScriptedChatModel`` (LangChain) replies by rule from what it is sent: to a user message
that asks to look something up it answers with a call of the ``lookup`` tool (call ids
unique per user message), to a tool result with a short answer naming it, to anything
else with a plain answer.  Every list of messages it was sent is kept in ``seen``, so a
test can check what the model saw.  ``bind_tools`` returns the model itself (the rules
name the one tool the tests give it).  ``PlannedChatModel`` replies with what a test's plan
function says, for longer scripted sessions.  ``langchain_messages`` turns the OpenAI-style
test sessions into LangChain messages.
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


def reply_to(messages: list[BaseMessage]) -> AIMessage:
    """The scripted reply to a message list (see the module docstring)."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"Result: {last.content}")
    if isinstance(last, HumanMessage) and str(last.content).lower().startswith("look up"):
        digest = hashlib.sha256(f"{last.id}|{last.content}".encode()).hexdigest()[:12]
        return AIMessage(
            content="",
            tool_calls=[{"id": f"call_{digest}", "name": "lookup", "args": {"query": str(last.content)[8:]}}],
        )
    return AIMessage(content=f"Answered with {len(messages)} messages in context.")


def lookup(query: str) -> str:
    """Look up a record by its query (a scripted tool)."""
    return f"record for {query}: status cleared, 12 entries, " + "details " * 30


def langchain_messages(records: list[dict], *, ids: str | None = None) -> list[BaseMessage]:
    """OpenAI-style messages as LangChain messages, ``dsgc`` annotations in ``additional_kwargs``.

    ``ids``: a prefix to give message k the id ``f"{ids}{k}"`` (default: no ids).
    """
    out = []
    for k, record in enumerate(records):
        record = dict(record)
        annotation = record.pop("dsgc", None)
        (message,) = convert_to_messages([record])
        if ids is not None:
            message.id = f"{ids}{k}"
        if annotation:
            message.additional_kwargs["dsgc"] = annotation
        out.append(message)
    return out


class PlannedChatModel(BaseChatModel):
    """A chat model whose reply is ``plan(messages)`` (an ``AIMessage``); every list it was sent is in ``seen``."""

    plan: Any
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> PlannedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.plan(messages))])


class ScriptedChatModel(PlannedChatModel):
    """``PlannedChatModel`` replying by ``reply_to``."""

    plan: Any = reply_to
