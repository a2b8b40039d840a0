"""An approximate o200k_base token count with no dependencies: pieces, then a fitted cost per piece.

Byte-pair encoders such as tiktoken's ``o200k_base`` first cut a text into *pieces* with a
regular expression and then merge bytes only inside each piece, so a text's token count is the
sum of its pieces' counts.  This counter makes the same cut with the standard ``re`` module
and replaces the merge by a table of expected costs:

1. **Pieces** (the rules of o200k_base's pre-tokenizer, with ASCII case classes): a *word* is an
   optional leading character that is neither a letter, a digit nor a line break (usually a
   space), then either capitals followed by small letters or a run of capitals (so ``getUser``
   is ``get`` + ``User``), then an optional English contraction (``'s``, ``'ll``, ...); a
   *digit group* is 1 to 3 digits; a *punctuation run* is an optional space and characters that
   are neither letters, digits nor spaces, with trailing line breaks or slashes; *line breaks*
   (with the spaces before them) and *space runs* are pieces of their own, a space run giving
   its last space to the word after it.  Letters outside ASCII count as small letters, and
   combining marks belong to the word they follow.
2. **Cost of a piece**:

   ============================  ========================================================
   piece                         cost
   ============================  ========================================================
   digit group                   1
   whitespace run                1 up to ``SHORT_WHITESPACE`` characters; longer, each run of
                                 one character (or ``\r\n``) longer than its ``WHITESPACE_RUN``
                                 r (64 spaces, 16 line breaks or tabs, ...) costs
                                 ``ceil(repeats / r)``, the shorter runs half a token each
   ASCII word, ``n`` letters      ``WORD_COST[kind][n - 1]``; past the table's end
                                  ``WORD_COST[kind][-1] * n / len(WORD_COST[kind])``
   word with non-ASCII letters   ``max(1, sum over its letters of LETTER_COST[script])``; a
                                 letter of a rare script (``other``: none the tables were
                                 fitted on) costs its UTF-8 bytes, an upper bound
   ASCII punctuation run         ``PUNCT_COST[n - 1]``, extended like a word past the end;
                                 but each run of 4+ copies of one character in it (rulers
                                 such as ``#----``) costs ``ceil(run / REPEAT_RUN)`` and the
                                 other characters (before trailing line breaks) ``PUNCT_COST``
   other symbols (emoji, ...)    ``max(1, SYMBOL_COST_PER_BYTE * UTF-8 bytes)``
   ============================  ========================================================

   A word's *kind* is its case shape (``lower``: starts small, ``title``: one capital then
   small letters, ``upper``: two or more capitals) and what precedes its letters (``space``:
   a leading space; ``prefixed``: another leading character such as ``_`` or ``.``; ``glued``: no
   leading character, right after a letter or digit, as inside ``getUser`` or random ids;
   ``none``: no leading character otherwise).

The estimate is ``round(total cost)``, and 0 only for the empty text.  The tables are mean
o200k_base counts per piece class in the training half of ``tools/token_corpus.py``, written
to ``token_approx_tables.json`` by ``tools/fit_token_approx.py``; ``tools/token_error_table.py``
measures the held-out half.
"""

from __future__ import annotations

import bisect
import functools
import importlib.resources
import json
import math
import re
import unicodedata
from typing import Any

from dsgc_ref.contract import DsgcTypeError

from .._text_caches import text_memo

# -- fitted tables (token_approx_tables.json, written by tools/fit_token_approx.py) ----------
TABLES_FILE = "token_approx_tables.json"
_TABLES = json.loads(importlib.resources.files(__package__).joinpath(TABLES_FILE).read_text("utf-8"))
WORD_COST: dict[str, tuple[float, ...]] = {kind: tuple(costs) for kind, costs in _TABLES["word_cost"].items()}
PUNCT_COST: tuple[float, ...] = tuple(_TABLES["punct_cost"])
LETTER_COST: dict[str, float] = dict(_TABLES["letter_cost"])
SYMBOL_COST_PER_BYTE: float = _TABLES["symbol_cost_per_byte"]
REPEAT_RUN: int = _TABLES["repeat_run"]

#: script of a code point: (first code point of a range, script name), sorted
SCRIPT_RANGES: tuple[tuple[int, str], ...] = (
    (0x0000, "ascii"), (0x0080, "latin"), (0x0250, "other"), (0x0300, "latin"),
    (0x0370, "greek"), (0x0400, "cyrillic"), (0x0530, "other"), (0x0590, "hebrew"),
    (0x0600, "arabic"), (0x0700, "other"), (0x0900, "indic"), (0x0980, "other"), (0x0E00, "thai"),
    (0x0E80, "other"), (0x1100, "hangul"), (0x1200, "other"), (0x1AB0, "latin"),
    (0x1B00, "other"), (0x1DC0, "latin"), (0x1F00, "greek"), (0x2000, "other"),
    (0x3040, "kana"), (0x3100, "other"), (0x3130, "hangul"), (0x3190, "other"),
    (0x3400, "han"), (0x4DC0, "other"), (0x4E00, "han"), (0xA000, "other"),
    (0xAC00, "hangul"), (0xD7B0, "other"), (0xF900, "han"), (0xFB00, "other"),
    (0x20000, "han"), (0x31350, "other"),
)  # fmt: skip
SCRIPTS = tuple(sorted({name for _, name in SCRIPT_RANGES}))
_RANGE_STARTS = [start for start, _ in SCRIPT_RANGES]

#: whitespace pieces this long or shorter cost 1 token
SHORT_WHITESPACE = 4
#: the longest run of one whitespace unit that is one o200k_base token: spaces, CRLF, other
#: ASCII whitespace (line breaks, tabs), other whitespace (no-break and wide spaces)
WHITESPACE_RUN = {" ": 64, "\r\n": 4, "ascii": 16, "other": 4}
_WHITESPACE_RUN = re.compile(r"(?:\r\n)+|(\s)\1*")
#: the script group of the scripts no fitted text covers: a letter costs its UTF-8 bytes
RARE_SCRIPT = "other"
#: four or more copies of one character (rulers such as ``#####``, ``----``) inside punctuation
_LONG_RUN = re.compile(r"(\S)\1{3,}")

WORD_KINDS = tuple(
    f"{shape}-{lead}" for shape in ("lower", "title", "upper") for lead in ("space", "prefixed", "glued", "none")
)


def script_of(char: str) -> str:
    """The script group of one character (see ``SCRIPT_RANGES``)."""
    return SCRIPT_RANGES[bisect.bisect_right(_RANGE_STARTS, ord(char)) - 1][1]


def _mark_ranges() -> list[tuple[int, int]]:
    """Inclusive ranges of the combining marks (category M) of the Basic Multilingual Plane."""
    ranges: list[tuple[int, int]] = []
    for c in range(0x10000):
        if unicodedata.category(chr(c))[0] == "M":
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1] = (ranges[-1][0], c)
            else:
                ranges.append((c, c))
    return ranges


@functools.cache
def piece_pattern() -> re.Pattern[str]:
    """The compiled piece expression (built on first use: the mark class scans the Unicode table).

    Marks outside the Basic Multilingual Plane (historic scripts, musical notation) count as
    punctuation: rare enough not to matter for an estimate.
    """
    marks = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _mark_ranges())
    small = rf"(?:[^\W\d_A-Z]|[{marks}])"
    lead = rf"(?:[^\r\n\w{marks}]|_)"
    contraction = r"(?:'[sStTmMdD]|'[rR][eE]|'[vV][eE]|'[lL][lL])"
    punct = rf"(?:[^\s\w{marks}]|_)"
    return re.compile(
        rf"{lead}?(?:[A-Z]*{small}+|[A-Z]+{small}*){contraction}?"
        rf"|\d{{1,3}}"
        rf"| ?{punct}+[\r\n/]*"
        rf"|\s*[\r\n]+"
        rf"|\s+(?!\S)|\s+"
    )


def pieces(text: str) -> list[str]:
    """The pieces of ``text``, in order; they concatenate back to ``text``."""
    return piece_pattern().findall(text)


def piece_class(piece: str, glued: bool = False) -> tuple[str, object]:
    """``(class, size)`` of one piece, the keys of the cost tables (``glued``: the piece
    follows a letter or digit).

    Classes: ``"digits"``, ``"space"``, a word kind (size: letter count), ``"script"``
    (size: the letters), ``"runs"`` (ASCII punctuation with runs of four or more copies of a
    character; size: the run lengths and the count of the other characters before any
    trailing line breaks), ``"punct"`` (other ASCII punctuation; size: characters),
    ``"symbol"`` (size: UTF-8 bytes).
    """
    first = piece[0]
    if first.isdigit():
        return "digits", len(piece)
    if piece.isspace():
        return "space", piece
    letters_at = 0 if first.isalpha() else 1
    if letters_at < len(piece) and piece[letters_at].isalpha():
        letters = piece[letters_at:]
        if not letters.isascii():
            return "script", letters
        return f"{_shape(letters)}-{_lead(piece, letters_at, glued)}", len(letters)
    if not piece.isascii():
        return "symbol", len(piece.encode("utf-8"))
    runs = tuple(len(m.group()) for m in _LONG_RUN.finditer(piece))
    if runs:
        return "runs", (runs, len(piece.rstrip("\r\n")) - sum(runs))
    return "punct", len(piece)


def _shape(letters: str) -> str:
    if not letters[0].isupper():
        return "lower"
    return "upper" if len(letters) > 1 and letters[1].isupper() else "title"


def _lead(piece: str, letters_at: int, glued: bool) -> str:
    if letters_at:
        return "space" if piece[0] == " " else "prefixed"
    return "glued" if glued else "none"


def piece_cost(kind: str, size: Any) -> float:
    """The fitted cost of one piece of class ``kind`` and ``size`` (see the module table)."""
    if kind == "digits":
        return 1.0
    if kind == "space":
        return whitespace_cost(size)
    if kind == "script":
        return max(1.0, sum(letter_cost(c) for c in size))
    if kind == "runs":
        runs, rest = size
        return sum(math.ceil(r / REPEAT_RUN) for r in runs) + (length_cost(PUNCT_COST, rest) if rest else 0.0)
    if kind == "symbol":
        return max(1.0, SYMBOL_COST_PER_BYTE * size)
    return length_cost(PUNCT_COST if kind == "punct" else WORD_COST[kind], size)


def whitespace_cost(piece: str) -> float:
    """The cost of a whitespace piece: 1 up to ``SHORT_WHITESPACE`` characters, else per run (module table).

    A run is one character (or ``\r\n``) repeated.  A run longer than its ``WHITESPACE_RUN``
    r (the longest run of it o200k_base has one token for) costs ``ceil(repeats / r)``; the
    shorter runs cost half a token each (o200k_base has tokens for pairs such as ``" \t"``;
    runs that repeat in longer patterns, ``" \n\t"`` or ``"\n    "``, are over-counted,
    up to 4 times, never under-counted).
    """
    if len(piece) <= SHORT_WHITESPACE:
        return 1.0
    total, short = 0, 0
    for match in _WHITESPACE_RUN.finditer(piece):
        unit = "\r\n" if match.group().startswith("\r\n") else match.group()[0]
        longest = WHITESPACE_RUN.get(unit, WHITESPACE_RUN["ascii"] if unit.isascii() else WHITESPACE_RUN["other"])
        repeats = len(match.group()) // len(unit)
        if repeats > longest:
            total += math.ceil(repeats / longest)
        else:
            short += 1
    return float(total + math.ceil(short / 2))


def letter_cost(char: str) -> float:
    """The cost of one letter of a non-ASCII word: its script's fitted cost; a rare script's
    (``other``, no fitted text) its UTF-8 bytes, which o200k_base never exceeds."""
    script = script_of(char)
    return len(char.encode("utf-8")) if script == RARE_SCRIPT else LETTER_COST[script]


def length_cost(table: tuple[float, ...], n: int) -> float:
    """``table[n - 1]``, or past the table's end ``table[-1] * n / len(table)``."""
    return table[n - 1] if n <= len(table) else table[-1] * n / len(table)


def approx_tokens(text: str) -> int:
    """Approximate o200k_base token count of ``text`` (no tokenizer needed; see the module doc)."""
    if not isinstance(text, str):
        raise DsgcTypeError(f"text must be a string, got {type(text).__name__}")
    if not text:
        return 0
    total = 0.0
    for match in piece_pattern().finditer(text):
        start = match.start()
        total += _cached_cost(match.group(), start > 0 and text[start - 1].isalnum())
    return max(1, round(total))


@text_memo
@functools.lru_cache(maxsize=1 << 16)
def _cached_cost(piece: str, glued: bool) -> float:
    return piece_cost(*piece_class(piece, glued))
