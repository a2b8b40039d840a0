"""The kinds of content part a chat message may hold, and what each costs in tokens.

Content parts.  A list ``content`` costs the sum of its parts, each by the rule of its kind
(``CONTENT_KINDS``, rendered as the table of ``docs/content-types.md``; ``part_tokens``):

    text        n of its text fields (``text``, ``refusal``, ``thinking``, a reasoning
                summary's texts, a redacted thinking block's ``data``); signatures and
                encrypted reasoning are not counted (providers drop earlier turns' reasoning)
    image       IMAGE_TOKENS_LOW for ``detail: "low"`` (OpenAI's documented low-detail cost),
                else IMAGE_TOKENS: an estimate at or above both providers' documented maxima
                for one image (OpenAI's tile rule 85 + 170 per 512-pixel tile gives at most
                1,445 for GPT-4o-class models; Anthropic's width x height / 750 about 1,600,
                images being scaled to about 1.15 megapixels)
    audio       inline data: ceil(seconds x AUDIO_TOKENS_PER_SECOND) where seconds are the
                decoded bytes over AUDIO_BYTES_PER_SECOND of its format (uncompressed wav/pcm
                at 16,000 bytes a second, 8 kHz 16-bit mono, the least speech APIs take; any
                other format 2,000, 16 kbit/s); 32 tokens a second is the highest documented
                rate (Gemini; OpenAI's is about 10)
    file        inline ``text/*`` data: n of its decoded text; other inline data: one token per
                FILE_BYTES_PER_TOKEN decoded bytes (a PDF page costs its text and an image of
                it, 1,500 to 3,000 tokens by Anthropic's documentation)
    call        n(name) + n(its arguments or input, as JSON unless already a string)
    result      its ``content`` / ``output``: a string counted, parts by their own rules,
                anything else as JSON
    json        n of the part as compact JSON, an inline image field (``result`` of an image
                generation call) costing IMAGE_TOKENS instead
    unknown     n of the part as compact JSON, and one WARNING per kind and process on the
                ``dsgc.tokens`` logger

Audio or a file given only by reference (an id or URL) has no size here: it is counted as
JSON with a WARNING, like an unknown kind; give such a message an explicit cost (the ``dsgc``
annotation ``cost``) when it matters.  A bare string part counts as text.  Parts are never
changed: what is counted is what is sent.

``n`` is the counter's count of a text (``token_counts.TokenCounter.count``).
"""

from __future__ import annotations

import base64
import json
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

IMAGE_TOKENS = 1_600
IMAGE_TOKENS_LOW = 85
AUDIO_TOKENS_PER_SECOND = 32
#: bytes a second of audio by format (uncompressed formats); any other format: ``AUDIO_BYTES_PER_SECOND_COMPRESSED``
AUDIO_BYTES_PER_SECOND = {"wav": 16_000, "pcm16": 16_000, "pcm": 16_000, "l16": 16_000}
AUDIO_BYTES_PER_SECOND_COMPRESSED = 2_000
FILE_BYTES_PER_TOKEN = 2

logger = logging.getLogger("dsgc.tokens")


def string_field(field: str, value: Any) -> str:
    """``value``, which must be a string (``TypeError`` naming ``field`` otherwise)."""
    if not isinstance(value, str):
        raise DsgcTypeError(f"{field} must be a string, got {type(value).__name__}")
    return value


# -- content parts --------------------------------------------------------------------------
#: how a kind of content part is counted (the module doc states each rule)
RULES = ("text", "image", "audio", "file", "call", "result", "json")


@dataclass(frozen=True)
class ContentKind:
    """A kind of content part (its ``type``), who produces it and how it is counted.

    ``fields`` are what the rule reads: the text fields (``"text"``), the fields holding the
    name and the arguments (``"call"``), the result fields (``"result"``), the inline image
    fields (``"json"``), the payload object of an image, audio or file part.
    """

    kind: str
    produced_by: str
    rule: str
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise DsgcValueError(f"unknown content rule {self.rule!r}; expected one of {list(RULES)}")


_CHAT = "OpenAI Chat Completions, LangChain (`convert_to_openai_messages`)"
_RESPONSES = "OpenAI Responses API, Agents SDK"
_ANTHROPIC = "Anthropic Messages API, LangChain `ChatAnthropic`"
_LANGCHAIN_V1 = "LangChain standard content blocks"
_HOSTED = "OpenAI Responses API hosted tools, Agents SDK, LangChain `ChatOpenAI` (Responses)"

#: Responses items that can stand in content (LangChain keeps hosted-tool output there): counted as JSON
_JSON_ITEMS = (
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "computer_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "tool_search_call",
    "program",
    "additional_tools",
    "configuration_update",
    "compaction",
    "compaction_trigger",
    "item_reference",
)
#: every content-part kind with a rule; any other kind is counted as JSON with a warning
CONTENT_KINDS: tuple[ContentKind, ...] = (
    ContentKind("text", f"{_CHAT}, {_ANTHROPIC}", "text", ("text",)),
    ContentKind("input_text", _RESPONSES, "text", ("text",)),
    ContentKind("output_text", _RESPONSES, "text", ("text",)),
    ContentKind("refusal", f"{_CHAT}, {_RESPONSES}", "text", ("refusal",)),
    ContentKind("thinking", _ANTHROPIC, "text", ("thinking",)),
    ContentKind("redacted_thinking", _ANTHROPIC, "text", ("data",)),
    ContentKind("reasoning", f"{_LANGCHAIN_V1}, {_RESPONSES}", "text", ("reasoning", "summary", "content")),
    ContentKind("summary_text", _RESPONSES, "text", ("text",)),
    ContentKind("reasoning_text", _RESPONSES, "text", ("text",)),
    ContentKind("image_url", _CHAT, "image", ("image_url",)),
    ContentKind("input_image", _RESPONSES, "image", ()),
    ContentKind("image", f"{_ANTHROPIC}, {_LANGCHAIN_V1}", "image", ("source",)),
    ContentKind("computer_screenshot", _RESPONSES, "image", ()),
    ContentKind("input_audio", f"{_CHAT}, {_RESPONSES}", "audio", ("input_audio",)),
    ContentKind("audio", _LANGCHAIN_V1, "audio", ()),
    ContentKind("file", f"{_CHAT}, {_LANGCHAIN_V1}", "file", ("file",)),
    ContentKind("input_file", _RESPONSES, "file", ()),
    ContentKind("document", _ANTHROPIC, "file", ("source",)),
    ContentKind("tool_use", _ANTHROPIC, "call", ("name", "input")),
    ContentKind("server_tool_use", _ANTHROPIC, "call", ("name", "input")),
    ContentKind("tool_call", _LANGCHAIN_V1, "call", ("name", "args")),
    ContentKind("tool_call_chunk", _LANGCHAIN_V1, "call", ("name", "args")),
    ContentKind("server_tool_call", _LANGCHAIN_V1, "call", ("name", "args")),
    ContentKind("function_call", _RESPONSES, "call", ("name", "arguments")),
    ContentKind("custom_tool_call", _RESPONSES, "call", ("name", "input")),
    ContentKind("tool_result", _ANTHROPIC, "result", ("content",)),
    ContentKind("web_search_tool_result", _ANTHROPIC, "result", ("content",)),
    ContentKind("web_fetch_tool_result", _ANTHROPIC, "result", ("content",)),
    ContentKind("code_execution_tool_result", _ANTHROPIC, "result", ("content",)),
    ContentKind("mcp_tool_result", _ANTHROPIC, "result", ("content",)),
    ContentKind("server_tool_result", _LANGCHAIN_V1, "result", ("output",)),
    ContentKind("function_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("custom_tool_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("computer_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("local_shell_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("shell_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("apply_patch_call_output", _RESPONSES, "result", ("output",)),
    ContentKind("tool_search_output", _RESPONSES, "result", ("tools",)),
    ContentKind("program_output", _RESPONSES, "result", ("result",)),
    ContentKind("image_generation_call", _HOSTED, "json", ("result",)),
    *(ContentKind(kind, _HOSTED, "json") for kind in _JSON_ITEMS),
    ContentKind("non_standard", _LANGCHAIN_V1, "json"),
)
_KIND_OF = {k.kind: k for k in CONTENT_KINDS}
_warned: set[str] = set()
_MAX_WARNED = 1_024  # kinds warned about, at most (so made-up kinds cannot grow the set without end)
_warned_lock = threading.Lock()


def part_tokens(part: Any, count: Callable[[str], int]) -> int:
    """Tokens one content part costs under ``count``, by the rule of its kind (module doc)."""
    if isinstance(part, str):
        return count(part)
    rule = _rule_of(part)
    if rule is None:
        kind = part.get("type") if isinstance(part, Mapping) else None
        return _unknown(part, count, f"content part {kind[:80]!r}" if isinstance(kind, str) else "untyped content part")
    if rule.rule == "text":
        present = [part[f] for f in rule.fields if f in part]
        bad = [v for v in present if not isinstance(v, (str, list, tuple))]
        if bad or not present:  # a malformed part: the error names its kind
            string_field(f"{rule.kind} part", bad[0] if bad else None)
        return sum(_text_tokens(v, count) for v in present)
    if rule.rule == "image":
        return IMAGE_TOKENS_LOW if _payload(part, rule).get("detail") == "low" else IMAGE_TOKENS
    if rule.rule == "call":
        name, arguments = (part.get(f) for f in rule.fields)
        return count(name if isinstance(name, str) else "") + count(_as_text(arguments))
    if rule.rule == "result":
        return sum(_result_tokens(part.get(f), count) for f in rule.fields)
    if rule.rule == "json":
        images = [f for f in rule.fields if part.get(f)]
        rest = {k: v for k, v in part.items() if k not in images}
        return count(_as_text(rest)) + IMAGE_TOKENS * len(images)
    estimate = _media_tokens(rule, _payload(part, rule), count)
    return estimate if estimate is not None else _unknown(part, count, f"{rule.kind!r} part given without inline data")


def _rule_of(part: Any) -> ContentKind | None:
    """The rule of a part of a known kind (None for anything else)."""
    kind = part.get("type") if isinstance(part, Mapping) else None
    return _KIND_OF.get(kind) if isinstance(kind, str) else None


def _payload(part: Mapping[str, Any], rule: ContentKind) -> Mapping[str, Any]:
    """The object holding an image, audio or file part's fields (the part itself, or its payload field)."""
    for field in rule.fields:
        inner = part.get(field)
        if isinstance(inner, Mapping):
            return {**part, **inner}
        if isinstance(inner, str):
            return {**part, "url": inner}
    return part


def _media_tokens(rule: ContentKind, payload: Mapping[str, Any], count: Callable[[str], int]) -> int | None:
    """The audio or file estimate of the module doc, None without inline data."""
    data = next(
        (payload[k] for k in ("data", "file_data", "base64", "url", "image_url") if isinstance(payload.get(k), str)), ""
    )
    media_type = str(payload.get("mime_type") or payload.get("media_type") or payload.get("format") or "")
    if data.startswith("data:"):
        header, _, data = data.partition(",")
        media_type = header[5:].split(";")[0] or media_type
    elif not data or "://" in data or payload.get("source_type") in ("url", "id") or payload.get("type") == "url":
        return None
    size = len(data.rstrip("=")) * 3 // 4  # the decoded bytes of base64 data
    if rule.rule == "audio":
        rate = AUDIO_BYTES_PER_SECOND.get(media_type.lower().removeprefix("audio/"), AUDIO_BYTES_PER_SECOND_COMPRESSED)
        return math.ceil(size / rate * AUDIO_TOKENS_PER_SECOND)
    if media_type.startswith("text/"):
        try:
            return count(base64.b64decode(data, validate=False).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            pass  # not text after all: counted by its size
    return math.ceil(size / FILE_BYTES_PER_TOKEN)


def _text_tokens(value: Any, count: Callable[[str], int]) -> int:
    """A text field: a string, or a list of strings or parts with a ``text`` (a reasoning summary)."""
    if isinstance(value, str):
        return count(value)
    if isinstance(value, (list, tuple)):
        return sum(_text_tokens(v.get("text") if isinstance(v, Mapping) else v, count) for v in value)
    return 0


def _result_tokens(value: Any, count: Callable[[str], int]) -> int:
    """A result field: a string, a part or parts of known kinds by their rules, anything else as JSON."""
    if isinstance(value, str):
        return count(value)
    if _rule_of(value) is not None:
        return part_tokens(value, count)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) or _rule_of(v) for v in value):
        return sum(part_tokens(v, count) for v in value)
    return count(_as_text(value))


def _as_text(value: Any) -> str:
    """A string as it is, anything else as compact JSON (``TypeError`` for what is not JSON)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DsgcTypeError(f"a content part must be JSON: {exc}") from None


def _unknown(part: Any, count: Callable[[str], int], what: str) -> int:
    """The JSON count of a part whose cost has no rule, logged once per ``what`` in the process (``_MAX_WARNED`` at most)."""
    with _warned_lock:
        first = what not in _warned and len(_warned) < _MAX_WARNED
        if first:
            _warned.add(what)
    if first:
        logger.warning(
            "dsgc counts a %s as its JSON (no known cost); give such a message an explicit cost if that matters", what
        )
    return count(_as_text(part))
