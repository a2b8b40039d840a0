"""The value table: verbatim values of messages not sent, in one system message.

A tool result left out takes its identifiers, numbers and codes with it, and the next call
may need exactly those.  Its values cost a fraction of its message (the bulk, the framing
and the call stay out), so the agent policy sends them in a *value table*: one system
message right after the leading system messages (where a binding table goes), holding
``<path> -> <value>`` lines, verbatim, under the id of the block they come from.

**Lines.**  The value lines L_i of block i (``value_lines``) are the body lines of its
digest (``digest.digest_lines``: one line per JSON leaf, key path -> value, values never
altered, a long text reduced to its value words, a long list to its first items) for a tool
result, and the same lines of each tool call's arguments for an assistant message with tool
calls, their paths the argument's own (``source -> a.txt``; arguments that are not an object
stand under the function's name, ``name -> 5``); no other block has lines.  Lines that only
count what was left out (``(...)``) are not values.  The function's name stays out of the
argument lines: at the budgets where a table matters (tens of tokens beyond the roots) it would
cost a token or two on every line, and the block's id brings the whole call back (``recall``).

**Candidates.**  For a set S of blocks, C(S) lists the lines of the blocks of S in rounds:
the first ``ROUND_LINES`` lines of each block, newest block first, then the next
``ROUND_LINES`` of each block that has more, and so on (so one large result does not fill a
table alone), a line equal to one listed before dropped.  C_short(S) keeps the lines of at
most ``RESERVE_CHARS`` characters (an identifier, a number, a code, a short name with its
key); ``short_first(C)`` puts the lines of at most ``FIRST_CHARS`` characters first, each part
in its order.

**Budget split** (``compaction.decide``, the agent policy).  With B the budget, R the live
roots and the blocks they pin (their referent closure: what ``retain`` keeps at any budget it
accepts), r = B - cost(R) the room beyond them and E = cost(all) - B what must be left out:

    T_0 = fill(C_short(not R), min(s r, r - A, E))  the reserve: short values of every other block
    messages = retain + digests at B - cost(T_0)
    T   = fill(short_first(C(evicted)), B - used(messages))

where ``fill(C, room)`` is the table of the longest prefix of C whose text costs at most
``room`` as a system message (``compaction.table_cost``), or no table.  The share s is
``RESERVE_SHARE`` when a root depends on an earlier block (an edge from it, or a referent it
pins, such as a resolved "that account"), else 1.  A is what the newest turn *asks for*: when
the most relevant block outside R, i*, is at least ``ASKS_FOR`` times as relevant as the mean
block (r_i* >= ``ASKS_FOR`` / N, with r the softmax relevance of ``retain``: the turn matches
something said before, "what is my sister's name?"), A is the cost of the blocks outside R
that ``retain`` ranks at or above i* (the room it needs to admit i*); else A = 0.  So the
short values claim their tokens first (all the room when the newest turn neither depends on
nor asks for anything said before, as in a request for the next action; a quarter of it stays
for the blocks ``retain`` ranks first when a root depends on one; never the room the block
asked for needs; and never more than what must be left out anyway, so a history that fits is
sent whole), the messages take what is left (R always fits it: r counts beyond R), and the
table is then rebuilt from the blocks the messages left out in all the room they leave: the
sent cost is at most B.  Relevance and ranks do not depend on the budget, so ``decided``
reads A from a first decision at A = 0 and decides again only when A changes the reserve.  If
the roots need a binding table at B - cost(T_0) (R is dearer than the roots with a binding
table), the messages are decided at B and T fills what is left (no table beside a binding
table).

**Rendering.**  A header (``HEADER``), then for each run of entries from one source (in the
order of C: a block whose lines come in several rounds heads each of its runs) a line
``<id>:`` followed by the run's lines, so the text of a prefix of the entries is the first
lines of the whole table's.  A table is not a message block, so it is never a source of
another table, and a digest of its text gives its lines back.
"""

from __future__ import annotations

import bisect
import itertools
import json
import string
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dsgc_ref.contract import DsgcValueError, ReferentEvictionError, is_integer_scalar

from .._deferred import deferred
from ..result import Retention
from .block import Block
from .digest import digest_lines
from .line_index import IndexedLines, LineIndex
from .token_counts import TokenCounter

#: ``meta["kind"]`` of a value-table block
VALUE_TABLE_KIND = "value_table"
#: the first line of every value table (3 tokens; each ``<id>:`` line below it is a block id that
#: ``MemoryStore.recall`` takes)
HEADER = "[left out]"
#: longest line the reserve takes
RESERVE_CHARS = 40
#: the most of the room beyond the roots the reserve takes when a root depends on an earlier
#: block (the rest is left to the messages); all of it otherwise
RESERVE_SHARE = 0.75
#: an earlier block at least this many times as relevant as the mean block is one the newest
#: turn asks for (measured: a request for the next action matches its best earlier block at a
#: median 1.3-1.4x the mean on BFCL, a fact asked for again at 1.9-6.1x on the long-range
#: conversations, 10th to 90th percentile; docs/benchmark.md)
ASKS_FOR = 2.0
#: longest line the final table takes before the longer ones
FIRST_CHARS = 60
#: lines of each block a round of C(S) takes (module docstring)
ROUND_LINES = 2
#: one entry: (source block index, line)
Entry = tuple[int, str]

value_line_kernels = deferred("dsgc_fast.kernels.value_lines")


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
        out += [f"{name}{line[1:]}" if line.startswith("$") else line for line in _body(arguments)]
    return tuple(out)


@dataclass(frozen=True)
class ValueTable:
    """A value table as sent: its text, its cost as a system message, its entries in order."""

    text: str
    cost: int
    entries: tuple[Entry, ...]


def candidates(
    lines: IndexedLines, sources: np.ndarray | Sequence[int], max_chars: int | None = None
) -> Iterator[Entry]:
    """C(S) of the blocks ``sources`` (C_short with ``max_chars``): in rounds, newest first, deduplicated.

    ``sources`` are positions of ``lines``, ascending, each once.  The walk runs in one kernel
    over the lines' ids (``line_index``) at the first entry read; the entries' texts are looked
    up one at a time, so a table that fills up early reads only the first entries.
    """
    order = np.asarray(sources, dtype=np.int64)[::-1].copy()
    size = int(lines.counts[order].sum())
    source, line = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    longest = max_chars if max_chars is not None else np.iinfo(np.int64).max
    n = value_line_kernels.candidate_entries(
        lines.starts, lines.counts, lines.ids, lines.chars, order, longest, ROUND_LINES, len(lines.texts), source, line
    )
    texts = lines.texts
    for s, i in zip(source[:n].tolist(), line[:n].tolist()):
        yield s, texts[i]


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
    """The lines of the table of ``entries``: the header, then, for each run of entries from one
    source, the source's ``<id>:`` line and their lines (a source whose entries come in several
    rounds of ``candidates`` heads each of its runs)."""
    out = [HEADER]
    for k, (source, line) in enumerate(entries):
        if k == 0 or source != entries[k - 1][0]:
            out.append(f"{ids[source]}:")
        out.append(line)
    return out


def render(entries: Sequence[Entry], ids: Sequence[str]) -> str:
    """The table's text of ``entries`` (``rendered_lines`` joined by line breaks)."""
    return "\n".join(rendered_lines(entries, ids))


def fill(
    entries: Iterable[Entry], ids: Sequence[str], room: int, cost: Callable[[str], int], count: LineCounts
) -> ValueTable | None:
    """``fill(C, room)``: the table of the longest prefix of ``entries`` that costs at most ``room``, or None.

    ``cost`` is a table text's cost as a system message (its text's tokens plus the same
    framing for every text), ``count`` a line's tokens.  Each prefix's *estimate* sums its
    lines' tokens (each line and each ``<id>:`` line with one token for its line break, plus
    the header's; a joined text costs about the sum of its lines); the prefixes read are
    those estimated at most ``2 * room``, so ``entries`` are read only as far as that bound.
    The search starts at the longest prefix estimated to fit and steps by one on the rendered
    text's cost (``PrefixTokens``) until the prefix fits and the next one does not.
    """
    if room <= 0:
        return None
    estimate, estimates = int(cost(HEADER)), [int(cost(HEADER))]
    taken: list[Entry] = []
    for source, line in entries:
        heads = not taken or taken[-1][0] != source  # the entry starts a run: its <id>: line
        estimate += count(line) + 1 + (count(f"{ids[source]}:") + 1 if heads else 0)
        if estimate > 2 * room:
            break
        taken.append((source, line))
        estimates.append(estimate)
    framing = int(cost(HEADER)) - count(HEADER)
    tokens = PrefixTokens(taken, ids, count)
    m = bisect.bisect_right(estimates, room) - 1  # the longest prefix estimated to fit
    if m > 0 and framing + tokens(m) > room:
        m -= 1
        while m > 0 and framing + tokens(m) > room:
            m -= 1
    else:
        while m < len(taken) and framing + tokens(m + 1) <= room:
            m += 1
    if m <= 0:
        return None
    return ValueTable(tokens.text(m), framing + tokens(m), tuple(taken[:m]))


def reserve(
    lines: IndexedLines, ids: Sequence[str], count: LineCounts, costs: np.ndarray,
    kept: np.ndarray, budget: int, cost: Callable[[str], int], *, depends: bool, asked: int = 0,
) -> int:  # fmt: skip
    """cost(T_0), the reserve: ``fill(C_short(not R), min(s r, r - A, E))`` (module docstring), 0
    without one; ``kept`` is R, ``depends``: a root depends on an earlier block (s =
    ``RESERVE_SHARE``, else 1), ``asked`` is A."""
    short = candidates(lines, outside(kept, costs.shape[0]), RESERVE_CHARS)
    table = fill(short, ids, reserve_room(costs, kept, budget, depends, asked), cost, count)
    return 0 if table is None else table.cost


def reserve_room(costs: np.ndarray, kept: np.ndarray, budget: int, depends: bool, asked: int) -> int:
    """The reserve's room min(s r, r - A, E) (module docstring): ``kept`` is R, ``asked`` A."""
    room = budget - int(costs[kept].sum())
    share = int(RESERVE_SHARE * room) if depends else room
    return min(share, room - asked, int(costs.sum()) - budget)


def outside_mask(kept: np.ndarray, n: int) -> np.ndarray:
    """The mask of the ``n`` blocks not in ``kept`` (indices or a mask)."""
    others = np.ones(n, dtype=np.bool_)
    others[kept] = False
    return others


def outside(kept: np.ndarray, n: int) -> np.ndarray:
    """The indices of the ``n`` blocks not in ``kept``, ascending."""
    return np.flatnonzero(outside_mask(kept, n))


def decided(
    run: Callable[[int], Retention], lines: IndexedLines, ids: Sequence[str], count: LineCounts,
    costs: np.ndarray, kept: np.ndarray, budget: int, cost: Callable[[str], int], *, depends: bool,
) -> Retention:  # fmt: skip
    """``retain``'s decision beside the reserve (module docstring): ``run`` at B - cost(T_0).

    ``kept`` is R (the live roots and what they pin), ``depends``: a root depends on an earlier
    block.  The reserve is first taken with A = 0; if the decision shows a block the newest turn
    asks for (``asked_for``), the reserve is taken again leaving A and ``retain`` decides again
    (relevance and ranks do not depend on the budget).  Both read the same candidates, once.
    """
    short = Replay(candidates(lines, outside(kept, costs.shape[0]), RESERVE_CHARS))

    def at(room: int) -> int:
        table = fill(short, ids, room, cost, count)
        return budget - (0 if table is None else table.cost)

    room = reserve_room(costs, kept, budget, depends, 0)
    inner = at(room)
    result = reserved(run, inner, budget)
    asked = asked_for(result, costs, kept)
    if asked:
        again_room = reserve_room(costs, kept, budget, depends, asked)
        again = inner if again_room == room else at(again_room)  # the same room fills the same table
        if again != inner:
            result = reserved(run, again, budget)
    return result


class Replay:
    """An iterable over ``entries`` that each iteration reads from the start: what an earlier
    iteration read is replayed, and ``entries`` is read further only past it."""

    def __init__(self, entries: Iterator[Entry]) -> None:
        self._entries = entries
        self._read: list[Entry] = []

    def __iter__(self) -> Iterator[Entry]:
        k = 0
        while True:
            if k == len(self._read):
                entry = next(self._entries, None)
                if entry is None:
                    return
                self._read.append(entry)
            yield self._read[k]
            k += 1


def asked_for(result: Retention, costs: np.ndarray, kept: np.ndarray) -> int:
    """A: the cost of the blocks outside ``kept`` that ``result`` ranks at or above the most relevant
    of them, i*, when r_i* >= ``ASKS_FOR`` / N (the newest turn asks for i*); 0 otherwise."""
    others = outside_mask(kept, costs.shape[0])
    if not others.any():
        return 0
    relevance = np.where(others, result.relevance, -np.inf)
    top = int(np.argmax(relevance))
    if float(relevance[top]) * costs.shape[0] < ASKS_FOR:
        return 0
    position = np.empty(costs.shape[0], dtype=np.int64)
    position[result.rank] = np.arange(costs.shape[0])
    return int(costs[others & (position <= position[top])].sum())


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
    lines: IndexedLines, ids: Sequence[str], count: LineCounts, evicted: np.ndarray, room: int,
    cost: Callable[[str], int],
) -> ValueTable | None:  # fmt: skip
    """T = ``fill(short_first(C(evicted)), room)`` (module docstring); ``evicted`` a mask over the blocks."""
    return fill(short_first(candidates(lines, np.flatnonzero(evicted))), ids, room, cost, count)


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

    The text of a prefix is the first lines of the whole table's (``rendered_lines``).  With a
    counter that splits at word breaks, the counts of the runs of lines between its word breaks
    are summed, each run counted once and only when a prefix asked reaches past it, and a
    prefix costs a search and the count of the run it ends in.  Otherwise each prefix is
    rendered and counted (``LineCounts.joined``).
    """

    def __init__(self, taken: Sequence[Entry], ids: Sequence[str], count: LineCounts) -> None:
        self._taken, self._ids, self._count = taken, ids, count
        self._split = count.counter.splits_lines
        if self._split:
            self._lines = rendered_lines(taken, ids)
            self._ends = [1]  # the lines of the table of each prefix
            for k, (source, _) in enumerate(taken):
                self._ends.append(self._ends[-1] + 1 + (k == 0 or source != taken[k - 1][0]))
            self._breaks = word_breaks(self._lines)
            self._before = [0]  # tokens of the runs before each break, with their line breaks (as far as asked)

    def text(self, m: int) -> str:
        """The table text of ``taken[:m]`` (``render``; with a splitting counter, the first lines already rendered)."""
        if not self._split:
            return render(self._taken[:m], self._ids)
        return "\n".join(self._lines[: self._ends[m]])

    def __call__(self, m: int) -> int:
        if not self._split:
            return self._count.joined(rendered_lines(self._taken[:m], self._ids))
        end = self._ends[m]
        j = bisect.bisect_left(self._breaks, end)  # the breaks inside the prefix's lines
        breaks, before, count = self._breaks, self._before, self._count
        while len(before) <= j:  # the runs up to the j-th break, counted once
            k = len(before) - 1
            before.append(
                before[-1] + count("\n".join(self._lines[breaks[k - 1] if k else 0 : breaks[k]])) + count("\n")
            )
        start = breaks[j - 1] if j else 0
        return before[j] + count("\n".join(self._lines[start:end]))


class BlockValueLines:
    """The value lines of a store's blocks by slot, each computed once, at the first compaction that
    sees the block (from the block then held: its whole, since a block is cut or digested only
    after), their ids (``line_index.LineIndex``) and their token counts (``count``).

    A compaction looks at the slots added since the previous one only; ``forget`` drops deleted
    blocks' lines, ``rebuilt`` those of slots a rolled-back group added, and has the next
    compaction look at every slot again (a deletion rolled back brings its block back).  Either
    starts the index over (a deleted block's lines may be among its texts): the next compaction
    indexes every slot again.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._lines: list[tuple[str, ...] | None] = []  # by slot; None: not computed (or forgotten)
        self._seen = 0  # every slot below it asked since is computed or deleted
        self._index = LineIndex()  # the lines of slots 0 .. len(index) - 1 (none: ())
        self.count = LineCounts(counter)

    def of(self, slots: np.ndarray, blocks: Mapping[int, Block]) -> IndexedLines:
        """The value lines of ``blocks[s]`` for each slot ``s`` in ``slots`` (ascending), by position."""
        lines, index = self._lines, self._index
        end = int(slots[-1]) + 1 if slots.shape[0] else 0
        lines.extend([None] * (end - len(lines)))
        for s in slots[int(np.searchsorted(slots, self._seen)) :].tolist():
            if lines[s] is None:
                lines[s] = value_lines(blocks[s])
        self._seen = max(self._seen, end)
        for s in range(len(index), end):
            index.append(lines[s] or ())
        if slots.shape[0] == end:  # every slot up to the last (none deleted): a view, no gather
            return index.prefix(end)
        return index.at(slots)

    def forget(self, slots: Iterable[int]) -> None:
        """Drop the lines of the blocks at ``slots`` (deleted: nothing of theirs may stay)."""
        for s in slots:
            if s < len(self._lines):
                self._lines[s] = None
        self._index = LineIndex()
        self.count.clear()

    def rebuilt(self, total: int) -> None:
        """The store was rebuilt from its record with ``total`` slots (a group rolled back, say)."""
        del self._lines[total:]
        self._seen = 0
        self._index = LineIndex()
