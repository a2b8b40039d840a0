"""The value table: verbatim values of messages not sent, in one system message.

A tool result left out takes its identifiers, numbers and codes with it, and the next call
may need exactly those.  Its values cost a fraction of its message (the bulk, the framing
and the call stay out), so the agent policy sends them in a *value table*: one system
message right after the leading system messages (where a binding table goes), holding
``<path> -> <value>`` lines, verbatim, grouped by the block they come from.

**Lines.**  The value lines L_i of block i (``value_lines``) are the body lines of its
digest (``digest.digest_lines``: one line per JSON leaf, key path -> value, values never
altered, a long text reduced to its value words, a long list to its first items) for a tool
result, and the same lines of each tool call's arguments, their paths prefixed by the
function's name (``name.path``), for an assistant message with tool calls; no other block has
lines.  Lines that only count what was left out (``(...)``) are not values.

**Candidates.**  For a set S of blocks, C(S) lists the lines of the blocks of S, newest block
first, each block's lines in their order, a line equal to one listed before dropped
(deduplicated).  C_short(S) keeps the lines of at most ``RESERVE_CHARS`` characters (an
identifier, a number, a code, a short name with its key); ``short_first(C)`` puts the lines of
at most ``FIRST_CHARS`` characters first, each part in its order.

**Budget split** (``compaction.decide``, the agent policy).  With B the budget, R the live
roots, r = B - cost(R) the room beyond them and E = cost(all) - B what must be left out:

    T_0 = fill(C_short(not R), min(s r, E))  the reserve: short values of every other block
    messages = retain + digests at B - cost(T_0)
    T   = fill(short_first(C(evicted)), B - used(messages))

where ``fill(C, room)`` is the table of the longest prefix of C whose text costs at most
``room`` as a system message (``compaction.table_cost``), or no table.  The share s is
``RESERVE_SHARE`` when the newest turn *refers back*: a root depends on an earlier block (an
edge from it, such as a resolved "that account"), or an earlier block is at least as
relevant to the query as the mean block (max over i not in R of r_i >= 1/N, with r the
softmax relevance of ``retain``: the turn matches something said before, "what is my
sister's name?"); otherwise s = 1.  So the short values claim their tokens first (all the
room when the newest turn refers back to nothing, as in a request for the next action;
else a quarter of it stays for the blocks ``retain`` ranks first, such as the message that
says what "that account" is, or the fact asked for; and never more than what must be left
out anyway, so a history that fits is sent whole), the messages take what is left, and the
table is then rebuilt from the
blocks the messages left out in all the room they leave: the sent cost is at most B.  If the
roots do not fit B - cost(T_0), or need a binding table there, the messages are decided at B
and T fills what is left (no table beside a binding table).

**Rendering.**  A header (``HEADER``), then per source block, in the order its first entry
comes, a line ``<id>:`` followed by its entries.  A table is not a message block, so it is
never a source of another table, and a digest of its text gives its lines back.
"""

from __future__ import annotations

import bisect
import itertools
import json
import string
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from dsgc_ref.contract import DsgcValueError, ReferentEvictionError, is_integer_scalar

from ..result import Retention
from .block import Block
from .digest import digest_lines
from .token_counts import TokenCounter

#: ``meta["kind"]`` of a value-table block
VALUE_TABLE_KIND = "value_table"
#: the first line of every value table
HEADER = "[values left out; recall(<id>)]"
#: longest line the reserve takes
RESERVE_CHARS = 40
#: the most of the room beyond the roots the reserve takes when the newest turn refers back
#: (the rest is left to the messages); all of it otherwise
RESERVE_SHARE = 0.75
#: longest line the final table takes before the longer ones
FIRST_CHARS = 60
#: one entry: (source block index, line)
Entry = tuple[int, str]


def _body(text: str) -> list[str]:
    return [line for line in digest_lines(text) if not line.startswith("(")]


def value_lines(block: Block) -> tuple[str, ...]:
    """The value lines of a message block (module docstring); none for other blocks."""
    message = block.meta.get("message")
    if not isinstance(message, dict):
        return ()
    if block.meta.get("role") == "tool":
        return tuple(_body(block.text))
    out: list[str] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments, name = function.get("arguments"), function.get("name")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        if not isinstance(arguments, str) or not isinstance(name, str):
            continue
        out += [f"{name}{line[1:]}" if line.startswith("$") else f"{name}.{line}" for line in _body(arguments)]
    return tuple(out)


@dataclass(frozen=True)
class ValueTable:
    """A value table as sent: its text, its cost as a system message, its entries in order."""

    text: str
    cost: int
    entries: tuple[Entry, ...]


def candidates(lines: Sequence[Sequence[str]], sources: Iterable[int], max_chars: int | None = None) -> Iterator[Entry]:
    """C(S) of the blocks ``sources`` (C_short with ``max_chars``): newest first, deduplicated.

    The entries come one at a time, so a table that fills up early reads only the newest
    blocks' lines.
    """
    seen: set[str] = set()
    for source in sorted(sources, reverse=True):
        for line in lines[source]:
            if line not in seen and (max_chars is None or len(line) <= max_chars):
                seen.add(line)
                yield source, line


def short_first(entries: Iterable[Entry]) -> Iterator[Entry]:
    """The entries of at most ``FIRST_CHARS`` characters, then the others, each part in order.

    The short entries come as they are read; the long ones only once ``entries`` is exhausted.
    """
    longer = []
    for entry in entries:
        if len(entry[1]) <= FIRST_CHARS:
            yield entry
        else:
            longer.append(entry)
    yield from longer


def rendered_lines(entries: Sequence[Entry], ids: Sequence[str]) -> list[str]:
    """The lines of the table of ``entries``: the header, then each source's ``<id>:`` line and its lines."""
    groups: dict[int, list[str]] = {}
    for source, line in entries:
        groups.setdefault(source, []).append(line)
    out = [HEADER]
    for source, group in groups.items():
        out += [f"{ids[source]}:", *group]
    return out


def render(entries: Sequence[Entry], ids: Sequence[str]) -> str:
    """The table's text of ``entries`` (``rendered_lines`` joined by line breaks)."""
    return "\n".join(rendered_lines(entries, ids))


def fill(
    entries: Iterable[Entry], ids: Sequence[str], room: int, cost: Callable[[str], int], count: LineCounts
) -> ValueTable | None:
    """``fill(C, room)``: the table of the longest prefix of ``entries`` that costs at most ``room``, or None.

    ``cost`` is a table text's cost as a system message (its text's tokens plus the same
    framing for every text), ``count`` a line's tokens.  The prefix is searched among those
    whose lines' summed tokens (each line and each ``<id>:`` line with one token for its line
    break, plus the header's) are at most ``2 * room`` (a joined text costs about the sum of
    its lines), by a binary search on the rendered text's cost (``PrefixTokens``);
    ``entries`` are read only as far as that bound.
    """
    if room <= 0:
        return None
    estimate, sources, taken = int(cost(HEADER)), set(), []
    for source, line in entries:
        estimate += count(line) + 1 + (count(f"{ids[source]}:") + 1 if source not in sources else 0)
        if estimate > 2 * room:
            break
        sources.add(source)
        taken.append((source, line))
    framing = int(cost(HEADER)) - count(HEADER)
    tokens = PrefixTokens(taken, ids, count)
    lo, hi = 0, len(taken)
    while lo < hi:  # the largest prefix length whose table fits
        mid = (lo + hi + 1) // 2
        if framing + tokens(mid) <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    return ValueTable(render(taken[:lo], ids), framing + tokens(lo), tuple(taken[:lo]))


def reserve(
    lines: Sequence[Sequence[str]], ids: Sequence[str], count: LineCounts, costs: np.ndarray,
    roots: np.ndarray, budget: int, cost: Callable[[str], int], *, refers_back: bool,
) -> int:  # fmt: skip
    """cost(T_0), the reserve: ``fill(C_short(not R), min(s r, E))`` (module docstring), 0 without one;
    ``refers_back``: the newest turn refers back (s = ``RESERVE_SHARE``, else 1)."""
    others = np.ones(costs.shape[0], dtype=np.bool_)
    others[roots] = False
    room = budget - int(costs[roots].sum())
    if refers_back:
        room = int(RESERVE_SHARE * room)
    room = min(room, int(costs.sum()) - budget)
    table = fill(candidates(lines, np.flatnonzero(others).tolist(), RESERVE_CHARS), ids, room, cost, count)
    return 0 if table is None else table.cost


def decided(
    run: Callable[[int], Retention], lines: Sequence[Sequence[str]], ids: Sequence[str], count: LineCounts,
    costs: np.ndarray, roots: np.ndarray, budget: int, cost: Callable[[str], int], *, depends: bool,
) -> Retention:  # fmt: skip
    """``retain``'s decision beside the reserve (module docstring): ``run`` at B - cost(T_0).

    ``depends``: a root depends on an earlier block.  Without that, the reserve is first taken
    with s = 1; if the decision's relevance then shows an earlier block at least as relevant as
    the mean block (``matches_earlier``), the reserve is taken again with s = ``RESERVE_SHARE``
    and ``retain`` decides again (relevance does not depend on the budget).
    """

    def at(refers_back: bool) -> int:
        return budget - reserve(lines, ids, count, costs, roots, budget, cost, refers_back=refers_back)

    inner = at(depends)
    result = reserved(run, inner, budget)
    if not depends and matches_earlier(result.relevance, roots):
        capped = at(True)
        if capped != inner:
            result = reserved(run, capped, budget)
    return result


def matches_earlier(relevance: np.ndarray, roots: np.ndarray) -> bool:
    """True when a block other than the roots has r_i >= 1/N, the mean relevance (the newest turn
    matches something said before)."""
    others = np.ones(relevance.shape[0], dtype=np.bool_)
    others[roots] = False
    return bool(others.any()) and float(relevance[others].max()) * relevance.shape[0] >= 1.0


def reserved(run: Callable[[int], Retention], inner: int, budget: int) -> Retention:
    """``run(inner)`` (the budget less the reserve), or ``run(budget)`` when ``inner < budget`` and
    the roots do not fit ``inner`` or need a binding table there: the reserve never makes
    ``retain`` refuse or escalate."""
    if inner == budget:
        return run(budget)
    try:
        result = run(inner)
    except ReferentEvictionError:
        return run(budget)
    return run(budget) if result.binding_table is not None else result


def final(
    lines: Sequence[Sequence[str]], ids: Sequence[str], count: LineCounts, evicted: np.ndarray, room: int,
    cost: Callable[[str], int],
) -> ValueTable | None:  # fmt: skip
    """T = ``fill(short_first(C(evicted)), room)`` (module docstring); ``evicted`` a mask over the blocks."""
    return fill(short_first(candidates(lines, np.flatnonzero(evicted).tolist())), ids, room, cost, count)


@dataclass(frozen=True)
class ValueTableBlock:
    """A value table as the block sent (``meta["kind"]`` ``VALUE_TABLE_KIND``) and its entries ``(source id, line)``."""

    block: Block
    entries: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, block_id: str, text: str, cost: int, seq: int, entries: tuple[tuple[str, str], ...]) -> ValueTableBlock:
        """The table block with these fields, its entries also in ``meta["entries"]``."""
        meta = {"kind": VALUE_TABLE_KIND, "entries": [list(e) for e in entries]}
        return cls(Block(id=block_id, text=text, cost=cost, seq=seq, meta=meta), entries)

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.block.id,
            "text": self.block.text,
            "cost": self.block.cost,
            "entries": [list(e) for e in self.entries],
        }


def stored(table: ValueTableBlock) -> str:
    """The JSON text a store's archive keeps of ``table`` (``schema.VALUE_TABLE_KEY``; read by ``from_stored``)."""
    return json.dumps({**table.to_dict(), "seq": table.block.seq})


def from_stored(text: str) -> ValueTableBlock:
    """The table ``stored`` wrote as ``text``; ``ValueError`` saying what is wrong with anything else."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or set(data) != {"id", "text", "cost", "seq", "entries"}:
        raise DsgcValueError("the stored value table is not an object with id, text, cost, seq and entries")
    if not isinstance(data["id"], str) or not isinstance(data["text"], str):
        raise DsgcValueError("the stored value table's id and text must be strings")
    if not all(is_integer_scalar(data[k]) and data[k] >= 0 for k in ("cost", "seq")):
        raise DsgcValueError("the stored value table's cost and seq must be non-negative integers")
    entries = data["entries"]
    if not isinstance(entries, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in entries
    ):
        raise DsgcValueError("the stored value table's entries must be [source id, line] pairs of strings")
    pairs = tuple((source, line) for source, line in entries)
    return ValueTableBlock.of(data["id"], data["text"], int(data["cost"]), int(data["seq"]), pairs)


def table_block(
    table: ValueTable | None, ids: Sequence[str], seq: int, taken: Container[str]
) -> ValueTableBlock | None:
    """``table`` as block number ``seq`` with id ``value-table`` (primed until no id in ``taken`` has it), or None."""
    if table is None:
        return None
    block_id = "value-table"
    while block_id in taken:
        block_id += "'"
    entries = tuple((ids[source], line) for source, line in table.entries)
    return ValueTableBlock.of(block_id, table.text, table.cost, seq, entries)


def without_sources(table: ValueTableBlock, gone: Container[str], cost: Callable[[str], int]) -> ValueTableBlock | None:
    """``table`` less the entries whose source id is in ``gone`` (recalled: sent whole again),
    rendered again at its cost ``cost(text)``; ``table`` itself if none is, None if none is left."""
    entries = tuple(e for e in table.entries if e[0] not in gone)
    if len(entries) == len(table.entries):
        return table
    if not entries:
        return None
    sources = list(dict.fromkeys(source for source, _ in entries))
    number = {source: k for k, source in enumerate(sources)}
    text = render([(number[source], line) for source, line in entries], sources)
    return ValueTableBlock.of(table.block.id, text, int(cost(text)), table.block.seq, entries)


#: what a line ends with, and the next starts with, at a word break (``TokenCounter.splits_lines``)
_WORD_END = frozenset(string.ascii_letters + string.digits)
_LINE_START = frozenset(chr(c) for c in range(0x21, 0x7F))
#: the most texts a ``LineCounts`` remembers (it starts over beyond)
LINE_COUNTS = 1 << 16


def word_breaks(lines: Sequence[str]) -> list[int]:
    """The k in 1..len(lines)-1 whose line break (between ``lines[k - 1]`` and ``lines[k]``) is a word break."""
    return [
        k for k in range(1, len(lines)) if lines[k - 1][-1:] in _WORD_END and lines[k][:1] in _LINE_START
    ]  # fmt: skip


class LineCounts:
    """``counter``'s token count of each line asked, remembered by text (the lines a table reads
    recur every compaction), and of lines joined by line breaks (``joined``).  ``clear`` forgets
    them (a deleted block's lines may be among them)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._known: dict[str, int] = {}

    def __call__(self, line: str) -> int:
        try:
            return self._known[line]
        except KeyError:
            if len(self._known) >= LINE_COUNTS:
                self._known.clear()
            self._known[line] = count = int(self.counter(line))
            return count

    def joined(self, lines: Sequence[str]) -> int:
        """The tokens of ``"\\n".join(lines)``: with a counter that splits at word breaks
        (``TokenCounter.splits_lines``), the sum of the counts of the runs of lines between
        them plus one line break's count per break, else the counter's count of the text."""
        if not self.counter.splits_lines:
            return int(self.counter("\n".join(lines)))
        bounds = [0, *word_breaks(lines), len(lines)]
        runs = sum(self("\n".join(lines[a:b])) for a, b in itertools.pairwise(bounds))
        return runs + (len(bounds) - 2) * self("\n")

    def clear(self) -> None:
        self._known.clear()


class PrefixTokens:
    """``m -> count(render(taken[:m], ids))``, the tokens of a prefix's table text.

    With a counter that splits at word breaks and sources whose entries are adjacent in
    ``taken`` (as ``candidates`` gives them), the text of a prefix is the first lines of the
    whole table's: the counts of the runs of lines between its word breaks are summed once,
    and a prefix costs a search and the count of the run it ends in.  Otherwise each prefix
    is rendered and counted (``LineCounts.joined``).
    """

    def __init__(self, taken: Sequence[Entry], ids: Sequence[str], count: LineCounts) -> None:
        self._taken, self._ids, self._count = taken, ids, count
        sources = [source for source, _ in taken]
        changes = sum(1 for a, b in itertools.pairwise(sources) if a != b)
        self._adjacent = count.counter.splits_lines and (not taken or changes + 1 == len(set(sources)))
        if self._adjacent:
            self._lines = rendered_lines(taken, ids)
            self._ends = [1]  # the lines of the table of each prefix
            for k, source in enumerate(sources):
                self._ends.append(self._ends[-1] + 1 + (k == 0 or source != sources[k - 1]))
            self._breaks = word_breaks(self._lines)
            bounds = [0, *self._breaks]
            self._before = [0]  # tokens of the runs before each break, with their line breaks
            for a, b in itertools.pairwise(bounds):
                self._before.append(self._before[-1] + count("\n".join(self._lines[a:b])) + count("\n"))

    def __call__(self, m: int) -> int:
        if not self._adjacent:
            return self._count.joined(rendered_lines(self._taken[:m], self._ids))
        end = self._ends[m]
        j = bisect.bisect_left(self._breaks, end)  # the breaks inside the prefix's lines
        start = self._breaks[j - 1] if j else 0
        return self._before[j] + self._count("\n".join(self._lines[start:end]))


class BlockValueLines:
    """The value lines of a store's blocks by slot, each computed once, at the first compaction that
    sees the block (from the block then held: its whole, since a block is cut or digested only
    after), and their token counts (``count``).

    A compaction looks at the slots added since the previous one only; ``forget`` drops deleted
    blocks' lines, ``rebuilt`` those of slots a rolled-back group added, and has the next
    compaction look at every slot again (a deletion rolled back brings its block back).
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._lines: list[tuple[str, ...] | None] = []  # by slot; None: not computed (or forgotten)
        self._seen = 0  # every slot below it asked since is computed or deleted
        self.count = LineCounts(counter)

    def of(self, slots: np.ndarray, blocks: Mapping[int, Block]) -> Sequence[tuple[str, ...]]:
        """The value lines of ``blocks[s]`` for each slot ``s`` in ``slots`` (ascending)."""
        lines = self._lines
        end = int(slots[-1]) + 1 if slots.shape[0] else 0
        lines.extend([None] * (end - len(lines)))
        for s in slots[int(np.searchsorted(slots, self._seen)) :].tolist():
            if lines[s] is None:
                lines[s] = value_lines(blocks[s])
        self._seen = max(self._seen, end)
        if slots.shape[0] == len(lines):  # every slot (none deleted): the list itself, each entry computed
            return cast("list[tuple[str, ...]]", lines)
        return [cast("tuple[str, ...]", lines[s]) for s in slots.tolist()]

    def forget(self, slots: Iterable[int]) -> None:
        """Drop the lines of the blocks at ``slots`` (deleted: nothing of theirs may stay)."""
        for s in slots:
            if s < len(self._lines):
                self._lines[s] = None
        self.count.clear()

    def rebuilt(self, total: int) -> None:
        """The store was rebuilt from its record with ``total`` slots (a group rolled back, say)."""
        del self._lines[total:]
        self._seen = 0
