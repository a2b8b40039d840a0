"""What one block mentions: identifiers in its prose, values in its JSON, and the values it holds.

A block is a plain text or an OpenAI-style chat message (``role``, ``content``, assistant
``tool_calls`` / legacy ``function_call``, ``tool_call_id``; see ``traces``).  Its parts:

- **prose**: the message's content (a string or text parts), or the plain block's text; a
  tool result's content is prose only when it is not JSON;
- **JSON payloads**: each call's arguments (under the call's function name) and a tool
  result's content when it parses as a JSON object or array (under the function name of
  the call it answers, when known).

``read`` turns them into ``BlockMentions``:

- ``mentions``, in document order, of three sources: ``"prose"``, the ``tokens``
  identifiers of the prose and of every JSON string leaf that is not a value as a whole
  (there without word codes, ``json_values.is_word_code``), except *schema names*: the
  function names of every call read so far (this block's included) and the keys of their
  payloads that are word codes (``get_order_details``, ``order_id``) are never
  identifiers, in prose either (a key holding a digit, ``USR003`` keying a table, may be
  data); ``"json"``, the JSON leaves
  that are values by the ``json_values`` rules, with the key's stem as head noun (keys
  themselves are never read); ``"known"``, prose words that are no identifier by the
  ``tokens`` rules but carry the key of a value some earlier JSON payload named (``cancel
  12446`` after ``{"order_id": 12446}``, ``AAPL`` after ``{"symbol": "AAPL"}``);
- ``holds``: every key the block offers to a later step (``traces``): its mentions' keys and
  the keys of every prose word (``word_key``: a number of four or more digits, an
  all-capitals code, any other word by ``tokens.normal_key``), so a user message that says
  "buy 100 AAPL" or "the temp folder" holds ``aapl`` and ``temp``.

A prose *word* is a run of letters, digits, ``_ . @ -`` starting with a letter or digit,
without trailing ``. - @``.  Everything is read once, left to right: linear time.

Keys per block.  A block offers at most ``block_key_limit`` distinct keys: one per
``CHARS_PER_KEY`` characters of its prose and payloads, and at least ``MIN_BLOCK_KEYS``.  Past
the limit, the keys of its mentions come first (values and identifiers, in document order),
then those of its other words (in order); the rest are dropped, with their mentions.  The state induction keeps per key is then bounded by the block's
size, whatever a large tool result holds (a table of 100,000 distinct values would
otherwise cost tens of times its size for the life of the store).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from .._text_caches import text_memo
from . import json_values
from .tokens import identifier_key, iter_identifiers, normal_key

#: characters of a block per key it may offer to later blocks (``block_key_limit``)
CHARS_PER_KEY = 256
#: keys any block may offer, however short
MIN_BLOCK_KEYS = 256
#: longest prose piece whose reading is memoized (``prose_reading``)
MEMO_CHARS = 512
_WORD = re.compile(r"[^\W_][\w.@-]*")


class Call(NamedTuple):
    """One tool call of an assistant message: id (None for a legacy call), function, arguments."""

    id: str | None
    name: str
    arguments: Any  # the arguments as given: a JSON text, or already a mapping or list


class Parts(NamedTuple):
    """A block as induction reads it (module docstring); ``role`` is None for a plain block."""

    role: str | None
    prose: str
    calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    function: str | None = None  # a legacy function result's name

    @property
    def is_result(self) -> bool:
        return self.role in ("tool", "function")


class Prose(NamedTuple):
    """One piece of prose; ``descriptions``: whether definite descriptions in it are read
    (a message's own content or a plain block's text, not a string inside JSON)."""

    text: str
    descriptions: bool


class Mention(NamedTuple):
    """One mention, in document order.

    ``source`` is ``"prose"`` (a ``tokens`` identifier), ``"json"`` (a JSON value, whose
    ``noun`` is its key's stem) or ``"known"`` (a prose word naming an earlier JSON value);
    ``piece`` is the prose it stands in (None for a JSON value) and ``start``/``end`` its
    span there.
    """

    key: str
    surface: str
    source: str
    noun: str | None = None
    piece: Prose | None = None
    start: int = 0
    end: int = 0


@dataclass
class BlockMentions:
    """What ``read`` finds in one block (module docstring)."""

    prose: list[Prose] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    holds: dict[str, None] = field(default_factory=dict)  # in the order first offered

    def limit(self, count: int) -> None:
        """Keep ``count`` keys: the mentions' first (document order), then the other words'; drop the rest."""
        if len(self.holds) <= count:
            return
        ranked = dict.fromkeys(m.key for m in self.mentions)
        ranked.update(self.holds)
        kept = dict.fromkeys(itertools.islice(ranked, count))
        self.holds = {key: None for key in self.holds if key in kept}
        self.mentions = [m for m in self.mentions if m.key in kept]

    def keys(self) -> set[str]:
        """The keys of every mention."""
        return {m.key for m in self.mentions}


def content_text(content: Any, where: str) -> str:
    """A message's content as text (text parts joined by newlines)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    raise DsgcTypeError(f"{where}['content'] must be a string, None or a list of parts, got {type(content).__name__}")


def tool_calls(message: Mapping[str, Any], where: str) -> tuple[Call, ...]:
    """The calls a message makes (``tool_calls``, then a legacy ``function_call``)."""
    calls = []
    for k, call in enumerate(message.get("tool_calls") or ()):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise DsgcValueError(f"{where}['tool_calls'][{k}] needs a 'function' mapping")
        calls.append(Call(call.get("id"), str(fn.get("name", "")), fn.get("arguments") or ""))
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append(Call(None, str(legacy.get("name", "")), legacy.get("arguments") or ""))
    return tuple(calls)


def parts(text: str, message: Mapping[str, Any] | None = None, where: str = "message") -> Parts:
    """The parts of a plain block (``message`` None: its text is prose) or of a chat message."""
    if message is None:
        return Parts(None, text)
    role = message.get("role")
    if not isinstance(role, str):
        raise DsgcTypeError(f"{where} must be a mapping with a string 'role'")
    call_id = message.get("tool_call_id")
    return Parts(
        role,
        content_text(message.get("content"), where),
        tool_calls(message, where),
        call_id if isinstance(call_id, str) else None,
        str(message.get("name", "")) if role == "function" else None,
    )


@text_memo
@lru_cache(maxsize=1 << 16)
def word_key(word: str) -> str:
    """The key a prose word offers (module docstring)."""
    number = json_values.number_text_key(word)
    if number is not None:
        return number
    if json_values.CAPS_CODE.fullmatch(word):
        return word.lower()
    return normal_key(word)


def block_key_limit(block: Parts) -> int:
    """How many distinct keys ``block`` may offer (module docstring, "Keys per block")."""
    size = len(block.prose) + sum(len(c.name) + len(str(c.arguments)) for c in block.calls)
    return max(MIN_BLOCK_KEYS, size // CHARS_PER_KEY)


class MentionReader:
    """Reads blocks in time order; remembers the keys JSON payloads have named (``known``)
    and the schema names they have used."""

    def __init__(self) -> None:
        self.value_keys: set[str] = set()
        self.schema_keys: set[str] = set()

    def read(self, block: Parts, tool: str | None = None) -> BlockMentions:
        """The mentions of one block (module docstring); ``tool``: for a tool result, the
        function name of the call it answers (the stem of keys without one)."""
        out = BlockMentions()
        payloads: list[tuple[Any, str | None]] = [(c.arguments, c.name) for c in block.calls]
        content = json_values.parse(block.prose) if block.is_result else None
        if content is not None:
            payloads.insert(0, (content, block.function or tool))
        read = [self._leaves(payload, name) for payload, name in payloads]  # the schema names first
        if content is None and block.prose:
            self._prose(Prose(block.prose, descriptions=True), out)
        for found in read:
            if isinstance(found, str):
                if found:
                    self._prose(Prose(found, descriptions=False), out, in_json=True)
            else:
                self._payload(found, out)
        out.limit(block_key_limit(block))
        self.value_keys.update(m.key for m in out.mentions if m.source == "json")
        return out

    def _leaves(self, payload: Any, tool: str | None) -> list[json_values.Leaf] | str:
        """The leaves of a payload, or its text when it is no JSON object or array; learns
        its function name and word-code keys as schema names (module docstring)."""
        if tool:
            self._learn(tool)
        parsed = json_values.parse(payload) if isinstance(payload, str) else payload
        if not isinstance(parsed, (Mapping, list)):
            return payload if isinstance(payload, str) else ""
        keys: set[str] = set()
        found = list(json_values.leaves(parsed, json_values.tool_noun(tool) if tool else None, keys))
        for key in keys:
            if json_values.is_word_code(key):
                self._learn(key)
        return found

    def _learn(self, name: str) -> None:
        key = identifier_key(name)
        if key is not None:
            self.schema_keys.add(key)

    def _payload(self, found: list[json_values.Leaf], out: BlockMentions) -> None:
        for leaf in found:
            value = json_values.leaf_value(leaf)
            if value is not None:
                out.mentions.append(Mention(value.key, value.surface, "json", value.noun))
                out.holds[value.key] = None
            elif isinstance(leaf.value, str) and leaf.value:
                self._prose(Prose(leaf.value, descriptions=False), out, in_json=True)

    def _prose(self, piece: Prose, out: BlockMentions, *, in_json: bool = False) -> None:
        """Read one piece of prose; ``in_json``: a string of a payload (word codes left out)."""
        text = piece.text
        reading = prose_reading(text, in_json)
        out.prose.append(piece)
        schema = self.schema_keys
        found = [
            Mention(key, surface, "prose", None, piece, start, end)
            for key, surface, start, end in reading.identifiers
            if key not in schema
        ]
        out.holds.update(reading.holds)
        if not self.value_keys.isdisjoint(reading.holds):  # "known" mentions: the words' spans are needed
            spans = {m.start for m in found}
            for match, key in zip(_WORD.finditer(text), reading.keys):
                start = match.start()
                if key in self.value_keys and start not in spans:
                    word = match.group().rstrip(".@-")
                    found.append(Mention(key, word, "known", None, piece, start, start + len(word)))
            found.sort(key=lambda m: m.start)  # the identifiers come in text order already
        out.mentions.extend(found)
        for m in found:
            out.holds[m.key] = None


class Reading(NamedTuple):
    """What a piece of prose holds whatever was read before it (``prose_reading``).

    ``identifiers``: ``(key, surface, start, end)`` of its ``tokens`` identifiers, in text
    order (word codes left out in a JSON string); ``keys``: the ``word_key`` of each prose
    word, in order; ``holds``: the distinct ones, in order of first occurrence.
    """

    identifiers: tuple[tuple[str, str, int, int], ...]
    keys: tuple[str, ...]
    holds: dict[str, None]


@text_memo
@lru_cache(maxsize=1 << 16)
def _raw_word_key(word: str) -> str:
    """``word_key`` of a ``_WORD`` match (trailing ``. @ -`` stripped)."""
    return word_key(word.rstrip(".@-"))


def _read_prose(text: str, in_json: bool) -> Reading:
    identifiers = tuple(
        found for found in iter_identifiers(text) if not (in_json and json_values.is_word_code(found[1]))
    )
    keys = tuple(map(_raw_word_key, _WORD.findall(text)))
    return Reading(identifiers, keys, dict.fromkeys(keys))


_memo_prose = text_memo(lru_cache(maxsize=1 << 14)(_read_prose))


def prose_reading(text: str, in_json: bool = False) -> Reading:
    """The ``Reading`` of ``text``; ``in_json``: a string of a payload (word codes left out).

    Memoized for pieces of at most ``MEMO_CHARS`` characters (JSON strings, short messages:
    the same status, date or name recurs across tool results), so a repeated piece is read
    once.  A ``Reading`` is shared between calls: never modify it.
    """
    return _memo_prose(text, in_json) if len(text) <= MEMO_CHARS else _read_prose(text, in_json)
