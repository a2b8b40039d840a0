"""The block model and its checks: what one memory block is, wherever it is kept.

This module owns the data model of the agent layer and nothing of its storage:

* ``Block``, ``ArchivedBlock`` and ``DeletedBlock``: a block, and a block with the compaction
  or deletion that took it out of the conversation.  A block converts to and from the tuple
  of its table row (``Block.to_row``/``Block.from_row``: JSON texts for its links and meta,
  the embedding's bytes); the tables themselves are ``schema.py``'s, the rows' moves
  ``archive.py``'s;
* ``copied_json``: the deep copy of decoded JSON a store hands out;
* ``checked_block``: the block ``MemoryStore.add`` (and ``select``) makes of its arguments,
  every argument checked (``id_list``, ``check_flag`` check the store's other arguments);
  ``check_stored``: a block read back must continue the store; ``MAX_COST``;
* ``INDUCED_KEY``/``is_induced``: the meta marker of a block added with ``induce=True``.

It imports no database module: a ``Block`` is the same whether a ``MemoryStore``, its SQLite
archive or the stateless ``select`` holds it.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, is_integer_scalar

from ..encoders import check_unicode
from ._nesting import MAX_NESTING, NotCanonical, canonical_copy, check_nesting
from .token_counts import TokenCounter

#: the largest token cost of one block (the engine's cost total stays far from int64 overflow)
MAX_COST = 2**32 - 1
#: the meta key marking a block added with ``induce=True``
INDUCED_KEY = "induced"


def is_induced(meta: Mapping[str, Any]) -> bool:
    """True for the meta of a block added with ``induce=True``."""
    return meta.get(INDUCED_KEY) is True


@dataclass(frozen=True)
class Block:
    """One memory block as stored: its text, cost, embedding, structure and metadata.

    ``seq`` is the insertion number (larger is newer); ``depends_on`` names prerequisite
    block ids; ``binds`` maps referents this block binds to their values; ``uses`` names
    the referents it uses; ``pinned`` blocks are live roots at every compaction.
    """

    id: str
    text: str
    cost: int
    seq: int
    depends_on: tuple[str, ...] = ()
    binds: dict[str, str] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    pinned: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    embedding: np.ndarray | None = field(default=None, repr=False, compare=False)

    def detached(self, embedding: np.ndarray | None = None) -> Block:
        """A copy that shares no mutable value with this block, with ``embedding`` as its vector.

        ``binds`` and ``meta`` (decoded JSON) are copied, so that editing a block a store
        returned changes neither the store nor any other block it returns.
        """
        return dataclasses.replace(self, binds=dict(self.binds), meta=copied_json(self.meta), embedding=embedding)

    def to_row(self, embedding: np.ndarray | None, width: np.dtype) -> tuple:
        """The block as a row of the ``active``/``archive`` tables, with ``embedding`` (default: its own).

        The values are in ``schema.BLOCK_COLUMNS`` order; the embedding is stored as the
        little-endian bytes of ``width`` (``Archive.width``).
        """
        return (
            self.seq,
            self.id,
            self.text,
            self.cost,
            np.ascontiguousarray(self.embedding if embedding is None else embedding, dtype=width).tobytes(),
            _json_text(list(self.depends_on)),
            _json_text(self.binds),
            _json_text(list(self.uses)),
            int(self.pinned),
            json.dumps(self.meta),
        )

    @classmethod
    def from_row(cls, row: tuple, width: np.dtype, *, embedding: bool = True) -> Block:
        """The block a table row holds (embedding bytes of ``width``); ``ValueError`` naming the field if malformed.

        With ``embedding=False`` the row's embedding is not read (the block has none): a
        store reading back blocks whose rows its columns already hold.
        """
        seq, id_, text, cost, emb, depends_on, binds, uses, pinned, meta = row[:10]
        try:
            block = cls(
                id=id_,
                text=text,
                cost=int(cost),
                seq=int(seq),
                depends_on=tuple(_decoded(depends_on, list)),
                binds=_decoded(binds, dict),
                uses=tuple(_decoded(uses, list)),
                pinned=bool(pinned),
                meta=_decoded(meta, dict),
                embedding=np.frombuffer(emb, dtype=width).astype(width.newbyteorder("=")) if embedding else None,
            )
            _check_block(block, pinned, embedding)
        except (TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            raise DsgcValueError(f"block seq {seq!r} is malformed: {exc}") from None
        return block


def copied_json(value: Any) -> Any:
    """A deep copy of decoded JSON data (dicts, lists, scalars): it shares no dict or list with ``value``.

    Data of the exact JSON types (what the store keeps) is copied by one ``marshal`` round
    trip, which rebuilds every container in C (a container met twice in ``value`` is one
    container met twice in the copy, as with ``copy.deepcopy``); anything marshal refuses (a
    dict subclass, say) is copied level by level, dicts and lists as plain ones.
    """
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _copied_levels(value)


def _copied_levels(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: v if type(v) is str else _copied_levels(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) is str else _copied_levels(v) for v in value]
    return value


def _json_text(value: list | dict) -> str:
    """``json.dumps(value)``, without its fixed cost for an empty list or dict (most blocks' links)."""
    if value:
        return json.dumps(value)
    return "[]" if isinstance(value, list) else "{}"


def _decoded(text: Any, kind: type) -> Any:
    """A JSON column's value, which must be of type ``kind`` and nest at most ``MAX_NESTING`` levels."""
    if (text == "[]" and kind is list) or (text == "{}" and kind is dict):  # most links: no decoder's fixed cost
        return kind()
    try:
        value = json.loads(text)
    except RecursionError:
        raise DsgcValueError(f"a JSON value is nested more than {MAX_NESTING} levels deep") from None
    if not isinstance(value, kind):
        raise DsgcValueError(f"expected a JSON {kind.__name__}, got {text!r}")
    if text.count("[") + text.count("{") > MAX_NESTING:  # fewer brackets than the limit cannot nest past it
        check_nesting("a JSON value", value)
    return value


def _check_block(block: Block, pinned: Any, embedding: bool) -> None:
    """Raise ``ValueError`` unless every field of a decoded row has the type ``MemoryStore.add`` gives it
    (the embedding only when it was ``embedding`` read)."""
    checks = [
        (isinstance(block.id, str) and block.id != "", "id is not a non-empty text"),
        (isinstance(block.text, str), "text is not text"),
        (block.cost >= 0, "cost is negative"),
        (pinned in (0, 1), "pinned is not 0 or 1"),
        (
            not embedding
            or (block.embedding is not None and block.embedding.size > 0 and bool(np.isfinite(block.embedding).all())),
            "embedding is empty or not finite",
        ),
        (all(isinstance(x, str) for x in block.depends_on + block.uses), "depends_on/uses hold a non-text"),
        (all(isinstance(v, str) for v in block.binds.values()), "binds maps to a non-text"),
    ]
    for ok, problem in checks:
        if not ok:
            raise DsgcValueError(problem)


@dataclass(frozen=True)
class ArchivedBlock:
    """An archived block with the compaction that evicted it and the reason given then."""

    block: Block
    compaction: int
    reason: str


@dataclass(frozen=True)
class DeletedBlock:
    """A deleted block with the deletion that removed it (number and operation).

    ``compaction`` and ``reason`` are those of the compaction that had archived it, or None
    if it was active when it was deleted.
    """

    block: Block
    deletion: int
    operation: str
    compaction: int | None
    reason: str | None


def checked_block(
    text: str,
    *,
    seq: int,
    id: str | None,
    depends_on: Iterable[str],
    binds: Mapping[str, str] | None,
    uses: Iterable[str],
    cost: Any,
    pinned: Any,
    meta: Mapping[str, Any] | None,
    known: Container[str],
    counter: TokenCounter,
    induced: bool = False,
    own_meta: bool = False,
) -> Block:
    """The block ``MemoryStore.add`` would append as number ``seq`` (no embedding), every argument checked.

    ``known`` holds the ids of the blocks before it; a missing ``cost`` is ``counter(text)``;
    ``induced`` marks the block as added with ``induce=True`` (``meta[INDUCED_KEY]``).
    ``own_meta``: ``meta`` is the caller's own fresh copy, shared with nobody, that passes
    ``_check_meta`` as it is (a dict of canonical JSON, ``_nesting.canonical_copy``, nested
    at most ``MAX_NESTING`` levels, without ``INDUCED_KEY``): the block keeps it uncopied.
    """
    if not isinstance(text, str):
        raise DsgcTypeError(f"text must be a str, got {type(text).__name__}")
    check_unicode("text", text)
    block_id = f"b{seq}" if id is None else id
    if not isinstance(block_id, str) or not block_id:
        raise DsgcTypeError(f"id must be a non-empty str, got {block_id!r}")
    check_unicode("id", block_id)
    if block_id in known:
        raise DsgcValueError(f"duplicate block id {block_id!r}")
    return Block(
        id=block_id,
        text=text,
        cost=_check_cost(cost, text, counter),
        seq=seq,
        depends_on=_check_depends_on(block_id, depends_on, known),
        binds=_check_binds(binds),
        uses=_check_uses(uses),
        pinned=check_flag("pinned", pinned),
        meta=_block_meta(meta, own_meta, induced),
    )


def _block_meta(meta: Any, own: bool, induced: bool) -> dict[str, Any]:
    """The meta a block keeps: ``meta`` checked and copied (kept as it is if ``own``, see ``checked_block``)."""
    checked = meta if own else _check_meta(meta)
    return {**checked, INDUCED_KEY: True} if induced else checked


def _check_cost(cost: Any, text: str, counter: TokenCounter) -> int:
    name = "cost"
    if cost is None:
        cost, name = counter.count(text), f"tokenizer {counter.name}(text)"
    # a plain int (the common case) skips the numeric-tower checks of ``is_integer_scalar``
    if (type(cost) is not int and not is_integer_scalar(cost)) or not 0 <= int(cost) <= MAX_COST:
        raise DsgcValueError(f"{name} must be a non-negative integer <= {MAX_COST}, got {cost!r}")
    return int(cost)


def _check_depends_on(block_id: str, depends_on: Iterable[str], known: Container[str]) -> tuple[str, ...]:
    out = _names("depends_on", depends_on, "block ids")
    for prerequisite in out:
        if prerequisite == block_id:
            raise DsgcValueError(f"block {block_id!r} cannot depend on itself")
        if prerequisite not in known:
            raise DsgcValueError(f"unknown dependency id {prerequisite!r} (depends_on must name earlier blocks)")
    return out


def id_list(name: str, ids: str | Iterable[str]) -> list[str]:
    """One block id, or an iterable of them."""
    return [ids] if isinstance(ids, str) else list(_names(name, ids, "block ids"))


def _names(name: str, values: Any, what: str) -> tuple[str, ...]:
    """``values`` as distinct non-empty strs in first-seen order; ``TypeError`` naming ``name`` otherwise."""
    if isinstance(values, str):
        raise DsgcTypeError(f"{name} must be an iterable of {what}, not a single str")
    if type(values) is not list and type(values) is not tuple and not isinstance(values, Iterable):
        raise DsgcTypeError(f"{name} must be an iterable of {what}, got {type(values).__name__}")
    out = tuple(values)
    if not all(isinstance(v, str) and v for v in out):
        raise DsgcTypeError(f"{name} must hold non-empty str {what}, got {list(out)!r}")
    return tuple(dict.fromkeys(out))


def check_stored(block: Block, seq: int, slot_of: Mapping[str, int], dimension: int | None) -> None:
    """A database row must continue the store: next seq, new id, known dependencies, same d."""
    if block.seq != seq:
        raise DsgcValueError(f"block seq {block.seq} out of order (expected {seq})")
    if block.id in slot_of:
        raise DsgcValueError(f"block seq {block.seq}: duplicate id {block.id!r}")
    unknown = [p for p in block.depends_on if p not in slot_of]
    if unknown:
        raise DsgcValueError(f"block seq {block.seq}: unknown dependency ids {unknown}")
    if dimension is not None and block.embedding is not None and block.embedding.shape[0] != dimension:
        raise DsgcValueError(
            f"block seq {block.seq}: embedding has d = {block.embedding.shape[0]}, expected {dimension}"
        )
    if block.cost > MAX_COST:
        raise DsgcValueError(f"block seq {block.seq}: cost {block.cost} exceeds {MAX_COST}")


def _check_binds(binds: Mapping[str, str] | None) -> dict[str, str]:
    if binds is None:
        return {}
    if not isinstance(binds, Mapping):
        raise DsgcTypeError(f"binds must be a mapping referent -> value, got {type(binds).__name__}")
    for referent, value in binds.items():
        if not isinstance(referent, str) or not referent or not isinstance(value, str):
            raise DsgcTypeError(f"binds must map non-empty str referents to str values, got {referent!r}: {value!r}")
        if not referent.isascii():  # (ASCII is valid Unicode: no error name to build for it)
            check_unicode(f"binds referent {referent!r}", referent)
        if not value.isascii():
            check_unicode(f"binds[{referent!r}]", value)
    return dict(binds)


def _check_uses(uses: Iterable[str]) -> tuple[str, ...]:
    out = _names("uses", uses, "referent names")
    for referent in out:
        if not referent.isascii():  # (as in ``_check_binds``)
            check_unicode(f"uses referent {referent!r}", referent)
    return out


def check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DsgcTypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise DsgcTypeError(f"meta must be a mapping, got {type(meta).__name__}")
    if INDUCED_KEY in meta:
        raise DsgcValueError(
            f"meta key {INDUCED_KEY!r} is reserved: the store sets it on the blocks added with induce=True"
            " (drop it from a block's meta read back from a store, and pass induce=True to induce)"
        )
    if type(meta) is dict:
        try:
            return canonical_copy(meta)
        except NotCanonical:
            pass  # the round trip below converts it or names what is wrong
    try:
        decoded = json.loads(json.dumps(dict(meta), allow_nan=False))
    except RecursionError:
        raise DsgcValueError(f"meta is nested more than {MAX_NESTING} levels deep") from None
    except (TypeError, ValueError) as exc:
        raise DsgcTypeError(f"meta must be JSON-serializable: {exc}") from None
    check_nesting("meta", decoded)
    return decoded
