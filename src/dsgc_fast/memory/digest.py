"""Digests of tool results: the values a later step may need, verbatim, the bulk dropped.

A digest stands in for a block's content when the whole does not fit the budget.  It is
plain text: a marker line, then one line per kept value.

**Marker.**  ``[digest of block <id>, <tool> result, <n> tokens; whole: recall(<id>)]``;
the tool and token parts appear only when given.  ``<id>`` is written bare when it is a
word of letters, digits and ``_ . : -``, else as a JSON string; inside ``recall(...)`` it is
the JSON literal (``recall(7)``, ``recall("call_0_2")``).

**JSON content** (text whose first non-blank character is ``{`` or ``[`` and that parses as
JSON).  Every leaf gives one line ``<path> -> <value>``, in document order:

- the path joins the keys with ``.`` and list positions as ``[k]``; a key that is not a
  word of letters, digits, ``_`` and ``-`` is written ``["<key>"]`` (JSON-quoted); a key
  longer than ``MAX_KEY_CHARS`` keeps its first characters and ends in ``…``; a path deeper
  than ``MAX_PATH_SEGMENTS`` keeps its last segments after a leading ``…``; the root
  itself is ``$``.  A quoted key writes ``>`` as ``\u003e``, so the first `` -> `` of a
  line always ends its path.
- a value is written exactly as the JSON text wrote it for numbers (``12.50`` stays
  ``12.50``, never re-formatted), ``true``/``false``/``null`` as such; a string bare,
  unless it would read as something else (empty, blank at either end, a character that is
  not printable, a first character among ``" ( [ {``, or the text of a JSON number or
  literal), in which case it is JSON-quoted.  Values are never shortened or changed;
- the bulk: a string longer than ``max_chars`` characters is replaced by
  ``(text, <n> chars; values: <w1> <w2> ...)`` with its value words (below), a number
  written with more than ``max_chars`` characters by ``(number, <n> chars)``; a list of
  more than ``max_items`` items shows its first ``max_items`` items only, and says
  ``(<n> items, first <k> shown)``; an empty list or object is ``[]`` / ``{}``.  An object
  keeps all its keys (keys are short; an object is a record, not a listing).
- a list whose shown items are all leaves written whole (no container, no string or
  number past ``max_chars``) is one line, ``<path> -> [<item>, <item>, ...]``, a JSON
  array of those items (strings JSON-quoted), followed by the count when some are not
  shown; any other list gives the count line ``<path> -> (<n> items, first <k> shown)``
  (when some are not shown), then its shown items' own lines.

Duplicate keys are all kept (JSON allows them; the digest does not pick one).

**Plain text** (anything else, including JSON that does not parse: too deep, malformed).
Line by line: a line holding no value word is dropped; a line with one, of at most
``max_chars`` characters once stripped of surrounding blanks, is kept as it is; a longer
one becomes ``(text, <n> chars; values: ...)``.  After ``max_lines`` kept lines the rest
are counted in ``(<n> lines with values not shown)``, and the dropped ones in
``(<n> lines without values dropped)`` (``1 line`` for one).  Blank content gives ``(empty)``.

**Value words.**  The words of a text (runs between blanks), each stripped of the
punctuation around it (leading ``( [ { < " ' ` *``, trailing the same closers and
``, ; : ! ? .``), that hold a digit (numbers, dates, times, amounts, codes with digits), or
that the induction's value rules take as a whole value (``induction.json_values``: paths,
e-mail addresses, dotted names, all-capitals codes; not word codes such as ``rear_left`` or
``getUser``, which name fields and enumerated values), except two sentences run together at a full stop (``growth.The``: lower-case
letters, ``.``, a capitalised word).  Each distinct word is listed once, in order of first appearance, at most
``max_items`` of them, then ``+<n> more``.  A value word is a substring of the text,
unchanged.

**Idempotence.**  A text whose first line is a digest marker is a digest and is returned
unchanged, so a digest of a digest is itself and repeated compactions lose nothing more
(``is_digest``).

Everything reads each character of the content a bounded number of times (the walk uses
an explicit stack; paths and keys are capped, so no line grows with the nesting), so a
digest takes time linear in the content, and no input makes it raise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar

from .._text_caches import text_memo
from ..induction.json_values import MAX_VALUE_CHARS, Leaf, leaf_value

#: longest string kept whole (longer ones are reduced to their value words)
MAX_CHARS = 100
#: items of a list shown (and value words listed for one text)
MAX_ITEMS = 20
#: lines of a plain text kept
MAX_LINES = 50
#: a key longer than this is cut (keys are schema vocabulary, never values)
MAX_KEY_CHARS = 64
#: segments of a path written (the deepest ones)
MAX_PATH_SEGMENTS = 8
#: contents whose digest body ``digest_lines`` remembers (the most recent ones)
BODY_MEMO = 16

_ELLIPSIS = "\u2026"
_ARROW = " -> "
_MARKER_HEAD = "[digest of block "
_MARKER_RECALL = "; whole: recall("
_MARKER_TAIL = ")]"
_BARE_ID = re.compile(r"[\w.:-]+", re.ASCII)
_BARE_KEY = re.compile(r"[\w-]+")
_JSON_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity")
_DIGIT = re.compile(r"\d")
#: two sentences without a blank after the full stop (``growth.The``), not a dotted name
_JOINED_SENTENCES = re.compile(r"[a-z]+\.[A-Z][a-z]+")
#: ``>`` in a quoted key, so that no path holds the arrow
_ESCAPED_GT = "\\u003e"
#: line breaks of ``str.splitlines`` that JSON strings may hold unescaped
_RAW_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})
_LEAD = "([{<\"'`*"
_TRAIL = ")]}>\"'`*,;:!?."


class _Number(str):
    """A JSON number as its source text."""


class _Object(tuple):
    """A JSON object as its (key, value) pairs, duplicates included, in document order."""


def _load(content: str) -> Any:
    """The JSON object or array of ``content`` (numbers as source text), or None."""
    stripped = content.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped, parse_int=_Number, parse_float=_Number, parse_constant=_Number,
                          object_pairs_hook=_Object)  # fmt: skip
    except (ValueError, RecursionError):
        return None


def is_digest(text: str) -> bool:
    """True if the first line of ``text`` is a digest marker (the text is a digest)."""
    if not isinstance(text, str):
        return False
    first = text.split("\n", 1)[0]
    return first.startswith(_MARKER_HEAD) and first.endswith(_MARKER_TAIL) and _MARKER_RECALL in first


def _id_literal(block_id: int | str) -> str:
    return str(block_id) if isinstance(block_id, int) else json.dumps(block_id)


def _marker(block_id: int | str, tool: str | None, tokens: int | None) -> str:
    shown = str(block_id) if _BARE_ID.fullmatch(str(block_id)) else _id_literal(block_id)
    parts = [shown]
    if tool is not None:
        parts.append(f"{tool if _BARE_ID.fullmatch(tool) else json.dumps(tool)} result")
    if tokens is not None:
        parts.append(f"{tokens} tokens")
    return f"{_MARKER_HEAD}{', '.join(parts)}{_MARKER_RECALL}{_id_literal(block_id)}{_MARKER_TAIL}"


def _quoted(s: str) -> str:
    """``s`` as a JSON string on one line (the line breaks JSON leaves raw escaped too);
    escaped to ASCII if it holds a lone surrogate (not UTF-8)."""
    out = json.dumps(s, ensure_ascii=False)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(s)
    return out.translate(_RAW_BREAKS)


def _word(raw: str) -> str:
    return raw.lstrip(_LEAD).rstrip(_TRAIL)


@text_memo
@lru_cache(maxsize=1 << 16)
def _is_short_value_word(word: str) -> bool:
    if _DIGIT.search(word):
        return True
    return _JOINED_SENTENCES.fullmatch(word) is None and leaf_value(Leaf(word, None, None)) is not None


def _is_value_word(word: str) -> bool:
    """The value-word rule; words too long for any value rule (only the digit rule applies
    to them) are not remembered."""
    if len(word) > MAX_VALUE_CHARS:
        return _DIGIT.search(word) is not None
    return _is_short_value_word(word)


def value_words(text: str) -> list[str]:
    """The distinct value words of ``text`` in order of first appearance (module docstring)."""
    seen: dict[str, None] = {}
    for raw in text.split():
        word = _word(raw)
        if word and word not in seen and _is_value_word(word):
            seen[word] = None
    return list(seen)


def _text_summary(text: str, words: list[str], max_items: int) -> str:
    """``(text, <n> chars; values: ...)`` for ``text`` and its value words."""
    if not words:
        return f"(text, {len(text)} chars)"
    more = f" +{len(words) - max_items} more" if len(words) > max_items else ""
    return f"(text, {len(text)} chars; values: {' '.join(words[:max_items])}{more})"


def _scalar(value: Any, max_chars: int, max_items: int) -> str:
    if isinstance(value, _Number):
        return str(value) if len(value) <= max_chars else f"(number, {len(value)} chars)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    s = str(value)
    if len(s) > max_chars:
        return _text_summary(s, value_words(s), max_items)
    bare = s and s == s.strip() and s.isprintable() and s[0] not in '"([{' and not _JSON_LITERAL.fullmatch(s)
    return s if bare else _quoted(s)


def _short_scalar(value: Any, max_chars: int) -> bool:
    """True for a leaf written whole: not a container, not a string or number past ``max_chars``."""
    return not isinstance(value, (_Object, list)) and (not isinstance(value, str) or len(value) <= max_chars)


def _key(key: str) -> str:
    if _BARE_KEY.fullmatch(key) and len(key) <= MAX_KEY_CHARS:
        return f".{key}"
    if len(key) > MAX_KEY_CHARS:
        quoted = f'{_quoted(key[: MAX_KEY_CHARS - 1])[:-1]}{_ELLIPSIS}"'
    else:
        quoted = _quoted(key)
    return f"[{quoted.replace('>', _ESCAPED_GT)}]"


def _path(segments: tuple[str, ...], deep: bool) -> str:
    if not segments:
        return "$"
    text = "".join(segments)
    if deep:
        return _ELLIPSIS + text
    return text[1:] if text.startswith(".") else text


def _json_lines(value: Any, max_chars: int, max_items: int) -> Iterator[str]:
    # stack entries: (value, last path segments, whether segments were cut off above them)
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(value, (), False)]
    while stack:
        item, segments, deep = stack.pop()
        if isinstance(item, (_Object, list)) and not item:
            yield f"{_path(segments, deep)}{_ARROW}{'{}' if isinstance(item, _Object) else '[]'}"
            continue
        if isinstance(item, (_Object, list)):
            if isinstance(item, _Object):
                children = [(child, _key(str(k))) for k, child in item]
            else:
                shown = item[:max_items]
                count = f" ({len(item)} items, first {max_items} shown)" if len(item) > max_items else ""
                if all(_short_scalar(x, max_chars) for x in shown):
                    items = ", ".join(_quoted(x) if type(x) is str else _scalar(x, max_chars, max_items) for x in shown)
                    yield f"{_path(segments, deep)}{_ARROW}[{items}]{count}"
                    continue
                if count:
                    yield f"{_path(segments, deep)}{_ARROW}{count[1:]}"
                children = [(child, f"[{k}]") for k, child in enumerate(shown)]
            cut = deep or len(segments) >= MAX_PATH_SEGMENTS
            for child, segment in reversed(children):
                stack.append((child, (*segments, segment)[-MAX_PATH_SEGMENTS:], cut))
            continue
        yield f"{_path(segments, deep)}{_ARROW}{_scalar(item, max_chars, max_items)}"


def _text_lines(content: str, max_chars: int, max_items: int, max_lines: int) -> Iterator[str]:
    kept = 0
    dropped = 0
    for raw in content.splitlines():
        line = raw.strip()
        words = value_words(line)
        if not words:
            dropped += bool(line)
            continue
        kept += 1
        if kept <= max_lines:
            yield line if len(line) <= max_chars else _text_summary(line, words, max_items)
    if kept > max_lines:
        yield f"({_lines(kept - max_lines)} with values not shown)"
    if dropped:
        yield f"({_lines(dropped)} without values dropped)"


def _lines(n: int) -> str:
    return "1 line" if n == 1 else f"{n} lines"


def _limits(max_chars: Any, max_items: Any, max_lines: Any) -> tuple[int, int, int]:
    """The checked ``(max_chars, max_items, max_lines)`` of a digest call."""
    return _limit("max_chars", max_chars), _limit("max_items", max_items), _limit("max_lines", max_lines)


def _limit(name: str, value: Any) -> int:
    if not is_integer_scalar(value) or int(value) < 1:
        raise DsgcValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def render_digest(
    content: str,
    block_id: int | str,
    *,
    tool: str | None = None,
    tokens: int | None = None,
    max_chars: int = MAX_CHARS,
    max_items: int = MAX_ITEMS,
    max_lines: int = MAX_LINES,
) -> str:
    """The digest of a block's content (rules in the module docstring).

    Parameters
    ----------
    content : str
        The block's text: a tool result as JSON text, or any plain text.
    block_id : int or str
        The block's id, named in the marker and in ``recall(<id>)``.
    tool : str, optional
        The tool whose result this is, named in the marker.
    tokens : int, optional
        The whole's token count, named in the marker.
    max_chars, max_items, max_lines : int
        Longest string or line kept whole, list items shown (and value words listed per
        text), lines of a plain text kept; each a positive integer.

    Returns
    -------
    str
        The marker line and the value lines, joined by ``\\n``; ``content`` itself when it
        is already a digest (``is_digest``).

    Raises
    ------
    TypeError
        ``content`` not a str, ``block_id`` neither an int nor a str, ``tool`` not a str.
    ValueError
        ``tokens`` negative or not an integer, a limit not a positive integer.
    """
    if not isinstance(content, str):
        raise DsgcTypeError(f"content must be a str, got {type(content).__name__}")
    if isinstance(block_id, bool) or not isinstance(block_id, (int, str)):
        raise DsgcTypeError(f"block_id must be an int or a str, got {type(block_id).__name__}")
    if tool is not None and not isinstance(tool, str):
        raise DsgcTypeError(f"tool must be a str or None, got {type(tool).__name__}")
    if tokens is not None and (not is_integer_scalar(tokens) or int(tokens) < 0):
        raise DsgcValueError(f"tokens must be a non-negative integer or None, got {tokens!r}")
    limits = _limits(max_chars, max_items, max_lines)
    if is_digest(content):
        return content
    marker = _marker(block_id, tool, None if tokens is None else int(tokens))
    return "\n".join([marker, *_memo_body(content, *limits)])


def digest_lines(
    content: str, *, max_chars: int = MAX_CHARS, max_items: int = MAX_ITEMS, max_lines: int = MAX_LINES
) -> tuple[str, ...]:
    """The lines of ``render_digest(content, ...)`` after its marker (the same for every block id,
    tool and token count), with the same checks; for a digest, the lines after its own marker.

    Memoized for the most recent contents: a compaction asks a block's digest and its value
    lines (``value_table.value_lines``) one after the other, so the body is rendered once.
    """
    if not isinstance(content, str):
        raise DsgcTypeError(f"content must be a str, got {type(content).__name__}")
    limits = _limits(max_chars, max_items, max_lines)
    if is_digest(content):
        return tuple(content.split("\n")[1:])
    return _memo_body(content, *limits)


def _body(content: str, max_chars: int, max_items: int, max_lines: int) -> tuple[str, ...]:
    """The value lines of a content that is not a digest (module docstring)."""
    value = _load(content)
    if value is not None:
        return tuple(_json_lines(value, max_chars, max_items))
    if content.strip():
        return tuple(_text_lines(content, max_chars, max_items, max_lines))
    return ("(empty)",)


_memo_body = text_memo(lru_cache(maxsize=BODY_MEMO)(_body))
