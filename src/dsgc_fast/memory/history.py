"""``select``: the store's compaction decision over a chat history the caller owns, without a store.

An agent framework keeps its own message list and, before each model call, needs what to
send.  ``select(messages, budget)`` answers with what ``MemoryStore`` + ``add_messages`` +
``compact_messages`` would decide on the same messages (the same validation, costs, live
roots, working ages, whole tool units, referent pinning, binding table and explanations),
without an archive: no SQLite, nothing written, the caller's messages untouched, nothing
returned shared with them or with a later call.

What is reused across calls lives in a ``SelectCache`` (by default one per encoder):

* the encoder's row of every text seen (``encoders.CachedEncoder``, least recently used
  texts out beyond ``max_texts``), so a call encodes only texts it has not seen;
* the parsed histories (``max_histories`` of them, most recently used kept): the planned
  blocks, their costs, dependency edges, referent links and digests (each tool result's
  digest is built once, the first time a call with ``digests`` needs it), as arrays that
  grow.  A call
  whose messages begin with a cached history's messages (compared by value) plans only the
  messages after them; any other call parses its messages afresh.

Token counts are cached by the tokenizer's ``TokenCounter`` (``token_counts``).  A cache may
be shared by threads: calls on one cache run one at a time.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, ParamOverrides, Params, check_budget, is_integer_scalar

from .. import _validate
from .._text_caches import on_forget
from ..encoders import CachedEncoder, LexicalEncoder
from ..graph import DependencyGraph
from ..pins import ReferentIndex
from .block import Block, checked_block, copied_json
from .chat import ChatUnits
from .columns import BlockColumns, encoded, in_width, query_embedding
from .compaction import (
    AGENT_PARAMS,
    BlockTexts,
    Truncation,
    check_over_budget,
    cut_block,
    decide,
    required_budget,
    table_block,
    table_cost,
    tool_messages,
)
from .digest_blocks import BlockDigest, block_digest, digested_block
from .explain import BlockRoles, CompactionReport, build_report
from .line_index import IndexedLines, LineIndex
from .records import Planner, SessionError, chat_messages
from .schema import DEFAULT_WIDTH
from .store import token_counter_of
from .token_counts import TokenCounter, Tokenizer
from .value_table import LineCounts, value_lines
from .value_table import table_block as value_table_block

#: texts whose rows a ``SelectCache`` keeps by default
DEFAULT_MAX_TEXTS = 100_000
#: histories a ``SelectCache`` keeps by default
DEFAULT_MAX_HISTORIES = 8
#: encoders that get a default cache of their own (the least recently used is dropped)
_DEFAULT_CACHES = 8


@dataclass(frozen=True)
class Selection:
    """What ``select`` decided.

    Attributes
    ----------
    messages : list of dict
        The kept messages, oldest first, as a valid chat list (copies); a binding table, when
        escalation made one, or a value table (``values``) is a system message after the
        leading system messages; a cut tool result is sent cut.
    indices : list of int
        The input positions of the kept messages, ascending.
    ids : tuple of str
        The block id of every input message (``"m<k>"`` unless annotated), as the report names them.
    report : CompactionReport
        Every decision with its reason and score parts (``report.explain(id)``).
    used, budget : int
        Tokens kept (the chat cost of the kept messages, a binding or value table included) and the budget.
    over_budget : bool
        Even the live roots did not fit: only they were kept (``on_over_budget``).
    truncated : dict of int to Truncation
        Input position -> how that tool result was cut (``on_over_budget="truncate"``).
    digested : dict of int to BlockDigest
        Input position -> the digest sent in place of that tool result (``digests``): the
        message with the digest as its content, its cost, the value words kept and dropped.
    """

    messages: list[dict[str, Any]]
    indices: list[int]
    ids: tuple[str, ...]
    report: CompactionReport
    used: int
    budget: int
    over_budget: bool = False
    truncated: Mapping[int, Truncation] = dataclasses.field(default_factory=dict)
    digested: Mapping[int, BlockDigest] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check the fields' types and ranges (``TypeError``/``ValueError``), for a hand-built selection too."""
        if not isinstance(self.messages, list) or not all(isinstance(m, dict) for m in self.messages):
            raise DsgcTypeError("Selection.messages must be a list of message dicts")
        if not isinstance(self.ids, tuple) or not all(isinstance(i, str) for i in self.ids):
            raise DsgcTypeError("Selection.ids must be a tuple of block id strings")
        positions = (self.indices, list(self.truncated) if isinstance(self.truncated, Mapping) else None)
        for name, values in zip(("indices", "truncated"), positions):
            if not isinstance(values, list) or not all(is_integer_scalar(k) and 0 <= k < len(self.ids) for k in values):
                raise DsgcValueError(f"Selection.{name} must hold input positions in [0, {len(self.ids)})")
        if self.indices != sorted(set(self.indices)):
            raise DsgcValueError("Selection.indices must be ascending, without repeats")
        if not isinstance(self.report, CompactionReport):
            raise DsgcTypeError(f"Selection.report must be a CompactionReport, got {type(self.report).__name__}")
        if not isinstance(self.over_budget, bool):
            raise DsgcTypeError(f"Selection.over_budget must be a bool, got {type(self.over_budget).__name__}")
        _validate.result_scalars("Selection", {"used": self.used, "budget": self.budget}, {})

    @property
    def binding_table(self) -> str | None:
        """The binding table's text, or None."""
        table = self.report.binding_table
        return None if table is None else table.block.text

    @property
    def tables(self) -> list[str]:
        """The texts of the binding and value tables in ``messages``, in their order."""
        return [t for t in (self.binding_table, self.value_table) if t is not None]

    @property
    def value_table(self) -> str | None:
        """The value table's text (a system message of ``messages``), or None."""
        table = self.report.value_table
        return None if table is None else table.block.text


class SelectCache:
    """What ``select`` and ``min_budget`` reuse across calls (see the module docstring).

    Parameters
    ----------
    encoder : encoder or callable, optional
        What embeds texts (``encode(texts)`` or ``texts -> (n, d)``); default the lexical encoder.
    max_texts : int
        Texts whose rows are kept.
    max_histories : int
        Parsed histories kept.
    """

    def __init__(
        self, encoder: Any = None, *, max_texts: int = DEFAULT_MAX_TEXTS, max_histories: int = DEFAULT_MAX_HISTORIES
    ) -> None:
        if not isinstance(max_histories, int) or isinstance(max_histories, bool) or max_histories < 1:
            raise DsgcValueError(f"max_histories must be a positive int, got {max_histories!r}")
        self.encoder = encoder if encoder is not None else LexicalEncoder()
        self.rows = CachedEncoder(self.encoder, max_texts=max_texts)
        self.max_histories = max_histories
        self._histories: list[_History] = []
        self._counters: list[tuple[Any, TokenCounter]] = []
        self._lock = threading.RLock()

    @property
    def encoded(self) -> int:
        """Texts the encoder has been asked to encode so far."""
        return self.rows.encoded

    def clear(self) -> None:
        """Forget every row and history."""
        with self._lock:
            self.rows = CachedEncoder(self.encoder, max_texts=self.rows.max_texts)
            self._histories.clear()

    def counter(self, tokenizer: Tokenizer) -> TokenCounter:
        """The ``TokenCounter`` of a ``tokenizer=`` option, one per tokenizer object across calls.

        Named tokenizers share one counter per process already; a tokenizer object or
        callable gets its counter (and that counter's count cache) once per cache.
        """
        if tokenizer is None or isinstance(tokenizer, (str, TokenCounter)):
            return token_counter_of(tokenizer)
        seen = next((k for k, (known, _) in enumerate(self._counters) if known is tokenizer), None)
        counter = token_counter_of(tokenizer) if seen is None else self._counters.pop(seen)[1]
        self._counters.insert(0, (tokenizer, counter))
        del self._counters[self.max_histories :]
        return counter

    def prepared(
        self, messages: Any, tokenizer: Tokenizer, live: Sequence[int]
    ) -> tuple[TokenCounter, _History, _State, np.ndarray]:
        """The counter, the parsed history with its state, and the live roots of a call (hold the lock)."""
        counter = self.counter(tokenizer)
        history = self.history(_records(messages), counter)
        history.planner.check_answered()
        return counter, history, history.state(), history.roots(live)

    def history(self, records: list[Any], counter: TokenCounter) -> _History:
        """The parsed history of ``records``: a cached one extended, or a new one.

        An invalid record raises ``SessionError`` naming its position; the history it would
        have extended is dropped.
        """
        for k, history in enumerate(self._histories):
            if history.counter is counter and history.matches(records):
                del self._histories[k]
                break
        else:
            history = _History(counter)
        history.extend(records)  # raises before the history is (re)inserted
        self._histories.insert(0, history)
        del self._histories[self.max_histories :]
        return history


_defaults: list[SelectCache] = []
_defaults_lock = threading.Lock()
_LEXICAL = LexicalEncoder()


def _forget_default_caches() -> None:
    """Empty every default cache (``_text_caches.forget_texts``)."""
    with _defaults_lock:
        for cache in _defaults:
            cache.clear()


on_forget(_forget_default_caches)


def default_cache(encoder: Any = None) -> SelectCache:
    """The process's cache for ``encoder`` (None: the default lexical encoder).

    One per encoder object, for the most recently used encoders.
    """
    key = encoder if encoder is not None else _LEXICAL
    with _defaults_lock:
        for k, cache in enumerate(_defaults):
            if cache.encoder is key:
                del _defaults[k]
                break
        else:
            cache = SelectCache(key)
        _defaults.insert(0, cache)
        del _defaults[_DEFAULT_CACHES:]
    return cache


def select(
    messages: Sequence[Mapping[str, Any]],
    budget: int,
    *,
    query: Any = None,
    params: Params | None = None,
    tokenizer: Tokenizer = None,
    encoder: Any = None,
    live: Sequence[int] = (),
    on_over_budget: str = "raise",
    cache: SelectCache | None = None,
    digests: bool = True,
    values: bool = True,
    **overrides: Unpack[ParamOverrides],
) -> Selection:
    """Decide which messages of a chat history to send within ``budget`` tokens.

    Parameters
    ----------
    messages : sequence of dict
        OpenAI-style chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``,
        an optional ``"dsgc"`` annotation), oldest first; as ``add_messages`` takes them.
        Every tool call must have its result.
    budget : int
        Token budget (a non-negative integer), in the tokenizer's tokens.
    query : str, list of str or array_like, optional
        What the next model call is about (default: the newest user message).
    params, **overrides
        The scoring knobs (default ``AGENT_PARAMS``, the agent policy), as in ``retain``.
    tokenizer : optional
        Anything ``token_counts.token_counter`` takes (default ``default_tokenizer()``);
        a message costs its chat tokens, framing included.
    encoder : optional
        The encoder (default: ``cache``'s, else the lexical encoder).
    live : sequence of int
        Positions of further messages to keep as live roots (with their tool units).
    on_over_budget : {"raise", "roots_only", "truncate"}
        When even the live roots and the bindings they need exceed the budget:
        ``ReferentEvictionError``, the roots alone, or the roots with their largest tool
        results cut (``dsgc_fast.memory.compaction``).
    cache : SelectCache, optional
        Rows and parsed histories to reuse (default ``default_cache(encoder)``).
    digests : bool
        With the agent policy, a tool result may be sent as its digest (its values
        verbatim, the bulk dropped, in place with the same role and ``tool_call_id``;
        ``Selection.digested``) when the whole does not earn its tokens (``compaction``'s
        digest rule); other policies never digest.  Default True; False: whole messages
        only.  A caller that maps ``indices`` back to its own messages must send
        ``Selection.digested[k].message`` (a new message: same role, ``tool_call_id`` and
        other fields, the digest as content) in place of message ``k``.
    values : bool
        With ``digests`` and the agent policy, the values of the messages left out (tool
        results, tool-call arguments), verbatim, go in a value table: one system message
        after the leading system messages (``Selection.value_table``; the budget split and
        the lines in ``dsgc_fast.memory.value_table``).  Default True.

    Returns
    -------
    Selection

    Raises
    ------
    SessionError
        An invalid message (naming ``message <k>``), or a tool call without its result.
    ReferentEvictionError
        Over budget with ``on_over_budget="raise"``.
    """
    p = Params.of(params if params is not None else AGENT_PARAMS, **overrides)
    budget = check_budget(budget)
    check_over_budget(on_over_budget)
    for name, flag in (("digests", digests), ("values", values)):
        if not isinstance(flag, bool):
            raise DsgcTypeError(f"{name} must be a bool, got {type(flag).__name__}")
    tabled = digests and values and p.policy == "agent"
    cache = _cache(encoder, cache)
    with cache._lock:
        counter, history, state, roots = cache.prepared(messages, tokenizer, live)
        if query is None:
            if state.query is None:
                raise DsgcValueError("query is required: the messages have no user message to use as the query")
            query = state.query
        embs = history.embeddings(cache.rows)
        dimension = embs.shape[1] if state.n else None
        query_emb, query_text = query_embedding(
            query, lambda texts, name: encoded(cache.rows.encode, texts, name, dimension)
        )
        if not state.n:
            embs = np.empty((0, query_emb.shape[-1]))
        blocks = history.blocks()
        made, lines = history.forms(state.n, tabled) if digests and p.policy == "agent" else (None, None)
        outcome = decide(
            query_emb, embs, history.columns.cost.view()[: state.n], budget, params=p, graph=state.graph, index=state.index,
            roots=roots, counter=counter, ages=state.ages if p.policy == "agent" else None,
            on_over_budget=on_over_budget, tool_results=lambda found: tool_messages(blocks, found), digests=made,
            values=None if lines is None else (lines, history.columns.ids[: state.n], history.line_counts),
        )  # fmt: skip
    return _selection(history, state, blocks, roots, outcome, p, query_text, counter)


def min_budget(
    messages: Sequence[Mapping[str, Any]],
    *,
    tokenizer: Tokenizer = None,
    live: Sequence[int] = (),
    cache: SelectCache | None = None,
) -> int:
    """The smallest budget ``select`` meets without going over: the live roots and what they need.

    What they need is their referent closure (the blocks binding what they use, transitively),
    or, when that costs more, the binding table that replaces it
    (``compaction.required_budget``).  Any query, policy and encoder give the same answer.
    """
    cache = _cache(None, cache)
    with cache._lock:
        counter, history, state, roots = cache.prepared(messages, tokenizer, live)
        return required_budget(state.index, history.columns.cost.view()[: state.n], roots, table_cost(counter))


def _cache(encoder: Any, cache: SelectCache | None) -> SelectCache:
    if cache is None:
        return default_cache(encoder)
    if not isinstance(cache, SelectCache):
        raise DsgcTypeError(f"cache must be a SelectCache, got {type(cache).__name__}")
    if encoder is not None and encoder is not cache.encoder:
        raise DsgcValueError("encoder is not the cache's encoder: pass one of them, or a SelectCache(encoder)")
    return cache


def _records(messages: Any) -> list[Any]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise DsgcTypeError(f"messages must be a sequence of chat messages (dicts), got {type(messages).__name__}")
    return list(messages)


def _selection(
    history: _History, state: _State, blocks: list[Block], roots: np.ndarray, outcome: Any, p: Params, query: str,
    counter: TokenCounter,
) -> Selection:  # fmt: skip
    """The ``Selection`` of an ``Outcome``: the report (as ``MemoryStore.compact`` gives it) and the messages."""
    result = outcome.result
    slot_of = history.columns.slot_of
    ids = history.columns.ids[: state.n]
    table = table_block(result.binding_table, ids, state.n, slot_of, counter)
    values = value_table_block(outcome.value_table, ids, state.n, slot_of)
    cut = {i: cut_block(blocks[i], t) for i, t in outcome.truncated.items()}
    digested = {i: d.detached() for i, d in outcome.digested.items()}
    cut.update((i, digested_block(blocks[i], d)) for i, d in digested.items())
    report = build_report(
        ids,
        result,
        costs=outcome.costs,
        graph=state.graph,
        referents=state.index,
        roots=roots,
        lambda_pi=p.effective_lambda,
        query=query,
        texts=BlockTexts(ids, dict(enumerate(blocks)), slot_of, cut),
        table_block=table,
        over_budget=outcome.over_budget,
        truncated={ids[i]: t for i, t in outcome.truncated.items()},
        roles=BlockRoles(ids, lambda block_id: blocks[slot_of[block_id]]),
        digested={ids[i]: d for i, d in digested.items()},
        value_table=values,
    )
    kept = result.retained.tolist()
    sent = [cut.get(i) or blocks[i] for i in kept] + ([table.block] if table is not None else [])
    if values is not None:
        sent.append(values.block)
    return Selection(
        messages=chat_messages(sent, copy=True),
        indices=kept,
        ids=tuple(ids),
        report=report,
        used=int(result.used),
        budget=int(result.budget),
        over_budget=outcome.over_budget,
        truncated={i: _detached_cut(t) for i, t in outcome.truncated.items()},
        digested=digested,
    )


def _detached_cut(cut: Truncation) -> Truncation:
    return dataclasses.replace(cut, message=copied_json(cut.message))


@dataclass(frozen=True)
class _State:
    """What a history's first ``n`` blocks give every call: the graph, the referent index, the
    agent policy's working ages, the live roots without ``live`` and the default query."""

    n: int
    graph: DependencyGraph
    index: ReferentIndex
    ages: np.ndarray
    roots: np.ndarray
    query: str | None


class _History:
    """One chat history as the blocks ``add_messages`` would add (with the edges its induction
    gives), in a ``BlockColumns`` (every block held, none archived).

    ``records`` are JSON copies of the input records, so that a later call is recognized
    as this history grown; ``extend`` plans and checks each new record as ``add_messages``
    does, and appends its block to the columns (as ``MemoryStore`` appends its blocks).
    Embeddings are encoded when a call first needs them (``embeddings``).
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.planner = Planner(counter)
        self.records: list[Any] = []
        self.columns = BlockColumns(DEFAULT_WIDTH)
        self.units = ChatUnits()
        self._digests: list[BlockDigest | None] = []
        self._lines = LineIndex()
        self.line_counts = LineCounts(counter)  # the token counts of its value lines (``value_table``)
        self._state: _State | None = None

    def matches(self, records: list[Any]) -> bool:
        """True if ``records`` begin with this history's records (by value)."""
        k = len(self.records)
        return len(records) >= k and records[:k] == self.records

    def extend(self, records: list[Any]) -> None:
        """Plan and append the records after the ones already here."""
        columns = self.columns
        for k in range(len(self.records), len(records)):
            record, where = records[k], f"message {k}"
            kwargs = self.planner.plan(record, where)
            induce = kwargs.pop("induce")
            try:
                block = checked_block(seq=k, known=columns.slot_of, counter=self.counter, **kwargs)
            except (TypeError, ValueError) as exc:
                raise SessionError(str(exc), where) from None
            self.records.append(_snapshot(record))
            if induce:  # as MemoryStore.add(..., induce=True) would
                columns.induce(block)
            columns.append(block, None)
            self.units.add(block)

    def blocks(self) -> list[Block]:
        """Every block, oldest first (the columns' own: never change them)."""
        return list(self.columns.blocks.values())

    def forms(self, n: int, lines: bool) -> tuple[list[BlockDigest | None], IndexedLines | None]:
        """The digest of each of the first ``n`` blocks (``digest_blocks.block_digest``) and, with
        ``lines``, their value lines (``value_table.value_lines``, indexed: ``line_index``), each built once.

        A block's digest and lines are built one after the other, so its body is rendered
        once (``digest.digest_lines`` remembers the most recent ones).
        """
        blocks = self.columns.blocks
        for slot in range(min(len(self._digests), len(self._lines) if lines else n), n):
            if slot == len(self._digests):
                self._digests.append(block_digest(blocks[slot], self.counter))
            if lines and slot == len(self._lines):
                self._lines.append(value_lines(blocks[slot]))
        return self._digests[:n], self._lines.prefix(n) if lines else None

    def embeddings(self, rows: CachedEncoder) -> np.ndarray:
        """The (n, d) rows of every block, encoding only blocks added since the last call."""
        columns = self.columns
        done = 0 if columns.emb is None else columns.emb.n
        if done < columns.total:
            texts = [columns.blocks[slot].text for slot in range(done, columns.total)]
            new = in_width(encoded(rows.encode, texts, "encoder(text)", columns.dimension), DEFAULT_WIDTH)
            for row in new:
                columns.add_embedding(row)
        return columns.embeddings() if columns.emb is not None else np.empty((0, 1))

    def state(self) -> _State:
        """The ``_State`` of all blocks (rebuilt only when blocks were added)."""
        n = self.columns.total
        if self._state is None or self._state.n != n:
            slots = np.arange(n, dtype=np.int64)
            index = self.columns.active_index(slots)
            graph = self.columns.active_graph(slots)
            turn = self.units.turn_start
            query = self.columns.blocks[turn].text if turn is not None else None
            self._state = _State(n, graph, index, self.units.ages(), self._root_slots(self.units.live_roots()), query)
        return self._state

    def roots(self, live: Sequence[int]) -> np.ndarray:
        """The live roots with the messages at positions ``live`` added (``chat.live_roots``)."""
        if isinstance(live, (str, bytes)) or not isinstance(live, Sequence):
            raise DsgcTypeError(f"live must be a sequence of message positions, got {type(live).__name__}")
        n = self.columns.total
        for k in live:
            if not is_integer_scalar(k) or not 0 <= int(k) < n:
                raise DsgcValueError(f"live must hold message positions in [0, {n}), got {k!r}")
        if not live:
            return self.state().roots
        return self._root_slots(self.units.live_roots([self.columns.ids[int(k)] for k in live]))

    def _root_slots(self, ids: list[str]) -> np.ndarray:
        return np.array(sorted(self.columns.slot_of[i] for i in ids), dtype=np.int64)


def _snapshot(record: Any) -> Any:
    """A copy of a valid record (its dicts and lists copied, like decoded JSON), to compare later calls with."""
    return copied_json(record)
