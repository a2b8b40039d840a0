"""The digest of a chat block, as the agent path sends it: text, message, framed cost, values kept.

A tool result's digest (``digest.render_digest``) replaces the message's content in place:
the same role, ``tool_call_id`` and every other field, so a transcript stays valid.  It is
built once per block (``select`` keeps it with the parsed history) and costed as the store
costs any message: its chat tokens with framing (``token_counts.block_tokens``).

Only a tool result whose digest costs fewer tokens than the whole and whose text holds a
value word (``digest.value_words``) has a digest; a text that already is a digest
(``digest.is_digest``) has none, since a digest of a digest is itself: a block sent as its
digest, compacted again, is kept as it is or evicted, never reduced further.

A block sent as its digest (``digested_block``) carries its whole in ``meta["digested"]``
(the text, the message's content and the cost), so that ``whole_block`` gives it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .block import Block, copied_json
from .digest import is_digest, render_digest, value_words
from .token_counts import TokenCounter, block_tokens


@dataclass(frozen=True)
class BlockDigest:
    """A block's digest as sent.

    ``text`` the digest; ``message`` the block's message with ``text`` as its content;
    ``cost`` its chat tokens; ``kept`` and ``dropped`` the whole's value words that the
    digest holds and does not hold, in order of first appearance.
    """

    text: str
    message: dict[str, Any]
    cost: int
    kept: tuple[str, ...]
    dropped: tuple[str, ...]

    @property
    def share(self) -> float:
        """The share of the whole's value words the digest keeps, ``len(kept) / (len(kept) + len(dropped))``."""
        return len(self.kept) / (len(self.kept) + len(self.dropped))

    def keeps(self, value: Any) -> bool:
        """True if ``value`` (a bound value, as text) appears verbatim in the digest."""
        return isinstance(value, str) and bool(value) and value in self.text

    def detached(self) -> BlockDigest:
        """A copy whose ``message`` shares nothing with this one's."""
        return dataclasses.replace(self, message=copied_json(self.message))

    def to_dict(self) -> dict[str, Any]:
        return {"cost": self.cost, "kept": list(self.kept), "dropped": list(self.dropped)}


def block_digest(block: Block, counter: TokenCounter) -> BlockDigest | None:
    """The digest of a tool-result ``block`` (module docstring), or None when it has none.

    The marker names the block's id, the message's ``name`` (when a string) and the whole's
    cost; the message keeps every field but ``content``.
    """
    message = block.meta.get("message")
    if block.meta.get("role") != "tool" or not isinstance(message, dict) or is_digest(block.text):
        return None
    words = value_words(block.text)
    if not words:
        return None
    name = message.get("name")
    text = render_digest(block.text, block.id, tool=name if isinstance(name, str) else None, tokens=block.cost)
    sent = {**message, "content": text}
    cost = block_tokens(text, sent, counter)
    if cost >= block.cost:
        return None
    held = set(value_words(text))
    kept = tuple(w for w in words if w in held)
    dropped = tuple(w for w in words if w not in held)
    return BlockDigest(text, sent, cost, kept, dropped)


def digested_block(block: Block, digest: BlockDigest) -> Block:
    """``block`` sent as ``digest``: its text, message and cost, the whole in ``meta["digested"]``."""
    meta = copied_json(block.meta)
    meta.setdefault("digested", {"text": block.text, "content": meta["message"].get("content"), "cost": block.cost})
    meta["message"] = copied_json(digest.message)
    return dataclasses.replace(block, text=digest.text, cost=digest.cost, meta=meta)


def whole_block(block: Block) -> Block | None:
    """The whole of a block ``digested_block`` made (None for any other block)."""
    whole = block.meta.get("digested")
    if not isinstance(whole, dict):
        return None
    meta = {k: v for k, v in copied_json(block.meta).items() if k != "digested"}
    meta["message"] = {**meta["message"], "content": whole["content"]}
    return dataclasses.replace(block, text=whole["text"], cost=int(whole["cost"]), meta=meta)


class BlockDigests:
    """The digests of a store's blocks by slot, each built once per block (``block_digest``).

    A held (active) block's digest is built again only when the block changed (cut, digested,
    recalled whole: a block equal to the one digested, as a block read back from the archive
    is, keeps its digest).  An archived block cannot change while archived
    (its row is the block as it was held when it left), so its digest is kept without reading
    it back.  So a compaction looks at the held tool results and those added since the
    previous one only; ``forget`` drops deleted blocks, ``rebuilt`` the slots a rolled-back
    group added, and has the next compaction look at every tool result again.
    """

    def __init__(self) -> None:
        self._made: dict[int, tuple[Block, BlockDigest | None]] = {}
        self._by_slot: list[BlockDigest | None] = []  # the digest of each slot (None: none, or not a tool result)
        self._seen = 0  # every tool result below it asked since has its digest, or is held or deleted

    def of(
        self, slots: np.ndarray, tools: np.ndarray, held: Mapping[int, Block], read: Callable[[int], Block],
        counter: TokenCounter,
    ) -> Sequence[BlockDigest | None]:  # fmt: skip
        """The digest (or None) of the block at each slot in ``slots`` (ascending), of which only the tool results
        (``slots[tools]``) may have one: of ``held[s]``, or of ``read(s)`` for one not held."""
        made, by_slot = self._made, self._by_slot
        asked = slots[tools]
        start = int(np.searchsorted(asked, self._seen))
        kept = asked[:start][np.isin(asked[:start], np.fromiter(held, dtype=np.int64, count=len(held)))]
        end = int(slots[-1]) + 1 if slots.shape[0] else 0
        by_slot.extend([None] * (end - len(by_slot)))
        for s in kept.tolist() + asked[start:].tolist():
            block, known = held.get(s), made.get(s)
            if known is not None and block is not None and known[0] is not block:
                if known[0] == block:  # read back equal: keep the held object, so the next look is one `is`
                    made[s] = (block, known[1])
                else:
                    known = None
            if known is None:
                whole = block if block is not None else read(s)
                made[s] = (whole, block_digest(whole, counter))
                by_slot[s] = made[s][1]
        self._seen = max(self._seen, end)
        if slots.shape[0] == len(by_slot):  # every slot (none deleted): the list itself
            return by_slot
        return [by_slot[s] for s in slots.tolist()]

    def forget(self, slots: Iterable[int]) -> None:
        """Drop what is kept of the blocks at ``slots`` (deleted: nothing of theirs may stay)."""
        for s in slots:
            self._made.pop(s, None)
            if s < len(self._by_slot):
                self._by_slot[s] = None

    def rebuilt(self, total: int) -> None:
        """The store was rebuilt from its record with ``total`` slots (a group rolled back, say)."""
        self._made = {s: m for s, m in self._made.items() if s < total}
        del self._by_slot[total:]
        self._seen = 0
