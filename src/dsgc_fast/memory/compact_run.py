"""The compaction run of a ``MemoryStore``: one decision (``compaction.decide``) over its whole history, and its transaction.

The store compacts by the same function ``select`` applies to a history it does not own, over
every block that is not deleted, active or archived: so a block still used is never absent from
what is sent, and ``recall`` is an optimization, not a semantic.  ``compact`` and
``compact_turn`` gather the arrays of those blocks from the store's columns
(``columns.BlockColumns``), decide, build the report and write the outcome in one archive
transaction *before* the columns change: archived blocks the decision keeps return to the
active set, evicted active blocks move to the archive with their reasons (an archived block
evicted again keeps the compaction and reason that archived it), cut and digested blocks are
rewritten, a binding table becomes a new active block.  The archive stays the record.

Cost: O(blocks not deleted + their links) per compaction, vectorized (one gather and one kernel
per array) beside ``retain`` itself.  Archived blocks are read from the archive only when needed
(``HistoryBlocks``): those the decision keeps, tool results among the roots a cut reads, and
those an explanation shows; their digests are kept by slot (``BlockDigests``), so a digest is
built once per block, and value lines and digests are looked at for new and held slots only.
An agent turn with the value table (``tools/agent_turn.py``, 2 CPUs shared) takes 4.8 / 6.4 /
13.3 ms at about 290 / 1,340 / 10,330 archived blocks, against 1.8-2.0 ms before the
whole-history decision (docs/performance.md, "The agent turn").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dsgc_ref.contract import (
    BindingTable,
    DsgcTypeError,
    DsgcValueError,
    Params,
    ReferentEvictionError,
    is_integer_scalar,
    listing,
)

from ..pins import closure
from .block import Block, id_list
from .chat import with_tool_units
from .columns import query_embedding
from .compaction import REASON_LABELS, BlockTexts, cut_block, decide, table_block, tool_messages
from .core import StoreCore
from .digest_blocks import BlockDigest, digested_block
from .explain import BindingTableBlock, BlockRoles, CompactionReport, build_report
from .value_table import table_block as value_table_block


@dataclasses.dataclass(frozen=True)
class Options:
    """The knobs of one compaction besides the query, the budget and the roots (as ``MemoryStore.compact`` takes them).

    ``params``: the scoring knobs (as in ``retain``); ``mode``: ``"exact"`` or ``"fast"``;
    ``on_over_budget``: what happens when even the roots and the bindings they need exceed the
    budget (``compaction``): raise ``ReferentEvictionError`` and change nothing, keep the roots
    alone, or cut the largest tool results among them (a cut block keeps its cut text, message
    and cost; its original content and cost stay in ``meta["truncated"]``); ``digests``: with
    the agent policy a tool result may stay as its digest (its whole in ``meta["digested"]``,
    ``recall`` makes it whole again); ``values``: with ``digests``, the values of the blocks
    left out go in a value table (``value_table``; sent with the active blocks).
    """

    params: Params
    query_weights: Any = None
    mode: str = "exact"
    on_over_budget: str = "raise"
    digests: bool = True
    values: bool = True

    @classmethod
    def of(
        cls, default: Params, params: Params | None, overrides: Mapping[str, Any], query_weights: Any, mode: str,
        on_over_budget: str, digests: bool, values: bool = True,
    ) -> Options:  # fmt: skip
        """The options of a call: ``params`` (None: the store's ``default``) with the keyword ``overrides``, the rest as given."""
        p = Params.of(default if params is None else params, **overrides)
        return cls(p, query_weights, mode, on_over_budget, digests, values)


def compact(
    core: StoreCore, query: Any, budget: int, live: Iterable[str], ages: Mapping[str, int] | None, options: Options
) -> CompactionReport:
    """``MemoryStore.compact``: the pinned blocks and ``live`` are the roots, ``ages`` the working ages by id."""
    query_emb, query_text = query_embedding(query, core.encode)
    slots = core.columns.live_slots()
    roots = live_roots(core, slots, live)
    agent = options.params.policy == "agent"
    working = local_ages(core, slots, ages) if ages is not None and agent else None
    return run(core, query_emb, query_text, budget, slots, roots, working, options)


def compact_turn(
    core: StoreCore, budget: int, query: Any, live: Iterable[str], options: Options
) -> CompactionReport | None:
    """``messages.compact_messages`` on the store's chat facts (None, changing nothing, when they are ambiguous).

    The live roots are the pinned blocks, the newest user turn and ``live``, each with its
    whole tool-call unit; the tool blocks before the newest user message get their working
    ages; the query defaults to that user message's text (``messages.ChatUnits`` states the
    rules), all over the blocks not deleted.
    """
    columns = core.columns
    if columns.chat.ambiguous:
        return None
    slots = columns.live_slots()
    ages, turn = columns.chat.ages(slots, ~columns.deleted.view())
    if query is None:
        if turn is None:
            raise DsgcValueError("query is required: the store has no user message to use as the query")
        query = core.block(int(slots[turn])).text
    query_emb, query_text = query_embedding(query, core.encode)
    roots = turn_roots(core, slots, turn, live)
    working = ages if options.params.policy == "agent" else None
    return run(core, query_emb, query_text, budget, slots, roots, working, options)


def turn_roots(core: StoreCore, slots: np.ndarray, turn: int | None, live: Iterable[str]) -> np.ndarray:
    """Positions in ``slots`` of the pinned blocks, the turn from position ``turn`` and ``live``, with their tool-call units."""
    columns = core.columns
    named = set(slots[live_roots(core, slots, live)].tolist())
    named.update(slots[turn:].tolist() if turn is not None else ())
    chosen = with_tool_units(named, columns.uses.__getitem__, columns.newest_binder.get)
    return np.searchsorted(slots, np.array(sorted(chosen), dtype=np.int64))


def live_roots(core: StoreCore, slots: np.ndarray, live: Iterable[str]) -> np.ndarray:
    """The positions in ``slots`` (the blocks not deleted) of the pinned blocks and of the ids in ``live``, ascending."""

    chosen = set(np.flatnonzero(core.columns.pinned.view()[slots]).tolist())
    for block_id in id_list("live", live):
        slot = core.slot(block_id)
        if core.columns.deleted.view()[slot]:
            raise DsgcValueError(f"live root {block_id!r} is deleted")
        chosen.add(int(np.searchsorted(slots, slot)))
    return np.array(sorted(chosen), dtype=np.int64)


def local_ages(core: StoreCore, slots: np.ndarray, ages: Mapping[str, int]) -> np.ndarray:
    """Working ages by position in ``slots`` (blocks not named get 0)."""
    if not isinstance(ages, Mapping):
        raise DsgcTypeError(f"ages must be a mapping block id -> working age, got {type(ages).__name__}")
    out = np.zeros(slots.shape[0], dtype=np.int64)
    for block_id, age in ages.items():
        slot = core.slot(block_id)
        if core.columns.deleted.view()[slot]:
            raise DsgcValueError(f"ages names block {block_id!r}, which is deleted")
        if not is_integer_scalar(age) or not 0 <= int(age) <= slots.shape[0]:
            raise DsgcValueError(f"ages[{block_id!r}] must be an integer in [0, {slots.shape[0]}], got {age!r}")
        out[int(np.searchsorted(slots, slot))] = int(age)
    return out


def run(
    core: StoreCore, query_emb: np.ndarray, query_text: str, budget: int, slots: np.ndarray, roots: np.ndarray,
    working: np.ndarray | None, options: Options,
) -> CompactionReport:  # fmt: skip
    """The compaction of the blocks ``slots`` (every block not deleted) with the live ``roots`` and working ages by position."""
    columns, archive, p = core.columns, core.archive, options.params
    graph = columns.active_graph(slots, ~columns.deleted.view())
    index = columns.active_index(slots)
    embs = columns.rows_of(slots) if columns.emb is not None else np.empty((0, query_emb.shape[-1]))
    held = dict(columns.blocks)  # this compaction's own view: later adds and cuts replace, never edit
    blocks = HistoryBlocks(held, slots, core.read_archived)
    for name in ("digests", "values"):
        if not isinstance(getattr(options, name), bool):
            raise DsgcTypeError(f"{name} must be a bool, got {type(getattr(options, name)).__name__}")
    digesting = options.digests and p.policy == "agent"
    digest_of = digests_of(core, slots, held, blocks) if digesting else None
    ids = columns.names_of(slots)
    values = (core.value_lines.of(slots, blocks), ids, core.value_lines.count) if digesting and options.values else None
    try:
        outcome = decide(
            query_emb, embs, columns.cost.view()[slots], budget, params=p, graph=graph, index=index, roots=roots,
            counter=core.counter, ages=working, query_weights=options.query_weights, mode=options.mode,
            on_over_budget=options.on_over_budget, digests=digest_of, values=values,
            tool_results=lambda found: tool_messages([blocks[s] for s in slots.tolist()], found),
        )  # fmt: skip
    except ReferentEvictionError as exc:
        pinned_ids = columns.names_of(slots[np.flatnonzero(closure(index, roots))])
        root_ids = columns.names_of(slots[roots])
        raise ReferentEvictionError(
            f"{exc}; pinned block ids {listing(pinned_ids)} (live roots {listing(root_ids)})",
            pinned=exc.pinned, roots=exc.roots, pinned_cost=exc.pinned_cost, root_cost=exc.root_cost,
            table_cost=exc.table_cost, budget=exc.budget, pinned_ids=pinned_ids, root_ids=root_ids,
        ) from None  # fmt: skip
    result = outcome.result
    table = binding_table_block(core, result.binding_table, ids)
    value_table = value_table_block(outcome.value_table, ids, columns.total, columns.slot_of)
    cut = {int(slots[i]): cut_block(blocks[int(slots[i])], t) for i, t in outcome.truncated.items()}
    cut.update((int(slots[i]), digested_block(blocks[int(slots[i])], d)) for i, d in outcome.digested.items())
    report = build_report(
        ids,
        result,
        costs=outcome.costs,
        graph=graph,
        referents=index,
        roots=roots,
        lambda_pi=p.effective_lambda,
        query=query_text,
        texts=BlockTexts(ids, blocks, columns.slot_of, cut),
        table_block=table,
        over_budget=outcome.over_budget,
        truncated={ids[i]: t for i, t in outcome.truncated.items()},
        roles=BlockRoles(ids, lambda block_id: blocks[columns.slot_of[block_id]]),
        digested={ids[i]: d.detached() for i, d in outcome.digested.items()},
        value_table=value_table,
    )
    active = columns.active.view()
    gone = result.evicted[active[slots[result.evicted]]]  # evicted now; an archived block evicted again stays as it is
    evicted = dict(zip(slots[gone].tolist(), map(REASON_LABELS.__getitem__, result.reasons[gone].tolist())))
    kept = slots[result.mask]
    back = kept[~active[kept]].tolist()  # archived blocks kept: back to the active set
    restored: list[Block] = []
    with archive.transaction():
        number = archive.log_compaction(
            query_text, result.budget, result.policy, len(report.kept), len(report.evicted), int(result.used)
        )
        if back:
            restored = archive.restore_blocks(back)
        for block in cut.values():
            archive.update_active(block)
        archive.archive_blocks(evicted, number)
        if table is not None:
            archive.insert_active([(table.block, None)])
        core.write_value_table(value_table)
    report.compaction = number
    core.value_table = value_table  # sent with the active blocks until the next compaction (recorded above)
    columns.mark_active(restored)
    for block in cut.values():
        columns.replace(block)
    columns.drop_active(evicted)
    columns.set_active_slots(kept)
    if table is not None:
        columns.append(table.block, table.block.embedding, active=True)
    return report


def digests_of(
    core: StoreCore, slots: np.ndarray, held: Mapping[int, Block], blocks: HistoryBlocks
) -> Sequence[BlockDigest | None]:
    """The digest (or None) of each block at ``slots``: only tool results have one, so only they are looked at."""
    tools = core.columns.chat.tool_results(slots)
    return core.digests.of(slots, tools, held, blocks.__getitem__, core.counter)


class HistoryBlocks(Mapping[int, Block]):
    """Slot -> block of one compaction over ``slots``: the blocks held then (``held``, the compaction's copy)
    and the archived ones, read with ``read`` when first asked and remembered.

    The decision reads only the archived blocks it needs (tool results among the roots, digests
    when asked); the report reads others when an explanation shows their text or role
    (``read`` holds the store's lock, and a block deleted or a store closed since reads as
    missing: ``KeyError``).
    """

    def __init__(self, held: Mapping[int, Block], slots: np.ndarray, read: Callable[[int], Block]) -> None:
        self._held, self._slots, self._read = held, slots, read
        self._read_back: dict[int, Block] = {}

    def __getitem__(self, slot: int) -> Block:
        block = self._held.get(slot) or self._read_back.get(slot)
        if block is None:
            if slot not in self:
                raise KeyError(slot)
            block = self._read_back[slot] = self._read(slot)
        return block

    def __contains__(self, slot: object) -> bool:
        if not isinstance(slot, (int, np.integer)):
            return False
        k = int(np.searchsorted(self._slots, slot))
        return k < self._slots.shape[0] and int(self._slots[k]) == slot

    def __iter__(self) -> Iterator[int]:
        return iter(self._slots.tolist())

    def __len__(self) -> int:
        return int(self._slots.shape[0])


def binding_table_block(core: StoreCore, table: BindingTable | None, ids: list[str]) -> BindingTableBlock | None:
    """The escalation's binding table as a new active block (``compaction.table_block``), embedded."""
    made = table_block(table, ids, core.columns.total, core.columns.slot_of, core.counter)
    if made is None:
        return None
    embedding = core.stored(core.encode([made.block.text], "encoder(binding table)")[0])
    return BindingTableBlock(dataclasses.replace(made.block, embedding=embedding), made.entries)
