"""Identifier tokens: the candidate pattern, the shape rules, and the matching key.

A *candidate* is a run of word characters joined by internal punctuation ``- . / @``,
optionally led by a URL scheme (``https://``) or by ``/``, ``~/``, ``./``, ``../`` (a path).
Trailing punctuation is never part of a token (``8841-C.`` gives ``8841-C``) and an
apostrophe ends one (``8841-C's`` gives ``8841-C``: possessives fall away).  The pattern
only fires where the coming characters carry an identifier mark (a digit, ``_``, ``/``,
internal ``-.@`` or a lower-to-upper case change), so plain prose costs almost nothing.

A candidate is an **identifier** when its shape says so (``identifier_key`` returns None
otherwise).  Precision comes first, so every rule is conservative:

1. snake case: contains ``_`` (``MAX_RETRIES``, ``bundle_north_17``);
2. a path or URL: a scheme, a leading ``/ ~/ ./ ../``, two ``/``, or one ``/`` and a dotted
   file name (``/etc/app.yaml``, ``src/main.py``); ``and/or`` is not a path;
3. letters and digits mixed, at least 3 alphanumerics, not a quantity such as ``10GB``,
   ``500ms``, ``2nd`` or ``3x`` (``8841-C``, ``TKT-4471``, ``node7``);
4. dotted or ``@`` names with a segment of two or more letters, not all segments single
   characters (``app.yaml``, ``ops@acme.io``, ``os.path``; not ``e.g``);
5. hyphenated words only with an all-capitals segment of two or more letters
   (``ACME-PROD``; not ``follow-up`` or ``Wi-Fi``);
6. camel or Pascal case, a lower-to-upper change (``getUser``, ``BackupBundle``).

Not identifiers: plain words, plain capitals (``KYC``, ``API``: vocabulary, not names),
plain numbers, dates, times, decimals and IP addresses (numbers recur too easily).

The **key** under which mentions match ignores case and forgives one plural ``s``: the
lower-cased candidate with a final ``s`` dropped unless it ends in ``ss`` (so ``MAX_RETRIES``
and ``max_retries``, ``8841-C`` and ``8841-Cs``, ``Bundle_North_17`` and ``bundle_north_17``
each meet under one key).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: identifier candidates; no capturing groups, so scikit-learn's ``token_pattern`` (findall)
#: and ``re.finditer`` read it identically
CANDIDATE_PATTERN = (
    r"(?<![\w/.~@-])"
    r"(?=[\w./~@:+-]*?(?:\d|_|/|\w[-.@]\w|[a-z][A-Z]))"
    r"(?:[A-Za-z][\w+.-]*://)?(?:(?:~|\.{1,2})?/)?\w+(?:[-./@]+\w+)*"
)
CANDIDATE_RE = re.compile(CANDIDATE_PATTERN)

_SEGMENT_SPLIT = re.compile(r"[-./@]+")
_QUANTITY = re.compile(r"\d+(?:[.,]\d+)?[A-Za-z]{1,3}")
_PATH_START = re.compile(r"(?:[A-Za-z][\w+.-]*://|(?:~|\.{1,2})?/)")
_CAMEL = re.compile(r"[a-z][A-Z]")
_ALL_CAPS_WORD = re.compile(r"[A-Z]{2,}")


def _is_path(surface: str) -> bool:
    if _PATH_START.match(surface) or surface.count("/") >= 2:
        return True
    return "/" in surface and "." in surface.rsplit("/", 1)[1]


def _is_identifier(surface: str) -> bool:
    if "_" in surface or _is_path(surface):
        return True
    segments = [s for s in _SEGMENT_SPLIT.split(surface) if s]
    alnum = "".join(segments)
    has_digit = any(c.isdigit() for c in alnum)
    has_alpha = any(c.isalpha() for c in alnum)
    if has_digit:
        return has_alpha and len(alnum) >= 3 and not _QUANTITY.fullmatch(surface)
    if "." in surface or "@" in surface:
        return any(len(s) >= 2 for s in segments) and not all(len(s) == 1 for s in segments)
    if "-" in surface and any(_ALL_CAPS_WORD.fullmatch(s) for s in segments):
        return True
    return bool(_CAMEL.search(surface))


def normal_key(surface: str) -> str:
    """Case-folded, singular matching key of a candidate (see the module docstring)."""
    key = surface.lower()
    if len(key) >= 3 and key.endswith("s") and not key.endswith("ss"):
        key = key[:-1]
    return key


@lru_cache(maxsize=1 << 16)
def identifier_key(surface: str) -> str | None:
    """The matching key of ``surface`` if its shape makes it an identifier, else None."""
    return normal_key(surface) if _is_identifier(surface) else None


def iter_identifiers(text: str):
    """Yield ``(key, surface, start, end)`` for every identifier occurrence in ``text``."""
    for m in CANDIDATE_RE.finditer(text):
        key = identifier_key(m.group())
        if key is not None:
            yield key, m.group(), m.start(), m.end()
