"""OpenAI-style chat messages <-> ``MemoryStore`` blocks, and back to a valid message list.

Each message (``role``, ``content``, ``tool_calls``, ``tool_call_id``; a dict or a JSONL
line) becomes one block whose text is what the model reads (the content, plus
``name(arguments)`` for each tool call) and whose ``meta`` keeps the message itself.

Tool-call units.  Providers reject a tool result without the assistant message that called
it, and an assistant tool call without its results.  So an assistant message with tool
calls binds the referent ``tool_call:<id>`` and uses ``tool_result:<id>`` for each call, and
the tool result binds ``tool_result:<id>`` and uses ``tool_call:<id>`` (and depends on the
call's block).  The two are in each other's referent closure, so closure-aware selection
keeps or evicts the assistant message and all its results as one unit, and ``recall`` brings
them back together.

Live roots.  System (and developer) messages are added pinned; ``compact_messages`` adds the
newest user turn (the newest user message and the tool calls and results after it) as live
roots and, unless given a query, uses that user message's text as the query.

Working ages.  For the agent policy (the store's default), ``compact_messages`` gives every
tool call and tool result before the newest user message its working age: the number of
units back from that message, where a unit is an assistant message with its tool results,
or any other single message (``working_ages``).  The newest tool unit before the question is
age 1; the agent policy lifts it by rho = working_weight / N (that many mean relevances)
and each older one by a further factor ``recency_decay``.  Plain messages get no working-set support, so a conversation without
tools is ranked exactly as by the paper's rule.

Annotations.  A message may carry a ``"dsgc"`` object with ``id``, ``depends_on``, ``binds``,
``uses``, ``pinned`` and ``cost`` (the ``MemoryStore.add`` arguments) and ``meta`` (more data
kept in the block's meta beside ``role`` and ``message``); it is stripped from the stored
message.  A JSONL line without ``role`` is a plain block: ``{"text": ..., "id": ...,
"depends_on": [...], "binds": {...}, "uses": [...], "pinned": ..., "cost": ..., "meta": {...}}``.

Induction.  By default (``induce=True``) every message and plain block that declares none of
``depends_on``, ``binds``, ``uses`` is added with ``MemoryStore.add(..., induce=True)``: the
store induces edges for it (``dsgc_fast.induction``: tool-call arguments and tool results read
as JSON, a step linked to the result and the user message whose values it repeats, "that
order" linked to the block naming the order id it means), support and never a pin.  A record
that declares any of the three keeps exactly what it declares (and is not read by the
inducer).  ``induce=False`` adds everything as declared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from .. import _validate
from ._nesting import NotCanonical, canonical_copy, check_nesting
from .archive import Block, copied_json
from .chat import CALL_PREFIX, RESULT_PREFIX
from .compaction import BINDING_TABLE_KIND
from .explain import CompactionReport
from .store import MemoryStore, token_counter_of
from .token_counts import TokenCounter, Tokenizer, block_tokens

ANNOTATION_KEY = "dsgc"
ROOT_ROLES = ("system", "developer")
#: the roles a chat message may have
ROLES = (*ROOT_ROLES, "user", "assistant", "tool")
_ANNOTATION_FIELDS = ("id", "depends_on", "binds", "uses", "pinned", "cost")
#: the annotation fields that declare structure: a record giving any of them is not induced
_STRUCTURE_FIELDS = ("depends_on", "binds", "uses")
_BLOCK_FIELDS = ("text", "meta") + _ANNOTATION_FIELDS
_MESSAGE_ANNOTATION_FIELDS = _ANNOTATION_FIELDS + ("meta",)


_CALL, _RESULT = CALL_PREFIX, RESULT_PREFIX
#: meta keys of a chat-message block (a plain block may not use them)
_MESSAGE_META = ("role", "message")


def call_referent(key: str) -> str:
    """The referent an assistant tool call binds (its result uses it), by the call's key.

    A call's key is its id, or ``id#n`` (n = 2, 3, ...) for a call id made before in the
    history (``_Planner.call_key``).
    """
    return _CALL + key


def result_referent(key: str) -> str:
    """The referent a tool result binds (the calling assistant message uses it), by the call's key."""
    return _RESULT + key


class SessionError(DsgcValueError):
    """An invalid message or block record; ``where`` names its line (or message index)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        super().__init__(message if where is None else f"{where}: {message}")


# -- reading and writing JSONL ----------------------------------------------------------
#: the whitespace JSON allows between tokens; a line of only these is skipped as blank
_JSON_WHITESPACE = " \t\r\n"


def read_jsonl(source: str | os.PathLike | IO[str] | IO[bytes]) -> list[tuple[int, Any]]:
    """``(line number, parsed value)`` for every non-blank line of a JSONL file or stream.

    Files are read as bytes and decoded line by line, so invalid UTF-8 is reported with
    its line number, like invalid JSON; so is JSON nested too deeply to parse, and an
    integer longer than Python converts (``sys.get_int_max_str_digits``, 4,300 digits by
    default).
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            return read_jsonl(handle)
    out = []
    for number, line in enumerate(source, start=1):
        where = f"line {number}"
        if isinstance(line, bytes):
            try:
                raw = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SessionError(f"invalid UTF-8: {exc.reason} at byte {exc.start}", where) from None
        else:
            raw = str(line)
        if not raw.strip(_JSON_WHITESPACE):
            continue
        try:
            out.append((number, json.loads(raw)))
        except json.JSONDecodeError as exc:
            raise SessionError(f"invalid JSON: {exc.msg} (column {exc.colno})", where) from None
        except RecursionError:
            raise SessionError("invalid JSON: nested too deeply", where) from None
        except ValueError as exc:  # what the parser refuses beyond JSON's syntax: an integer of too many digits
            raise SessionError(f"invalid JSON: {exc}", where) from None
    return out


def write_jsonl(records: Iterable[Mapping[str, Any]], target: str | os.PathLike | IO[str]) -> None:
    """Write one JSON object per line."""
    if isinstance(target, (str, os.PathLike)):
        with open(target, "w", encoding="utf-8") as handle:
            write_jsonl(records, handle)
        return
    for record in records:
        target.write(json.dumps(record, ensure_ascii=False) + "\n")


# -- messages -> blocks -----------------------------------------------------------------
def message_text(message: Mapping[str, Any]) -> str:
    """The text a model reads from a message: its content, then ``name(arguments)`` per tool call."""
    content = message.get("content")
    if content is None:
        parts = []
    elif isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    else:
        raise DsgcTypeError(f"content must be a string, null or a list of content parts, got {type(content).__name__}")
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    return "\n".join(parts)


class _Planner:
    """Validates records in order, against the store's blocks if any, and turns each into ``add`` arguments.

    Sequence rule (what ``check_messages`` enforces on the output): while an assistant
    message's tool calls wait for results, only tool messages answering them may come next.
    A message's cost is ``block_tokens`` of it under ``counter`` (unless annotated).  Without
    a store the records are a whole history of their own (``dsgc_fast.memory.history``).
    """

    def __init__(self, counter: TokenCounter, store: MemoryStore | None = None, induce: bool = True) -> None:
        self.counter = counter
        self.store = store
        self.induce = induce
        self.first_seen: dict[str, str | None] = {}
        self.called: set[str] = set()  # every call id of these records
        self.bound: set[str] = set()  # every tool-call referent these records bind
        self.suffix: dict[str, int] = {}  # call id -> the last ``#n`` its referents were given
        self.caller, self.open, self.answered = _open_calls(store) if store is not None else (None, {}, set())
        self.opened_at: str | None = None
        self.next_number = store.total if store is not None else 0

    @classmethod
    def for_store(cls, store: MemoryStore, induce: bool = True) -> _Planner:
        return cls(store.tokenizer, store, induce)

    # ``known`` and ``stored_binder`` read the store's maps without its lock, as ``has`` and
    # ``binder_of`` would under it: a plan is checked again when it is added, holding the lock
    def known(self, block_id: str) -> bool:
        return block_id in self.first_seen or (self.store is not None and block_id in self.store.columns.slot_of)

    def stored_binder(self, referent: str) -> str | None:
        store = self.store
        if store is None:
            return None
        slot = store.columns.newest_binder.get(referent)
        return None if slot is None else store.columns.ids[slot]

    def called_before(self, call_id: str) -> bool:
        """Whether a tool call with this id was made before (in these records or the store)."""
        return call_id in self.called or self.stored_binder(call_referent(call_id)) is not None

    def call_key(self, call_id: str) -> str:
        """The key of a new call's referents: its id, or ``id#n`` (n = 2, 3, ...) when that is bound already.

        A chat API needs a call id unique only within its assistant message and the results
        after it, so a later turn may reuse it (``call_0`` every turn); the referents of each
        call stay unique, so every result pairs with its own call.
        """
        key, n = call_id, self.suffix.get(call_id, 1)
        if n > 1:
            key = f"{call_id}#{n}"
        while call_referent(key) in self.bound or self.stored_binder(call_referent(key)) is not None:
            n += 1
            key = f"{call_id}#{n}"
        self.suffix[call_id] = n
        self.bound.add(call_referent(key))
        return key

    def check_answered(self) -> None:
        """Raise unless every tool call has its result: a chat request must answer each call."""
        if self.open:
            raise SessionError(f"tool call(s) {sorted(self.open)} have no result", self.opened_at)

    def fresh_id(self) -> str:
        while True:
            block_id = f"m{self.next_number}"
            self.next_number += 1
            if not self.known(block_id):
                return block_id

    def plan(self, record: Any, where: str | None) -> dict[str, Any]:
        if not isinstance(record, Mapping):
            raise SessionError("expected a JSON object (a chat message or a block)", where)
        if record.get("role") != "tool" and self.open:
            raise SessionError(
                f"tool call(s) {sorted(self.open)} still wait for their results: only tool messages may come next",
                where,
            )
        if "role" in record:
            kwargs = self.message(record, where)
        else:
            kwargs = self.block(record, where)
        block_id = kwargs["id"]
        if self.known(block_id):
            first = self.first_seen.get(block_id)
            raise SessionError(
                f"duplicate block id {block_id!r} (already {'on ' + first if first else 'in the store'})", where
            )
        for prerequisite in kwargs["depends_on"]:
            if not self.known(prerequisite):
                raise SessionError(f"unknown dependency id {prerequisite!r}", where)
        self.first_seen[block_id] = where
        return kwargs

    def induced(self, annotation: Mapping[str, Any]) -> bool:
        """Whether a record with these annotation fields gets induced ones (module docstring)."""
        return self.induce and set(annotation).isdisjoint(_STRUCTURE_FIELDS)

    def block(self, record: Mapping[str, Any], where: str | None) -> dict[str, Any]:
        _check_keys(record, _BLOCK_FIELDS, "block", where)
        if not isinstance(record.get("text"), str):
            raise SessionError("a block needs a string 'text' (or a chat message needs 'role')", where)
        meta = _own_meta(record, "a block's meta", where)
        kwargs = _annotation_kwargs(record, where)
        kwargs["id"] = kwargs.get("id") or self.fresh_id()
        kwargs.update(
            text=record["text"], meta=meta, pinned=bool(kwargs["pinned"]), induce=self.induced(record), own_meta=False
        )
        return kwargs

    def message(self, record: Mapping[str, Any], where: str | None) -> dict[str, Any]:
        role = record["role"]
        if role not in ROLES:
            raise SessionError(f"unknown role {role!r}; a chat message's role is one of {list(ROLES)}", where)
        annotation = record.get(ANNOTATION_KEY, {})
        if not isinstance(annotation, Mapping):
            raise SessionError(f"'{ANNOTATION_KEY}' must be an object", where)
        extra = None
        if annotation:
            _check_keys(annotation, _MESSAGE_ANNOTATION_FIELDS, f"'{ANNOTATION_KEY}' annotation", where)
            extra = _own_meta(annotation, f"the '{ANNOTATION_KEY}' annotation's meta", where)
        if type(record) is dict and ANNOTATION_KEY not in record:
            message, canonical = _json_copy(record, where)  # the copy leaves the caller's dict alone
        else:
            message, canonical = _json_copy({k: v for k, v in record.items() if k != ANNOTATION_KEY}, where)
        calls = _tool_calls(message, where)
        try:
            text = message_text(message)
        except TypeError as exc:
            raise SessionError(str(exc), where) from None
        kwargs = _annotation_kwargs(annotation, where)
        block_id = kwargs.get("id") or self.fresh_id()
        binds, uses, depends_on = dict(kwargs["binds"]), list(kwargs["uses"]), list(kwargs["depends_on"])
        if role != "tool":
            self.answered = set()  # a result may answer only the calls of the newest assistant message
        if calls:
            ids = [call_id for call_id, _ in calls]
            if len(set(ids)) < len(ids):
                raise SessionError(f"duplicate tool call id {_first_repeat(ids)!r} in one assistant message", where)
            self.caller, self.open, self.opened_at = block_id, {}, where
            for call_id, name in calls:
                key = self.call_key(call_id)
                self.called.add(call_id)
                self.open[call_id] = key
                binds[call_referent(key)] = name
                uses.append(result_referent(key))
        if role == "tool":
            answer_of = message.get("tool_call_id")
            if not isinstance(answer_of, str) or not answer_of:
                raise SessionError("a tool message needs a string 'tool_call_id'", where)
            answer_key = self.open.get(answer_of)
            if answer_key is None:
                if answer_of in self.answered:
                    raise SessionError(f"a second tool result for call {answer_of!r}", where)
                if not self.called_before(answer_of):
                    raise SessionError(f"tool result for call {answer_of!r} has no matching assistant tool call", where)
                raise SessionError(
                    f"tool result for call {answer_of!r} must follow its assistant message, with only tool results between",
                    where,
                )
            assert self.caller is not None  # an open call has its caller
            del self.open[answer_of]
            self.answered.add(answer_of)
            binds[result_referent(answer_key)] = " ".join(text.split(None, 8)[:8])  # the first eight words
            uses.append(call_referent(answer_key))
            depends_on.append(self.caller)
        if kwargs["cost"] is None:
            try:
                kwargs["cost"] = block_tokens(text, message, self.counter)
            except (TypeError, ValueError) as exc:
                raise SessionError(str(exc), where) from None
        kwargs.update(
            id=block_id,
            text=text,
            binds=binds,
            uses=uses,
            depends_on=depends_on,
            pinned=kwargs["pinned"] if kwargs["pinned"] is not None else role in ROOT_ROLES,
            meta={**(extra or {}), "role": role, "message": message},
            induce=self.induced(annotation),
            own_meta=canonical and not extra,  # the meta is this fresh dict over the message's copy alone
        )
        return kwargs


def _own_meta(record: Mapping[str, Any], what: str, where: str | None) -> Any:
    """A record's ``meta``, which may not use the keys that mark chat-message blocks."""
    meta = record.get("meta")
    if meta is not None and not isinstance(meta, Mapping):
        raise SessionError(f"{what} must be an object", where)
    if isinstance(meta, Mapping) and not set(meta).isdisjoint(_MESSAGE_META):
        raise SessionError(f"{what} may not use the keys {list(_MESSAGE_META)}: they mark chat messages", where)
    return meta


def _json_copy(message: dict[str, Any], where: str | None) -> tuple[dict[str, Any], bool]:
    """An independent copy of a message as the store keeps it: JSON, nested at most ``MAX_NESTING`` levels.

    And whether it is canonical JSON nested one level less (so a block's meta that holds it
    under a key is nested at most ``MAX_NESTING`` levels): then ``MemoryStore.add`` may keep
    that meta uncopied (``store.checked_block``'s ``own_meta``).
    """
    try:
        return canonical_copy([message])[0], True  # the list stands for the meta around the message
    except NotCanonical:
        pass  # the round trip below converts it or names what is wrong
    try:
        copied = json.loads(json.dumps(message, allow_nan=False))
        check_nesting("the message", copied)
    except RecursionError:
        raise SessionError("the message is nested too deeply", where) from None
    except (TypeError, ValueError) as exc:
        raise SessionError(
            str(exc) if isinstance(exc, ValueError) else f"the message is not JSON: {exc}", where
        ) from None
    return copied, False


def _open_calls(store: MemoryStore) -> tuple[str | None, dict[str, str], set[str]]:
    """The store's newest assistant message with tool calls, if only its results follow it:
    its id, its calls that still wait for results (call id -> referent key) and the calls answered.

    Only tool results may follow an open call, so the newest blocks are tool results back to
    the newest other message; binding tables do not count (``to_messages`` moves them to
    the front).  ``(None, {}, set())`` if that message is not an assistant message with tool
    calls.  A call's referent key is read off the message's block: its ``tool_call:``
    referents are bound in the order of its calls (``_Planner.message``).
    """
    answered: set[str] = set()
    for block in _newest_first(store):
        if block.meta.get("kind") == BINDING_TABLE_KIND:
            continue
        message = block.meta.get("message", {})
        if block.meta.get("role") != "tool":
            calls = [c["id"] for c in message.get("tool_calls") or ()]
            if not calls:
                break
            keys = [r[len(_CALL) :] for r in block.binds if r.startswith(_CALL)]
            return block.id, {c: k for c, k in zip(calls, keys) if c not in answered}, answered
        answered.add(message.get("tool_call_id"))
    return None, {}, set()


def _first_repeat(values: Sequence[str]) -> str:
    """The first value that occurs a second time in ``values``."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    raise DsgcValueError("no value repeats")


def _newest_first(store: MemoryStore) -> Iterator[Block]:
    """The store's blocks, active and archived, newest first, read a few at a time as the walk goes on.

    The blocks are the store's own (this module only reads them).
    """
    end, count = store.total, 4
    while end > 0:
        blocks, end = store.older_blocks(end, count)
        yield from blocks
        count = min(4 * count, 1024)


def _check_keys(record: Mapping[str, Any], allowed: Sequence[str], what: str, where: str | None) -> None:
    unknown = sorted(set(record) - set(allowed))
    if unknown:
        raise SessionError(f"unknown {what} field(s) {unknown}; allowed: {list(allowed)}", where)


def _annotation_kwargs(record: Mapping[str, Any], where: str | None) -> dict[str, Any]:
    if not record:  # no annotation: the defaults below, which pass every check
        return {"id": None, "depends_on": [], "uses": [], "binds": {}, "pinned": None, "cost": None}
    block_id = record.get("id")
    if block_id is not None and (not isinstance(block_id, str) or not block_id):
        raise SessionError(f"id must be a non-empty string, got {block_id!r}", where)
    depends_on = record.get("depends_on", [])
    uses = record.get("uses", [])
    for name, value in (("depends_on", depends_on), ("uses", uses)):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SessionError(f"{name} must be a list of non-empty strings", where)
    binds = record.get("binds", {})
    if not isinstance(binds, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in binds.items()
    ):
        raise SessionError("binds must be an object mapping referent names to string values", where)
    reserved = sorted(k for k in binds if k.startswith((_CALL, _RESULT)))
    if reserved:
        raise SessionError(
            f"binds may not name {reserved[0]!r}: the {_CALL!r}/{_RESULT!r} referents tie tool calls to their results",
            where,
        )
    pinned = record.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        raise SessionError(f"pinned must be true or false, got {pinned!r}", where)
    return {
        "id": block_id,
        "depends_on": depends_on,
        "uses": uses,
        "binds": binds,
        "pinned": pinned,
        "cost": record.get("cost"),
    }


def _tool_calls(message: Mapping[str, Any], where: str | None) -> list[tuple[str, str]]:
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if message["role"] != "assistant":
        raise SessionError("only assistant messages may carry tool_calls", where)
    if not isinstance(calls, list):
        raise SessionError("tool_calls must be a list", where)
    out = []
    for call in calls:
        if not isinstance(call, Mapping) or not isinstance(call.get("id"), str) or not call["id"]:
            raise SessionError("each tool call needs a string 'id'", where)
        function = call.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str):
            raise SessionError(f"tool call {call['id']!r} needs a function with a string 'name'", where)
        out.append((call["id"], name))
    return out


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
    planner = _Planner.for_store(store, induce)
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
def current_turn(blocks: Sequence[Block]) -> Sequence[Block]:
    """The newest user turn among ``blocks`` (oldest first): the newest user message and every block after it.

    In an agent loop these are the turn in progress (the request, and the tool calls and
    results made for it so far), which the next model call must see.  Empty without a user
    message.
    """
    for k in range(len(blocks) - 1, -1, -1):
        if blocks[k].meta.get("role") == "user":
            return blocks[k:]
    return []


def tool_unit(store: MemoryStore, block_id: str) -> list[str]:
    """The ids of the tool-call unit holding a block (just the block if it has none)."""
    unit, frontier = {block_id}, [block_id]
    while frontier:
        for referent in store.get(frontier.pop()).uses:
            binder = store.binder_of(referent) if referent.startswith((_CALL, _RESULT)) else None
            if binder is not None and binder not in unit:
                unit.add(binder)
                frontier.append(binder)
    return sorted(unit, key=lambda i: store.get(i).seq)


class ChatUnits:
    """What a compaction of chat blocks needs of their order, kept as blocks are appended (oldest first).

    Units: an assistant message with tool calls and its tool results form one; every other
    block is one on its own, numbered in order.  ``working_ages`` and ``live_roots`` (the
    module functions, which build one of these over a block list) are read from it; it
    grows in O(1) per block, so a history that only grows (``dsgc_fast.memory.history``) pays
    per call only for what the answer depends on.
    """

    def __init__(self, blocks: Iterable[Block] = ()) -> None:
        self.ids: list[str] = []
        self.unit: list[int] = []  # the unit of each block
        self.tool: list[bool] = []  # whether it is a tool call or a tool result
        self.uses: dict[str, tuple[str, ...]] = {}
        self.binder: dict[str, str] = {}  # tool-call referent -> the block binding it
        self.pinned: list[str] = []
        self.blocks: list[Block] = []
        self.units = 0
        self.query_unit: int | None = None  # the unit of the newest user message
        self.turn_start: int | None = None  # its position
        self._call_unit: dict[str, int] = {}
        for block in blocks:
            self.add(block)

    def add(self, block: Block) -> None:
        message = block.meta.get("message") or {}
        role = block.meta.get("role")
        self.blocks.append(block)
        self.ids.append(block.id)
        self.uses[block.id] = block.uses
        self.binder.update((x, block.id) for x in block.binds if x.startswith((_CALL, _RESULT)))
        if block.pinned:
            self.pinned.append(block.id)
        if role == "tool" and message.get("tool_call_id") in self._call_unit:
            self.unit.append(self._call_unit[message["tool_call_id"]])
            self.tool.append(True)
            return
        self.units += 1
        self.unit.append(self.units)
        for call in message.get("tool_calls") or ():
            self._call_unit[call["id"]] = self.units
        self.tool.append(bool(message.get("tool_calls")))
        if role == "user":
            self.query_unit, self.turn_start = self.units, len(self.ids) - 1

    def ages(self) -> np.ndarray:
        """The working age of every block (0: none), by position: see ``working_ages``."""
        unit = np.array(self.unit, dtype=np.int64)
        if self.query_unit is None:
            return np.zeros(unit.shape[0], dtype=np.int64)
        aged = np.array(self.tool, dtype=np.bool_) & (unit < self.query_unit)
        return np.where(aged, self.query_unit - unit, 0)

    def live_roots(self, live: Iterable[str] = ()) -> list[str]:
        """See the module function ``live_roots``."""
        turn = self.ids[self.turn_start :] if self.turn_start is not None else []
        roots = [*live, *turn, *self.pinned]
        chosen, frontier = set(roots), list(roots)
        while frontier:
            for referent in self.uses.get(frontier.pop(), ()):
                member = self.binder.get(referent)
                if member is not None and member not in chosen:
                    chosen.add(member)
                    frontier.append(member)
        ordered = [i for i in self.ids if i in chosen]
        return ordered + sorted(chosen - set(ordered))


def live_roots(blocks: Sequence[Block], live: Iterable[str] = ()) -> list[str]:
    """The live roots of a compaction of chat blocks (oldest first): ids in block order.

    The pinned blocks (system messages), the newest user turn and the ids in ``live``, each
    with its whole tool-call unit (an assistant message with tool calls and their results),
    so that escalation to a binding table, which replaces pinned non-roots, never splits a
    unit.  An id in ``live`` that is not among ``blocks`` comes last, as given (the
    compaction then reports it).
    """
    return ChatUnits(blocks).live_roots(live)


def working_ages(blocks: Sequence[Block]) -> dict[str, int]:
    """Working age of every tool call and tool result before the newest user message.

    ``blocks`` are active blocks, oldest first.  Units: an assistant message with tool calls
    and its tool results form one; every other block is one on its own.  A tool block's age
    is the number of units from its unit to the newest user message's (the unit just before
    it: 1).  Blocks without an age (plain messages, the current turn) are left out.
    """
    units = ChatUnits(blocks)
    return {units.ids[k]: int(age) for k, age in enumerate(units.ages().tolist()) if age}


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


def chat_messages(blocks: Iterable[Block], *, copy: bool = False) -> list[dict[str, Any]]:
    """Blocks (oldest first) as a valid chat message list.

    Message blocks give back their message (without the annotation): the block's own dict,
    or with ``copy`` a deep copy of the whole list (``archive.copied_json``, checked after
    copying); a binding table becomes a system message right after the leading system
    messages; any other block becomes a system message at its position.  Raises
    ``ValueError`` if the result would hold an orphan tool message (which compaction never
    produces).
    """
    out: list[dict[str, Any]] = []
    tables = []
    for block in blocks:
        if "message" in block.meta:
            out.append(block.meta["message"])
        elif block.meta.get("kind") == BINDING_TABLE_KIND:
            tables.append({"role": "system", "content": block.text})
        else:
            out.append({"role": "system", "content": block.text})
    lead = 0
    while lead < len(out) and out[lead].get("role") in ROOT_ROLES:
        lead += 1
    out[lead:lead] = tables
    if copy:
        out = copied_json(out)
    check_messages(out)
    return out


def check_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``ValueError`` unless every tool result directly follows the assistant call it answers.

    Rules (what chat APIs enforce): a ``tool`` message answers a call of the closest
    assistant message with ``tool_calls``, with only tool messages in between, at most once;
    every call is answered before the next non-tool message (the calls of the final
    assistant message may still be pending).
    """
    pending: set[str] = set()
    for k, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise DsgcValueError(
                    f"messages[{k}] is a tool result for call {call_id!r} with no open assistant tool call"
                )
            pending.discard(call_id)
            continue
        if pending:
            raise DsgcValueError(f"messages[{k}]: tool call(s) {sorted(pending)} have no result before it")
        calls = message.get("tool_calls")
        if calls:
            pending = {c["id"] for c in calls}
