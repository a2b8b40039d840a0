"""Values in tool-call arguments and tool results: which JSON leaves name something, and their head noun.

A tool call's arguments and a tool result are read as JSON when they parse (``parse``).
Their **keys** (and parameter and function names) are schema vocabulary: they are never
identifiers, never referents, never matched.  A key only says two things about the values
under it: what kind of thing they are (its *stem*, the head noun that binds them) and
whether plain words under it are names (folders, files).

**Key words.**  A key splits into lower-case words at ``_``, ``-``, spaces, digits and case
changes (``current_working_directory``: current, working, directory; ``ignitionMode``:
ignition, mode; ``MA(5)``: ma).

**Stem of a key** (``key_noun``): the last word that is neither an id word (``id``, ``ids``,
``name``, ``names``, ``number``, ``num``, ``no``, ``code``, ``key``, ``uuid``), nor a
generic tail (``list``, ``info``, ``details``, ``data``, ``content``, ``contents``), nor a
modifier (``new``, ``current``, ``previous``, ...), nor a function word; it needs three
letters.  ``order_id`` -> order, ``receiver_id`` -> receiver, ``current_working_directory``
-> directory, ``file_name`` -> file, ``stock_list`` -> stock.  A key without a stem (``id``,
``name``, ``new_id``) takes the stem of the key it sits under (``message_id.new_id`` ->
message), else the tool's *object noun* (``tool_noun``): the last word of the function
name after the first, skipping generic tails and needing three letters (``create_ticket``
-> ticket, ``get_order_details`` -> order, ``post_tweet`` -> tweet; ``ls``, ``find`` -> none).

**Value rules** (``leaf_key``), for a whole leaf (booleans and null are flags, never values):

1. a number whose integer part has at least four digits (``12446``, ``2203.4``): key
   ``#<shortest exact decimal>``; a string of four or more digits has key ``#<digits>``
   (``"12446"`` meets ``12446``);
2. a coded identifier by ``tokens`` rules spanning the whole string (``USR001``,
   ``ch_9f2a``, ``TeamNotes.txt``, ``/etc/app.yaml``, ``ops@acme.io``): its ``tokens`` key;
   except a *word code*, letters joined only by ``_`` or a case change (``rear_left``,
   ``CurrentSpeed``): in a payload those are field names and enumerated values, values
   only by rules 4 and 5;
3. an all-capitals code: a capital letter, then 1-7 capitals or digits, two letters at
   least (``AAPL``, ``SFO``, ``START``): the lower-cased code;
4. under a path key (a key word among ``file``, ``files``, ``filename``, ``folder``,
   ``folders``, ``dir``, ``directory``, ``directories``, ``path``, ``paths``, ``source``,
   ``destination``), a single word of letters, digits, ``_ . -`` (two characters at least,
   one a letter): a folder or file name (``document``, ``temp``): its ``tokens.normal_key``;
5. under an *id key* (a key word ``id`` or ``ids``) with a stem, a short id that rules 1-4
   miss: an integer, or a string of at most 32 word characters: a *kind-qualified* key
   ``<stem>#<value>`` (``{"ticket_id": 2}`` and ``{"id": 2}`` in a ``create_ticket``
   result meet as ``ticket#2``); a small number alone recurs too easily to match by value.

Anything else is no value: small numbers, plain words, dates, times, free text.  A string
that is not a value as a whole is read as prose: the ``tokens`` identifiers inside it
(``"'log.txt' moved to 'archive/log.txt'"`` holds ``log.txt`` and ``archive/log.txt``),
word codes left out (``is_word_code``).
Strings with a lone surrogate (``"\\ud800"`` parsed from an escape) are never values.

``leaves`` walks a parsed value with an explicit stack (no recursion, whatever the
nesting), and every rule reads each leaf once, so reading a payload takes time linear in
its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, NamedTuple

from .._text_caches import text_memo
from .tokens import CANDIDATE_RE, FUNCTION_WORDS, identifier_key, normal_key

#: trailing key words that say "an identifier of": the stem is the word before them
ID_WORDS = frozenset(["id", "ids", "name", "names", "number", "num", "no", "code", "key", "uuid"])
#: key words naming the value as an id (rule 5)
_ID_MARKS = frozenset(("id", "ids"))
#: trailing words that name a container or a view, not the thing
GENERIC_WORDS = frozenset(["list", "lists", "info", "details", "data", "content", "contents"])
#: words that qualify the thing rather than name it
MODIFIERS = frozenset(
    ["new", "old", "current", "previous", "last", "first", "next", "default", "original", "recent", "latest"]
)
#: key words whose plain-word values are folder and file names (rule 4)
PATH_WORDS = frozenset([
    "file", "files", "filename", "folder", "folders", "dir", "directory", "directories", "path", "paths", "source",
    "destination",
])  # fmt: skip
#: longest string tried as one value (longer strings are read as prose)
MAX_VALUE_CHARS = 256
#: longest string taken as a kind-qualified id (rule 5)
MAX_ID_CHARS = 32

#: one word of a key: an acronym before a capitalized word (``HTTP`` of ``HTTPCode``), a
#: lower-case word with an optional capital (``Code``, ``user``), or a trailing acronym
_KEY_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
#: four or more digits and nothing else: a number with a key (rule 1; shorter ones have none)
_DIGITS = re.compile(r"\d{4,}")
#: a decimal with an optional sign (``-1250.75``): it has a key when its integer part has four digits
_DECIMAL = re.compile(r"-?\d+\.\d+")
#: an all-capitals code of 2-8 characters, a letter first (``USD``, ``KYC2``); prose words too (``mentions``)
CAPS_CODE = re.compile(r"[A-Z][A-Z0-9]{1,7}")
#: a file or folder name: word characters, dots and hyphens only (``final_report.pdf``)
_NAME_WORD = re.compile(r"[\w.-]+")
#: a kind-qualified id's text: up to ``MAX_ID_CHARS`` word characters
_SHORT_ID = re.compile(rf"\w{{1,{MAX_ID_CHARS}}}")
#: any letter, of any script
_LETTER = re.compile(r"[^\W\d_]")
#: a word code: letter runs joined by underscores (``order_id``, ``get_order_details``)
_WORD_CODE = re.compile(r"[A-Za-z]+(?:_+[A-Za-z]+)*")


class Leaf(NamedTuple):
    """A leaf of a JSON value with the key it sits under and the nearest stem above it."""

    value: Any
    key: str | None
    stem: str | None


class Value(NamedTuple):
    """A leaf that names something: its matching key, its surface (as written) and head noun."""

    key: str
    surface: str
    noun: str | None


def parse(text: str) -> Any:
    """The JSON value of ``text``, or None if it does not parse as a JSON object or array."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


@text_memo
@lru_cache(maxsize=1 << 14)
def key_words(key: str) -> tuple[str, ...]:
    """The lower-case words of a key (module docstring)."""
    return tuple(w.lower() for w in _KEY_WORD.findall(key))


def _last_noun(words: tuple[str, ...], skip: frozenset[str]) -> str | None:
    for word in reversed(words):
        if word in skip:
            continue
        if word in MODIFIERS or word in FUNCTION_WORDS or len(word) < 3:
            return None
        return normal_key(word)
    return None


_KEY_SKIP = ID_WORDS | GENERIC_WORDS


@text_memo
@lru_cache(maxsize=1 << 14)
def key_noun(key: str) -> str | None:
    """The stem of a key: the head noun binding its values (module docstring), or None."""
    return _last_noun(key_words(key), _KEY_SKIP)


@text_memo
@lru_cache(maxsize=1 << 12)
def tool_noun(name: str) -> str | None:
    """The object noun of a function name (module docstring), or None."""
    words = key_words(name)
    return _last_noun(words[1:], GENERIC_WORDS) if len(words) >= 2 else None


def leaves(value: Any, stem: str | None = None, keys: set[str] | None = None) -> Iterator[Leaf]:
    """Every leaf of a parsed JSON value, in document order, with its key and stem.

    ``stem`` is the stem for leaves under no key with a stem of their own (the tool's
    object noun); ``keys``, when given, receives every key met (of leaves and of
    containers).  An explicit stack: no recursion, whatever the nesting.
    """
    stack: list[tuple[Any, str | None, str | None]] = [(value, None, stem)]
    while stack:
        item, key, inherited = stack.pop()
        if isinstance(item, dict):
            children = []
            for k, child in item.items():
                k = str(k)
                if keys is not None:
                    keys.add(k)
                children.append((child, k, key_noun(k) or inherited))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend((child, key, inherited) for child in reversed(item))
        else:
            yield Leaf(item, key, inherited)


def _number_key(x: int | float | str) -> str | None:
    if not isinstance(x, str) and abs(x) < 1000:  # fewer than four integer digits: no key (nor for NaN below)
        return None
    try:
        d = Decimal(repr(float(x)) if isinstance(x, float) else x)
    except (InvalidOperation, ValueError, OverflowError):
        return None
    if not d.is_finite() or d.adjusted() < 3:
        return None
    return "#" + format(d.normalize(), "f")


def number_text_key(s: str) -> str | None:
    """The key of a number written as text (rule 1): four or more digits, or a decimal whose
    integer part has four; None for anything else."""
    if _DIGITS.fullmatch(s):
        return "#" + s
    return _number_key(s) if _DECIMAL.fullmatch(s) else None


def _is_path_key(key: str | None) -> bool:
    return key is not None and not PATH_WORDS.isdisjoint(key_words(key))


def _is_id_key(key: str | None) -> bool:
    return key is not None and not _ID_MARKS.isdisjoint(key_words(key))


def is_word_code(surface: str) -> bool:
    """True for letters joined only by ``_`` or a case change (``rear_left``, ``CurrentSpeed``)."""
    return _WORD_CODE.fullmatch(surface) is not None


def _valid_unicode(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def leaf_value(leaf: Leaf) -> Value | None:
    """The value a leaf names by the value rules (module docstring), or None.

    Memoized by ``(value, key, stem)`` for numbers and strings of at most ``MAX_VALUE_CHARS``
    characters (keys and values recur across tool results: a status, a date, an id).
    """
    x, key, noun = leaf
    kind = type(x)
    if (kind is str and len(x) <= MAX_VALUE_CHARS) or kind is int or kind is float:
        return _memo_value(x, key, noun)
    return _value(x, key, noun)


def _value(x: Any, key: str | None, noun: str | None) -> Value | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        number = _number_key(x)
        if number is not None:
            return Value(number, number[1:], noun)
        if isinstance(x, int) and noun and _is_id_key(key):
            return Value(f"{noun}#{x}", str(x), noun)
        return None
    if not isinstance(x, str):
        return None
    s = x.strip()
    if not s or len(s) > MAX_VALUE_CHARS or not _valid_unicode(s):
        return None
    number = number_text_key(s)
    if number is not None:
        return Value(number, s, noun)
    coded = identifier_key(s) if CANDIDATE_RE.fullmatch(s) and not is_word_code(s) else None
    if coded is not None:
        return Value(coded, s, noun)
    if CAPS_CODE.fullmatch(s) and sum(c.isalpha() for c in s) >= 2:
        return Value(s.lower(), s, noun)
    if _is_path_key(key) and _NAME_WORD.fullmatch(s) and len(s) >= 2 and _LETTER.search(s):
        return Value(normal_key(s), s, noun)
    if noun and _is_id_key(key) and _SHORT_ID.fullmatch(s):
        return Value(f"{noun}#{s.lower()}", s, noun)
    return None


#: ``typed``: ``1``, ``1.0`` and ``True`` are equal keys but different leaves
_memo_value = text_memo(lru_cache(maxsize=1 << 15, typed=True)(_value))


def payload_values(value: Any, tool: str | None = None) -> list[tuple[Any, Value | None]]:
    """Every leaf of a parsed payload with the value it names (None: no value), in document
    order; ``tool``: the function name whose object noun is the stem of keys without one."""
    return [(leaf.value, leaf_value(leaf)) for leaf in leaves(value, tool_noun(tool) if tool else None)]
