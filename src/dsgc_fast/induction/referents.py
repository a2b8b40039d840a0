"""Referent induction: which block binds a referent, which later blocks use it.

Output is the ``binds`` / ``uses`` pair the pinning API takes (``retain(..., uses=, binds=)``,
``pin_closure``, ``orphans``): ``binds[i]`` is None or a dict referent -> short value,
``uses[i]`` a sorted list of referents.  Rules, applied block by block in time order (so
the batch form and ``IncrementalInducer`` agree exactly):

* **Referents** are the keys a block mentions (``mentions``: identifiers of its prose, and
  for a chat message the values of its JSON payloads and the prose words naming them).  A
  referent's name is the surface form of its first occurrence (``8841-C``, ``MAX_RETRIES``,
  ``Project Falcon``, ``12446``); later mentions match it through the key (case, plural
  ``s`` ignored).
* **Binding.**  The block that introduces a key binds it.  Its value is what an assignment
  after the first occurrence says (``MAX_RETRIES = 5`` -> ``5``, ``Bundle Orchid maps to
  clearance T2`` -> ``clearance T2``; the symbols ``= := -> => :`` assign the next token,
  the verbs ``is, are, was, equals, maps to, points to, resolves to, selects, holds,
  means`` (and the rebinding verbs below) up to six words ending at the first punctuation
  mark; a value starting with a function word binds nothing, so ``RT-114: the ...`` is no
  assignment), else the head noun and the identifier (``account 8841-C``, ``order 12446``),
  else the identifier itself.  A later block *rebinds* a key only with an explicit change
  in prose: ``=``, ``:=``, ``is now``, ``is set to``, ``set to``, ``changed to``,
  ``updated to`` (the pinning rule then makes the newest binding live).
* **Use.**  A later block that mentions a bound key, and does not rebind it, uses it.
* **Head nouns.**  In prose, the word just before a coded identifier (``account 8841-C``) or
  the kind word of a named value (``Project Falcon``), never a function word or common verb;
  in JSON, the stem of the value's key (``json_values.key_noun``: ``order_id`` -> order).
* **Definite descriptions** are resolved only when they are safe.  Forms: ``that``,
  ``this`` or ``said`` followed by a noun, and ``the same`` followed by a noun (any head
  noun, the next word: "that account", "the same bundle"); and for a key's stem also
  ``the``, ``my``, ``our``, ``your``, optionally modifiers (``same, most, recent, last,
  latest, previous, current, newest, earlier, above, mentioned, aforementioned``), the
  stem being any of the next three words that ends the phrase, i.e. is followed by a
  function word, punctuation or the end ("the order I placed", "my most recent order.",
  "the same authorization token to"; not "the merchant onboarding batch").  Descriptions are read in a block's own prose, never in the
  strings of a JSON payload.  The candidates are the keys mentioned in the previous
  ``window`` blocks that carry the noun as head noun, or share the ``shape`` of a prose
  identifier that does (``RF-2841`` counts as a ticket once ``ticket RF-1968`` was seen,
  even where it appeared as "created RF-2841"; JSON values form no shapes).  For a key's
  stem with no candidate in the window, the candidates are the keys carrying it in the
  newest block that mentions one (a key's stem resolves beyond the window).  Exactly one
  candidate, and no such key in the block itself, resolves the description.
* **Anchored descriptions.**  A description in a block that mentions exactly one key with
  its noun as head noun *anchors* the description to that key ("account 8841-C ... keep an
  eye on that account": the speaker has said which account "that account" is).  A later
  description of the same noun that the window leaves unresolved (no candidate, or several)
  resolves to the key of the newest anchor of that noun, and names that anchoring block (not
  the newest block mentioning the key) as where the description was given its meaning.
  Anything else proposes nothing.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Container, Iterable, Sequence
from itertools import islice
from typing import Any

from .. import _validate
from . import _checks
from .mentions import Mention, Prose
from .tokens import FUNCTION_WORDS, iter_identifiers, shape, split_named

#: default look-back, in blocks, for resolving a definite description
DESCRIPTION_WINDOW = 20
#: longest value recorded for a binding, in words
VALUE_WORDS = 6

_SYMBOL_REBIND = r"\s*(?::=|=)\s*"
_VERB_REBIND = r"\s+(?:is now|is set to|was set to|set to|changed to|updated to)\s+"
_SYMBOL_DEFINE = r"\s*(?::=|=|->|=>|:)\s*"
_VERB_DEFINE = r"\s+(?:is now|is set to|was set to|set to|changed to|updated to|is|are|was|equals|maps to|points to|resolves to|selects|holds|means)\s+"
#: (operator, longest value in words): a symbol assigns one token, a verb a short phrase
_REBIND = ((re.compile(_SYMBOL_REBIND), 1), (re.compile(_VERB_REBIND), VALUE_WORDS))
_DEFINE = ((re.compile(_SYMBOL_DEFINE), 1), (re.compile(_VERB_DEFINE), VALUE_WORDS))
#: words between a determiner and its noun that keep the description definite
MODIFIERS = (
    "same",
    "most",
    "recent",
    "last",
    "latest",
    "previous",
    "current",
    "newest",
    "earlier",
    "above",
    "mentioned",
    "aforementioned",
)
_STRONG = ("that", "this", "said")
#: a description: determiner, modifiers, a word, and (looked at, not consumed) the next three.
#: The leading lookahead (the determiners' first letters) changes no match; it lets the regex
#: engine skip to candidate positions instead of trying the alternation at every one (2x faster)
_DESCRIPTION_RE = re.compile(
    rf"(?=[tsmoy])\b(that|this|said|the|my|our|your)\s+((?:(?:{'|'.join(MODIFIERS)})\s+){{0,2}})([A-Za-z]+)\b"
    r"(?=((?:\s+[A-Za-z]+\b){0,3}))",
    re.IGNORECASE,
)
_WORD_BEFORE_RE = re.compile(r"(?<![\w-])([A-Za-z]{3,})[ \t]+$")
_WORD_RE = re.compile(r"\S+")  # the words of str.split(), found one at a time


def _value_after(text: str, end: int, operators) -> str | None:
    """The short value an assignment operator right after ``end`` gives, else None.

    The value runs to the first punctuation mark, at most the operator's word limit; only
    those words are read, never the rest of the text.  A value starting with a function
    word binds nothing (``RT-114: the ...``).
    """
    for operator, limit in operators:
        m = operator.match(text, end)
        if m is not None:
            return _short_value(text, m.end(), limit)
    return None


def _short_value(text: str, start: int, limit: int) -> str | None:
    """At most ``limit`` words of ``text`` from ``start``, up to the first punctuation mark
    (``_value_after``); None if none, or if the first is a function word."""
    words = []
    for match in islice(_WORD_RE.finditer(text, start), limit):
        word = match.group()
        stripped = word.rstrip(".,;!?")
        if stripped:
            words.append(stripped)
        if stripped != word or not stripped:
            break
    if not words or words[0].lower() in FUNCTION_WORDS:
        return None
    return " ".join(words)


def _head_noun(text: str, surface: str, start: int) -> str | None:
    """The head noun of an occurrence, as written (see the module docstring), or None."""
    named = split_named(surface)
    word: str | None
    if named is not None:
        word = named[0]
    else:
        m = _WORD_BEFORE_RE.search(text, max(0, start - 40), start)
        word = m.group(1) if m else None
    if word is None or word.lower() in FUNCTION_WORDS:
        return None
    return word


class ReferentTracker:
    """Sequential referent induction (module rules); feed blocks in time order.

    ``observe(text)`` reads a plain text; ``observe_mentions`` a block read by
    ``mentions.MentionReader`` (prose, JSON values, known values).
    """

    def __init__(self, window: int = DESCRIPTION_WINDOW) -> None:
        self.window = _checks.positive_int("window", window)
        self._name: dict[str, str] = {}  # key -> referent name (first surface)
        self._nouns_of: dict[str, tuple[str, ...]] = {}  # key -> head nouns seen (few: a tuple, not a set)
        self._shapes_of: dict[str, set[str]] = defaultdict(set)  # noun -> shapes of its keys
        self._stems: set[str] = set()  # nouns given by a JSON key (or a tool name)
        self._last_stem: dict[str, tuple[int, frozenset[str]]] = {}  # stem -> newest block, its keys
        # mention streams, in block order: (position, key) per head noun and per shape
        self._noun_pos: dict[str, list[int]] = defaultdict(list)
        self._noun_key: dict[str, list[str]] = defaultdict(list)
        self._shape_pos: dict[str, list[int]] = defaultdict(list)
        self._shape_key: dict[str, list[str]] = defaultdict(list)
        self._position = 0
        self._anchors: dict[str, tuple[str, int]] = {}  # noun -> (key, block) of its newest anchored description
        self._bound_at: dict[str, int] = {}  # key -> the newest block binding it

    def observe(
        self, text: str, occurrences: Iterable[tuple[str, str, int, int]] | None = None
    ) -> tuple[dict[str, str] | None, list[str]]:
        """``(binds, uses)`` of the next block, a plain text; updates the tables.

        ``occurrences`` is ``list(iter_identifiers(text))`` when the caller has it already.
        """
        piece = Prose(text, descriptions=True)
        found = iter_identifiers(text) if occurrences is None else occurrences
        binds, uses, _ = self.observe_mentions(
            [piece], [Mention(k, s, "prose", None, piece, a, b) for k, s, a, b in found]
        )
        return binds, uses

    def observe_mentions(
        self, prose: Sequence[Prose], mentions: Sequence[Mention]
    ) -> tuple[dict[str, str] | None, list[str], dict[str, int | None]]:
        """``(binds, uses, described)`` of the next block from its prose pieces and mentions
        (in document order); ``described``: the keys its definite descriptions resolve to,
        each with the position of the block whose description anchored it (None: resolved
        in the window)."""
        p = self._position
        self._position += 1
        binds: dict[str, str] = {}
        bound_here: set[str] = set()
        used: set[str] = set()
        described: dict[str, int | None] = {}
        mentioned: dict[str, None] = {}  # keys in order of first mention
        shaped: dict[str, None] = {}  # the keys of prose mentions (the ones with a shape)
        local_nouns: dict[str, dict[str, None]] = {}  # noun -> the keys carrying it here
        for m in mentions:
            key = m.key
            # a JSON value (no prose piece) has its key's stem as head noun
            head = m.noun if m.piece is None else _head_noun(m.piece.text, m.surface, m.start)
            noun = sys.intern(head.lower()) if head else None  # one string per noun, however many keys carry it
            if noun is not None:
                local_nouns.setdefault(noun, {})[key] = None
                nouns = self._nouns_of.get(key, ())
                if noun not in nouns:
                    self._nouns_of[key] = (*nouns, noun)
                if m.source == "json":
                    self._stems.add(noun)
                elif m.source == "prose":
                    self._shapes_of[noun].add(shape(key))
            mentioned.setdefault(key)
            if m.source == "prose":
                shaped.setdefault(key)
            if key not in self._name:
                self._name[key] = m.surface
                value = _value_after(m.piece.text, m.end, _DEFINE) if m.piece is not None else None
                if value is None:
                    value = f"{head} {m.surface}" if head and split_named(m.surface) is None else m.surface
                binds[m.surface] = value
                bound_here.add(key)
            elif key not in bound_here:
                value = _value_after(m.piece.text, m.end, _REBIND) if m.piece is not None else None
                if value is not None:
                    binds[self._name[key]] = value
                    bound_here.add(key)
                    used.discard(key)
                else:
                    used.add(key)
        local_shapes = {shape(k) for k in shaped}
        resolved: dict[str, tuple[str, int | None] | None] = {}  # noun -> its description's referent here
        anchored: dict[str, str] = {}  # noun -> the one key here carrying it, for a description of it
        for piece in prose:
            if not piece.descriptions:
                continue
            for match in _DESCRIPTION_RE.finditer(piece.text):
                noun = self._description_noun(match, local_nouns)
                if noun is None:
                    continue
                if noun not in resolved:
                    local = noun in local_nouns or not local_shapes.isdisjoint(self._shapes_of.get(noun, ()))
                    if len(local_nouns.get(noun, ())) == 1:
                        anchored[noun] = next(iter(local_nouns[noun]))
                    resolved[noun] = None if local else self._resolve_anchored(noun, p)
                found = resolved[noun]
                if found is not None and found[0] not in bound_here:
                    used.add(found[0])
                    described.setdefault(found[0], found[1])
        for noun, key in anchored.items():
            self._anchors[noun] = (key, p)
        self._bound_at.update(dict.fromkeys(bound_here, p))
        stems: dict[str, set[str]] = defaultdict(set)
        for key in mentioned:
            for noun in self._nouns_of.get(key, ()):
                self._noun_pos[noun].append(p)
                self._noun_key[noun].append(key)
                if noun in self._stems:
                    stems[noun].add(key)
        for key in shaped:
            self._shape_pos[shape(key)].append(p)
            self._shape_key[shape(key)].append(key)
        for noun, keys in stems.items():
            self._last_stem[noun] = (p, frozenset(keys))
        uses = sorted(self._name[k] for k in used)
        return (binds or None), uses, described

    def binder(self, key: str) -> int | None:
        """The position of the newest block so far that binds ``key`` (introduces or rebinds it), or None."""
        return self._bound_at.get(key)

    def _description_noun(self, m: re.Match[str], local: Container[str]) -> str | None:
        """The noun a description match names (module rules), or None; ``local``: the head
        nouns of the block's own keys, known nouns as those of earlier blocks are.

        Any noun after ``that``/``this``/``said`` or ``the same`` (the next word); a key's
        stem also after ``the``/``my``/``our``/``your`` and modifiers, as any of the next
        three words that ends the phrase ("the same authorization token to ...").
        """
        determiner, modifiers = m.group(1).lower(), m.group(2).lower().split()
        words = [m.group(3).lower(), *m.group(4).lower().split()]
        plain = (determiner in _STRONG and not modifiers) or (determiner == "the" and modifiers == ["same"])
        if plain and (words[0] in self._noun_pos or words[0] in local):
            return words[0]
        for k, word in enumerate(words[:3]):
            if word in self._stems and (k + 1 == len(words) or words[k + 1] in FUNCTION_WORDS):
                return word
        return None

    def _resolve_anchored(self, noun: str, position: int) -> tuple[str, int | None] | None:
        """The referent of "that <noun>": the window's one candidate (with None), else the key of
        the noun's newest anchor with the anchoring block's position (module rules), else None."""
        key = self._resolve(noun, position)
        if key is not None:
            return key, None
        return self._anchors.get(noun)

    def _resolve(self, noun: str, position: int) -> str | None:
        """The one candidate key for "that <noun>" (module rule), else None."""
        start = position - self.window
        candidates: set[str] = set()
        if not _add_recent(candidates, self._noun_pos, self._noun_key, noun, start):
            return None
        for sig in self._shapes_of.get(noun, ()):
            if not _add_recent(candidates, self._shape_pos, self._shape_key, sig, start):
                return None
        if not candidates and noun in self._last_stem:
            candidates = set(self._last_stem[noun][1])
        return candidates.pop() if len(candidates) == 1 else None


def _add_recent(
    candidates: set[str], positions: dict[str, list[int]], keys: dict[str, list[str]], stream: str, start: int
) -> bool:
    """Add the keys mentioned in ``stream`` at positions >= ``start``; False (and stop) at a second key.

    A block adds each key to a stream once, so at most ``window`` entries are read before
    a second distinct key turns up, however many mentions the stream holds.
    """
    pos = positions.get(stream)
    if not pos:
        return True
    stream_keys = keys[stream]
    for k in range(len(pos) - 1, bisect_left(pos, start) - 1, -1):
        candidates.add(stream_keys[k])
        if len(candidates) > 1:
            return False
    return True


def induce_referents(
    texts: Sequence[str], *, timestamps: Any = None, window: int = DESCRIPTION_WINDOW
) -> tuple[list[dict[str, str] | None], list[list[str]]]:
    """``(binds, uses)`` for the pinning API, by the module rules, blocks taken in time order.

    ``timestamps`` orders the blocks as in ``induce_edges`` (default: block order).
    """
    blocks = _validate.text_list(texts)
    rank = _checks.time_rank(timestamps, len(blocks))
    tracker = ReferentTracker(window)
    binds: list[dict[str, str] | None] = [None] * len(blocks)
    uses: list[list[str]] = [[] for _ in blocks]
    order = [0] * len(blocks)
    for i, r in enumerate(rank.tolist()):
        order[r] = i
    for i in order:
        binds[i], uses[i] = tracker.observe(blocks[i])
    return binds, uses
