"""Identifier tokens: the candidate pattern, the shape rules, and the matching key.

Two kinds of surface count as identifiers.

**Coded identifiers.**  A run of word characters joined by internal punctuation ``- . / @``,
optionally led by a URL scheme of at most 64 characters (``https://``) or by ``/``, ``~/``,
``./``, ``../``.  Trailing punctuation is never part of a token (``8841-C.`` gives ``8841-C``)
and an apostrophe ends one (``8841-C's`` gives ``8841-C``: possessives fall away).  A token
is only tried where a scheme starts or where an identifier mark (a digit, ``_``, ``/``, one
``- . @`` between word characters, a lower-to-upper change) lies in the run of word
characters and ``- . / @ ~`` that starts there; no rule reads past that run, so finding the
tokens takes time linear in the text (and a text holding no mark is not tried at all).  It is an identifier when its shape says so; every
rule is conservative:

1. snake case: contains ``_`` (``MAX_RETRIES``, ``bundle_north_17``);
2. a path or URL: a scheme, a leading ``/ ~/ ./ ../``, two ``/``, or one ``/`` and a dotted
   file name (``/etc/app.yaml``, ``src/main.py``); ``and/or`` is not a path;
3. letters and digits mixed: a code that starts with a letter (``T2``, ``RT-114``,
   ``node7``), or one that starts with a digit, has at least 3 alphanumerics and is not a
   quantity such as ``10GB``, ``500ms``, ``2nd``, ``3x`` (``8841-C``);
4. dotted or ``@`` names with a segment of two or more letters, not all segments single
   characters (``app.yaml``, ``ops@acme.io``, ``os.path``; not ``e.g``);
5. hyphenated words only with an all-capitals segment of two or more letters
   (``ACME-PROD``; not ``follow-up`` or ``Wi-Fi``);
6. camel or Pascal case, a lower-to-upper change (``getUser``, ``BackupBundle``).

**Named values.**  A capitalised word directly after a content word, the appositive naming
construction "<kind> <Name>": ``Project Falcon``, ``profile Amber``, ``customer Jones``.
The kind word must not be a function word or a common verb (``the Lisbon office``,
``from Bruno``, ``asked Bruno`` are not named values), the name has at least three letters
and is not a weekday or month.  The kind is part of the key: ``project Falcon`` matches
``Project Falcon`` but not ``owner Falcon`` or ``window Falcon`` (a bare proper name that
recurs in two notes is co-reference, usually a person, not a dependency).  The kind word is
the identifier's *head noun* (what "that project" can later refer to).

Not identifiers: plain words, plain capitals (``KYC``, ``API``: vocabulary, not names),
plain numbers, dates, times, decimals and IP addresses (numbers recur too easily).

The **key** under which mentions match ignores case and forgives one plural ``s``: the
lower-cased identifier (for a named value, kind and name, each) with a final ``s`` dropped
unless it ends in ``ss``.  So ``MAX_RETRIES`` and ``max_retries``, ``8841-C`` and
``8841-Cs``, ``Project Falcon`` and ``project Falcons`` each meet under one key.

The **shape** of a key (``shape``) is its skeleton: digit runs become ``9``, single
letters ``@``, a named value keeps only its kind (``8841-c`` and ``7730-b`` -> ``9-@``,
``rf-1968`` -> ``rf-9``, ``project falcon`` -> ``project *``).  Keys of one shape are
presumed to name things of one kind; referent induction uses this to stay ambiguous
("that ticket" with two ``RF-`` tickets around resolves to nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from .._text_caches import text_memo

#: function words and common verbs: never the kind word of a named value nor a head noun
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "and",
        "or",
        "but",
        "nor",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "not",
        "no",
        "if",
        "then",
        "than",
        "so",
        "via",
        "per",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "since",
        "until",
        "while",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "why",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "both",
        "either",
        "neither",
        "also",
        "just",
        "only",
        "very",
        "dear",
        "hi",
        "hello",
        "thanks",
        "please",
        "it",
        "we",
        "you",
        "they",
        "he",
        "she",
        "i",
        "me",
        "us",
        "him",
        "them",
        "will",
        "would",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "should",
        "see",
        "use",
        "uses",
        "used",
        "using",
        "check",
        "run",
        "ask",
        "asks",
        "asked",
        "tell",
        "tells",
        "told",
        "say",
        "says",
        "said",
        "ping",
        "thank",
        "met",
        "meet",
    ]
)
#: capitalised words that are calendar vocabulary, never named values
CALENDAR_WORDS = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)

#: a URL scheme (RFC 3986: a letter, then letters, digits, ``+ - .``), at most 64 characters
_SCHEME = r"[A-Za-z][\w+.-]{0,63}://"
#: characters that may continue a coded identifier; a candidate never starts right after one
_RUN = r"[\w./~@-]"
_CODED = (
    # only where a scheme follows, or an identifier mark does within the run of _RUN characters
    rf"(?={_SCHEME}|{_RUN}*?(?:\d|_|/|\w[-.@]\w|[a-z][A-Z]))"
    rf"(?:{_SCHEME})?(?:(?:~|\.{{1,2}})?/)?\w+(?:[-./@]+\w+)*"
)
_NAMED = r"[A-Za-z]+ [A-Z][a-z]{2,}(?![\w-])"
#: identifier candidates: coded identifiers and "<kind> <Name>" pairs.  No capturing groups,
#: so scikit-learn's ``token_pattern`` (findall) and ``re.finditer`` read it identically.
CANDIDATE_PATTERN = rf"(?<!{_RUN})(?:{_CODED}|{_NAMED})"
CANDIDATE_RE = re.compile(CANDIDATE_PATTERN)
#: what every candidate holds: an identifier mark of ``_CODED``'s lookahead (a scheme holds a
#: ``/``) or the ``<space><Capital><lower><lower>`` of a named value.  It starts with one
#: character class, which ``re`` scans for quickly, so a text without it (most plain prose)
#: is not tried position by position with ``CANDIDATE_RE``
_MARK_RE = re.compile(r"[\d_/.@A-Z-](?:(?<=[\d_/])|(?<=\w[-.@])(?=\w)|(?<=[a-z][A-Z])|(?<=[A-Za-z] [A-Z])(?=[a-z]{2}))")

#: the separators between an identifier's segments (``AC-7730``, ``a.b@c``)
_SEGMENT_SPLIT = re.compile(r"[-./@]+")
#: a number with a unit of one to three letters (``10kg``, ``2.5GB``): a quantity, no identifier
_QUANTITY = re.compile(r"\d+(?:[.,]\d+)?[A-Za-z]{1,3}")
#: how a path or a URL starts: a scheme, ``/``, ``~/``, ``./`` or ``../``
_PATH_START = re.compile(rf"(?:{_SCHEME}|(?:~|\.{{1,2}})?/)")
#: a lower-case letter followed by a capital: a camel-case word (``orderId``)
_CAMEL = re.compile(r"[a-z][A-Z]")
#: a segment of two or more capitals: a hyphenated word holding one is coded (``KYC-check``)
_ALL_CAPS_WORD = re.compile(r"[A-Z]{2,}")


def _is_path(surface: str) -> bool:
    if _PATH_START.match(surface) or surface.count("/") >= 2:
        return True
    return "/" in surface and "." in surface.rsplit("/", 1)[1]


def _is_coded(surface: str) -> bool:
    if "_" in surface or _is_path(surface):
        return True
    segments = [s for s in _SEGMENT_SPLIT.split(surface) if s]
    alnum = "".join(segments)
    if any(c.isdigit() for c in alnum):
        if not any(c.isalpha() for c in alnum):
            return False
        if alnum[0].isalpha():
            return len(alnum) >= 2
        return len(alnum) >= 3 and not _QUANTITY.fullmatch(surface)
    if "." in surface or "@" in surface:
        return any(len(s) >= 2 for s in segments) and not all(len(s) == 1 for s in segments)
    if "-" in surface and any(_ALL_CAPS_WORD.fullmatch(s) for s in segments):
        return True
    return bool(_CAMEL.search(surface))


def normal_key(word: str) -> str:
    """Case-folded, singular matching key (see the module docstring)."""
    key = word.lower()
    if len(key) >= 3 and key.endswith("s") and not key.endswith("ss"):
        key = key[:-1]
    return key


def split_named(surface: str) -> tuple[str, str] | None:
    """``(kind, name)`` if ``surface`` is a "<kind> <Name>" candidate, else None."""
    if " " not in surface:
        return None
    kind, name = surface.split(" ", 1)
    return kind, name


@text_memo
@lru_cache(maxsize=1 << 16)
def identifier_key(surface: str) -> str | None:
    """The matching key of a candidate ``surface`` if it is an identifier, else None."""
    named = split_named(surface)
    if named is None:
        return normal_key(surface) if _is_coded(surface) else None
    kind, name = named
    if kind.lower() in FUNCTION_WORDS or name.lower() in CALENDAR_WORDS:
        return None
    return f"{normal_key(kind)} {normal_key(name)}"


_DIGITS = re.compile(r"\d+")
_SINGLE_LETTER = re.compile(r"(?<![^\W\d_])[^\W\d_](?![^\W\d_])")


@text_memo
@lru_cache(maxsize=1 << 16)
def shape(key: str) -> str:
    """The skeleton of an identifier key (see the module docstring)."""
    if " " in key:
        return key.split(" ", 1)[0] + " *"
    return _SINGLE_LETTER.sub("@", _DIGITS.sub("9", key))


def identifier_keys(text: str) -> set[str]:
    """The set of identifier keys mentioned in ``text``."""
    if _MARK_RE.search(text) is None:
        return set()
    return {k for s in CANDIDATE_RE.findall(text) if (k := identifier_key(s)) is not None}


def iter_identifiers(text: str) -> Iterator[tuple[str, str, int, int]]:
    """Yield ``(key, surface, start, end)`` for every identifier occurrence, in text order."""
    if _MARK_RE.search(text) is None:
        return
    for m in CANDIDATE_RE.finditer(text):
        surface = m.group()
        key = identifier_key(surface)
        if key is not None:
            yield key, surface, m.start(), m.end()
