"""OpenAI-style chat messages <-> ``MemoryStore`` blocks, and back to a valid message list.

Each message (``role``, ``content``, ``tool_calls``, ``tool_call_id``; a dict or a JSONL
line) becomes one block whose text is what the model reads and whose ``meta`` keeps the
message itself.  How a record becomes ``MemoryStore.add`` arguments (tool-call units,
annotations, plain blocks, which records are induced) is ``dsgc_fast.memory.records``;
the chat rules (units, the current turn, live roots, working ages) are
``dsgc_fast.memory.chat``.  This module applies both to a store, through its public API.

Tool-call units.  An assistant message with tool calls and its results are in each other's
referent closure, so closure-aware selection keeps or evicts them as one unit, ``recall``
brings them back together (``MemoryStore.add`` recalls the archived binders of the
referents a new block uses) and ``remove_messages`` deletes them together.

Live roots.  System (and developer) messages are added pinned; ``compact_messages`` adds the
newest user turn (the newest user message and the tool calls and results after it) as live
roots and, unless given a query, uses that user message's text as the query.

Working ages.  For the agent policy (the store's default), ``compact_messages`` gives every
tool call and tool result before the newest user message its working age
(``chat.working_ages``).  Plain messages get no working-set support, so a conversation
without tools is ranked exactly as by the paper's rule.

Induction.  By default (``induce=True``) every message and plain block that declares none of
``depends_on``, ``binds``, ``uses`` is added with ``MemoryStore.add(..., induce=True)``: the
store induces edges for it (``dsgc_fast.induction``: tool-call arguments and tool results read
as JSON, a step linked to the result and the user message whose values it repeats, "that
order" linked to the block naming the order id it means), support and never a pin.  A record
that declares any of the three keeps exactly what it declares (and is not read by the
inducer).  ``induce=False`` adds everything as declared.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from .. import _validate
from .block import Block
from .chat import ChatUnits, current_turn, live_roots, with_tool_units, working_ages
from .explain import CompactionReport
from .records import (
    ANNOTATION_KEY,
    ROLES,
    ROOT_ROLES,
    Planner,
    SessionError,
    StoredBlocks,
    call_referent,
    chat_messages,
    check_messages,
    message_text,
    read_jsonl,
    result_referent,
    write_jsonl,
)
from .store import MemoryStore, token_counter_of
from .token_counts import Tokenizer

__all__ = [
    "ANNOTATION_KEY",
    "ROLES",
    "ROOT_ROLES",
    "ChatUnits",
    "SessionError",
    "add_messages",
    "add_records",
    "call_referent",
    "chat_messages",
    "check_messages",
    "compact_messages",
    "current_turn",
    "live_roots",
    "load_session",
    "message_text",
    "plan_records",
    "read_jsonl",
    "remove_messages",
    "result_referent",
    "stored_blocks",
    "to_messages",
    "tool_unit",
    "working_ages",
    "write_jsonl",
]


def stored_blocks(store: MemoryStore) -> StoredBlocks:
    """The public view of ``store``'s blocks a ``records.Planner`` plans after.

    ``has`` and ``binder_of`` are the store's own methods; the caller holds the store's lock
    (``MemoryStore.held``) while the planner reads them, so the plans match the store they
    are added to.
    """
    return StoredBlocks(total=store.total, has=store.has, binder_of=store.binder_of, newest_first=_newest_first(store))


def _newest_first(store: MemoryStore) -> Iterator[Block]:
    """The store's blocks, active and archived, newest first, read a few at a time as the walk goes on.

    The blocks are the store's own (this module only reads them).
    """
    end, count = store.total, 4
    while end > 0:
        blocks, end = store.older_blocks(end, count)
        yield from blocks
        count = min(4 * count, 1024)


def plan_records(
    store: MemoryStore, records: Sequence[tuple[str | None, Any]], *, complete: bool = False, induce: bool = True
) -> list[dict[str, Any]]:
    """The ``MemoryStore.add`` arguments of ``(where, record)`` pairs after ``store``'s blocks, every record checked.

    Checks ids, dependencies, tool-call pairing and roles; with ``complete``, also that no
    tool call is left without its result.  Errors are ``SessionError`` naming the record's
    ``where``.  ``induce``: records that declare no structure are added with induction
    (module docstring).  Nothing is added.  Each plan also holds ``own_meta``, for
    ``add_records``: whether its ``meta`` is a fresh copy the store may keep uncopied.
    """
    if not isinstance(induce, bool):
        raise DsgcTypeError(f"induce must be a bool, got {type(induce).__name__}")
    planner = Planner(store.tokenizer, stored_blocks(store), induce)
    plans = [planner.plan(record, where) for where, record in records]
    if complete:
        planner.check_answered()
    return plans


def add_records(
    store: MemoryStore,
    records: Sequence[tuple[str | None, Any]],
    *,
    complete: bool = False,
    embeddings: Any = None,
    induce: bool = True,
) -> list[str]:
    """Append ``(where, record)`` pairs (messages or blocks); returns their block ids.

    ``embeddings``: an (n, d) array with one precomputed vector per record (default: the
    store's encoder embeds each text).

    The whole batch is validated first (``plan_records``) and added in one
    ``MemoryStore.atomic`` group, so an invalid record adds nothing, not even the valid
    records before it; errors are ``SessionError`` naming the record's ``where``.  The
    store's lock is held from planning to adding, so batches added from several threads
    (or ``AsyncMemoryStore`` coroutines) at once each plan after the previous one.
    A tool result whose call was archived brings the call's unit back (``MemoryStore.add``
    recalls the archived binders of the referents a new block uses).  ``induce``: induce
    the structure of the records that declare none (module docstring).
    """
    with store.held():  # no other thread may add between the plans (their ids, the open calls) and the adds
        return _add_planned(store, records, complete, embeddings, induce)


def _add_planned(
    store: MemoryStore, records: Sequence[tuple[str | None, Any]], complete: bool, embeddings: Any, induce: bool
) -> list[str]:
    """``add_records``'s work, holding the store's lock."""
    plans = list(zip((where for where, _ in records), plan_records(store, records, complete=complete, induce=induce)))
    if embeddings is not None:
        vectors = _validate.numeric_array("embeddings", embeddings)
        if vectors.ndim != 2 or vectors.shape[0] != len(plans):
            raise DsgcValueError(
                f"embeddings must be an ({len(plans)}, d) array, one row per record, got shape {vectors.shape}"
            )
        for (_, kwargs), vector in zip(plans, vectors):
            kwargs["embedding"] = vector
    unembedded = [(where, kwargs) for where, kwargs in plans if kwargs.get("embedding") is None]
    if unembedded:  # one encoder call for the batch
        try:
            rows = store.encode([kwargs["text"] for _, kwargs in unembedded], "encoder(text)")
        except (TypeError, ValueError) as exc:
            raise SessionError(str(exc), unembedded[0][0]) from None
        try:  # the rows in the store's width in one conversion
            rows = store.in_store_width(rows)
        except ValueError:
            pass  # a row does not fit the width: each record's own conversion refuses it, in record order
        for (_, kwargs), row in zip(unembedded, rows):
            kwargs["encoded"] = row
    return store.add_many([kwargs for _, kwargs in plans], lambda k, exc: SessionError(str(exc), plans[k][0]))


def add_messages(
    store: MemoryStore, messages: Iterable[Mapping[str, Any]], *, embeddings: Any = None, induce: bool = True
) -> list[str]:
    """Append chat messages (dicts) to ``store``; returns their block ids (see the module doc).

    ``embeddings``: an optional (n, d) array of precomputed vectors, one per message;
    ``induce``: induce the structure of the messages that declare none (module docstring).
    """
    records = [(f"message {k}", m) for k, m in enumerate(messages)]
    return add_records(store, records, embeddings=embeddings, induce=induce)


def remove_messages(store: MemoryStore, ids: str | Iterable[str]) -> list[str]:
    """Delete message blocks (``MemoryStore.delete``) with the rest of their tool-call units.

    A tool call and its results leave together, so the messages left stay a valid chat
    list.  Returns every deleted id, oldest first.
    """
    with store.held():  # the units read are the ones deleted
        unit = {m for block_id in ([ids] if isinstance(ids, str) else ids) for m in tool_unit(store, block_id)}
        return store.delete(sorted(unit)) if unit else []


def load_session(
    store: MemoryStore, source: str | os.PathLike | IO[str], *, complete: bool = False, induce: bool = True
) -> list[str]:
    """Append every record of a JSONL session; errors name the line number.

    ``complete``: the session is whole, so a tool call without a result is an error (at the
    line of the call), as a chat API refuses it; ``induce`` as in ``add_messages``.
    """
    records = [(f"line {number}", record) for number, record in read_jsonl(source)]
    return add_records(store, records, complete=complete, induce=induce)


# -- compaction ---------------------------------------------------------------------------
def tool_unit(store: MemoryStore, block_id: str) -> list[str]:
    """The ids of the tool-call unit holding a block (just the block if it has none)."""
    unit = with_tool_units([block_id], lambda i: store.get(i).uses, store.binder_of)
    return sorted(unit, key=lambda i: store.get(i).seq)


def compact_messages(
    store: MemoryStore,
    budget: int,
    *,
    query: Any = None,
    live: Iterable[str] = (),
    tokenizer: Tokenizer = None,
    on_over_budget: str = "raise",
    **options: Any,
) -> CompactionReport:
    """``store.compact`` with the newest user turn as live roots and its user message as the query.

    System messages are pinned when added, so they are live roots too; ``live`` adds more
    (``live_roots``: each root with its whole tool-call unit).  The tool blocks before the
    newest user message get their ``working_ages`` (read by the agent policy).  ``budget``
    is in the store's tokens (``MemoryStore(tokenizer=...)``: costs are counted as blocks
    are added); a ``tokenizer`` given here must name the same tokenizer, else ``ValueError``.
    ``on_over_budget`` and ``options`` go to ``MemoryStore.compact`` (``params``,
    ``policy``, ``lambda_pi``, ...).
    """
    if tokenizer is not None and token_counter_of(tokenizer).name != store.tokenizer.name:
        raise DsgcValueError(
            f"tokenizer {token_counter_of(tokenizer).name!r} is not the store's ({store.tokenizer.name!r}): "
            "block costs are counted when blocks are added, so choose the tokenizer with MemoryStore(tokenizer=...)"
        )
    with store.held():  # the blocks the rules read are the ones compacted
        return _compact_turn(store, budget, query, live, on_over_budget, options)


def _compact_turn(
    store: MemoryStore, budget: int, query: Any, live: Iterable[str], on_over_budget: str, options: dict[str, Any]
) -> CompactionReport:
    """``compact_messages``'s work, holding the store's lock."""
    report = store.compact_turn(budget, query=query, live=live, on_over_budget=on_over_budget, **options)
    if report is not None:
        return report
    units = ChatUnits(store.history())  # the rules themselves, for blocks the store's chat facts cannot follow
    if query is None:
        if units.turn_start is None:
            raise DsgcValueError("query is required: the store has no user message to use as the query")
        query = units.blocks[units.turn_start].text
    ages = {units.ids[k]: int(age) for k, age in enumerate(units.ages().tolist()) if age}
    return store.compact(
        query, budget, live=units.live_roots(live), ages=ages, on_over_budget=on_over_budget, **options
    )


# -- blocks -> messages -------------------------------------------------------------------
def to_messages(store: MemoryStore) -> list[dict[str, Any]]:
    """The active blocks as a valid chat message list, oldest first (``chat_messages``)."""
    return chat_messages(store.active_blocks(), copy=True)
