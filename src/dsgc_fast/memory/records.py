"""Message and block records -> ``MemoryStore.add`` arguments, and blocks -> a valid chat message list.

Each message (``role``, ``content``, ``tool_calls``, ``tool_call_id``; a dict or a JSONL
line) becomes one block whose text is what the model reads (the content, plus
``name(arguments)`` for each tool call, ``message_text``) and whose ``meta`` keeps the
message itself.  This module reads records and the public view of the blocks already
stored (``StoredBlocks``), never a store: ``dsgc_fast.memory.messages`` applies it to a
``MemoryStore``, ``dsgc_fast.memory.history`` to a history the caller owns.

Tool-call units.  Providers reject a tool result without the assistant message that called
it, and an assistant tool call without its results.  So an assistant message with tool
calls binds the referent ``tool_call:<key>`` and uses ``tool_result:<key>`` for each call,
and the tool result binds ``tool_result:<key>`` and uses ``tool_call:<key>`` (and depends on
the call's block).  The two are in each other's referent closure, so closure-aware
selection keeps or evicts the assistant message and all its results as one unit.

Annotations.  A message may carry a ``"dsgc"`` object with ``id``, ``depends_on``, ``binds``,
``uses``, ``pinned`` and ``cost`` (the ``MemoryStore.add`` arguments) and ``meta`` (more data
kept in the block's meta beside ``role`` and ``message``); it is stripped from the stored
message.  A JSONL line without ``role`` is a plain block: ``{"text": ..., "id": ...,
"depends_on": [...], "binds": {...}, "uses": [...], "pinned": ..., "cost": ..., "meta": {...}}``.

Induction.  A record that declares none of ``depends_on``, ``binds``, ``uses`` is planned
with ``induce=True`` (unless the planner's ``induce`` is off): the store induces its edges
(``dsgc_fast.induction``).  A record that declares any of the three keeps exactly what it
declares.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from ._nesting import NotCanonical, canonical_copy, check_nesting
from .block import Block, copied_json
from .chat import CALL_PREFIX, RESULT_PREFIX
from .compaction import BINDING_TABLE_KIND
from .token_counts import TokenCounter, block_tokens
from .value_table import VALUE_TABLE_KIND

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
    history (``Planner.call_key``).
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


@dataclass(frozen=True)
class StoredBlocks:
    """What a ``Planner`` reads of the blocks stored before its records (all public store API).

    Attributes
    ----------
    total : int
        Blocks ever stored (``MemoryStore.total``): generated ids ``m<k>`` start at ``k = total``.
    has : callable
        ``has(id)``: whether an id names a stored block, active, archived or deleted (``MemoryStore.has``).
    binder_of : callable
        ``binder_of(referent)``: the id of the newest stored block binding it, or None (``MemoryStore.binder_of``).
    newest_first : iterable of Block
        The stored blocks that are not deleted, newest first, read lazily: the planner reads
        only the newest ones, back to the newest message that is not a tool result.
    """

    total: int
    has: Callable[[str], bool]
    binder_of: Callable[[str], str | None]
    newest_first: Iterable[Block]


class Planner:
    """Validates records in order, after the stored blocks if any, and turns each into ``add`` arguments.

    Sequence rule (what ``check_messages`` enforces on the output): while an assistant
    message's tool calls wait for results, only tool messages answering them may come next.
    A message's cost is ``block_tokens`` of it under ``counter`` (unless annotated).  Without
    ``stored`` the records are a whole history of their own (``dsgc_fast.memory.history``);
    with it they follow those blocks (``dsgc_fast.memory.messages`` builds it from a store).
    """

    def __init__(self, counter: TokenCounter, stored: StoredBlocks | None = None, induce: bool = True) -> None:
        self.counter = counter
        self.stored = stored
        self.induce = induce
        self.first_seen: dict[str, str | None] = {}
        self.called: set[str] = set()  # every call id of these records
        self.bound: set[str] = set()  # every tool-call referent these records bind
        self.suffix: dict[str, int] = {}  # call id -> the last ``#n`` its referents were given
        self.caller, self.open, self.answered = (
            open_calls(stored.newest_first) if stored is not None else (None, {}, set())
        )
        self.opened_at: str | None = None
        self.next_number = stored.total if stored is not None else 0

    def known(self, block_id: str) -> bool:
        """Whether ``block_id`` names a record planned so far or a stored block."""
        return block_id in self.first_seen or (self.stored is not None and self.stored.has(block_id))

    def stored_binder(self, referent: str) -> str | None:
        """The id of the newest stored block binding ``referent``, or None."""
        return None if self.stored is None else self.stored.binder_of(referent)

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
    that meta uncopied (``block.checked_block``'s ``own_meta``).
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


def open_calls(newest_first: Iterable[Block]) -> tuple[str | None, dict[str, str], set[str]]:
    """The newest assistant message with tool calls among blocks (newest first), if only its results follow it:
    its id, its calls that still wait for results (call id -> referent key) and the calls answered.

    Only tool results may follow an open call, so the newest blocks are tool results back to
    the newest other message; binding tables do not count (``chat_messages`` moves them to
    the front).  ``(None, {}, set())`` if that message is not an assistant message with tool
    calls.  A call's referent key is read off the message's block: its ``tool_call:``
    referents are bound in the order of its calls (``Planner.message``).  The walk stops at
    that message, so a lazy iterable is read no further.
    """
    answered: set[str] = set()
    for block in newest_first:
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


# -- blocks -> messages -------------------------------------------------------------------
def chat_messages(blocks: Iterable[Block], *, copy: bool = False) -> list[dict[str, Any]]:
    """Blocks (oldest first) as a valid chat message list.

    Message blocks give back their message (without the annotation): the block's own dict,
    or with ``copy`` a deep copy of the whole list (``block.copied_json``, checked after
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
        elif block.meta.get("kind") in (BINDING_TABLE_KIND, VALUE_TABLE_KIND):
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
