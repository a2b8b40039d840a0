"""The chat rules, once: tool units, the current turn, live roots and working ages, in list form and array form.

The rules, over chat blocks oldest first (as ``dsgc_fast.memory.records`` plans them):

* Units.  An assistant message with tool calls and the tool results answering them form one
  unit; every other block is a unit on its own.  A tool result joins its call's unit only if
  the calling block is among the blocks, so the units of a store's active blocks change as
  blocks are evicted.
* The current turn.  The newest user message and every block after it (``current_turn``):
  in an agent loop, the request and the tool calls and results made for it so far.
* Live roots.  The pinned blocks (system messages), the current turn and any ids given, each
  with its whole tool-call unit (``live_roots``).
* Working ages.  A tool block before the newest user message has the number of units from
  its unit to that message's (the unit just before it: 1); other blocks have none
  (``working_ages``).  The agent policy lifts the newest tool unit by rho =
  working_weight / N and each older one by a further factor ``recency_decay``.

``ChatUnits`` applies them over a list of blocks, growing in O(1) per block.  ``ChatFacts``
keeps, per block slot of a store, the facts the working-age rule reads and that never change
for a block: whether it is a user message or a tool result, whether its message carries tool
calls, and the slot of the block that made the call a tool result answers.  ``ages`` then
applies the rule to any set of active slots in one kernel call (``kernels.chat.working_ages``).
Stores whose blocks make the rule depend on more than these facts (a call id made by two
blocks, a tool message with tool calls of its own, a message that is not shaped as
``add_messages`` makes it) are ``ambiguous``: their callers apply ``ChatUnits`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .._deferred import deferred
from ._growable import Growable
from .block import Block

chat_kernels = deferred("dsgc_fast.kernels.chat")
#: a block key: an id or a store slot
_Key = TypeVar("_Key", bound=Hashable)

_OTHER, _USER, _TOOL = 0, 1, 2
#: the referent prefixes that tie a tool call (bound by the calling message) to its result (bound by the result)
CALL_PREFIX, RESULT_PREFIX = "tool_call:", "tool_result:"


class ChatFacts:
    """Per-slot chat facts of a store's blocks, appended as blocks are (module docstring)."""

    def __init__(self) -> None:
        self.role = Growable(np.int8)
        self.has_calls = Growable(np.bool_)
        self.caller = Growable(np.int64)  # the slot whose tool call a tool result answers (-1: none)
        self.ambiguous = False
        self._call_slot: dict[Hashable, int] = {}

    def append(self, slot: int, meta: Mapping[str, Any]) -> None:
        """Record block ``slot``'s facts from its ``meta`` (as ``ChatUnits.add`` reads it)."""
        role, has_calls, caller = _OTHER, False, -1
        try:
            message = meta.get("message") or {}
            calls = message.get("tool_calls")
            has_calls = bool(calls)
            kind = meta.get("role")
            if kind == "tool":
                role = _TOOL
                caller = self._call_slot.get(message.get("tool_call_id"), -1)
                self.ambiguous |= has_calls
            elif kind == "user":
                role = _USER
            for call in calls or ():
                call_id = call["id"]
                self.ambiguous |= call_id in self._call_slot
                self._call_slot[call_id] = slot
        except Exception:
            self.ambiguous = True
        self.role.append(role)
        self.has_calls.append(has_calls)
        self.caller.append(caller)

    def tool_results(self, slots: np.ndarray) -> np.ndarray:
        """The positions in ``slots`` of the tool results (role ``tool``), ascending."""
        return np.flatnonzero(self.role.view()[slots] == _TOOL)

    def ages(self, slots: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, int | None]:
        """Working ages of the active blocks ``slots`` (ascending) and the position of the newest user message.

        ``active`` flags every slot.  Equal to ``ChatUnits`` over the blocks at ``slots``
        (``ChatUnits.ages`` and ``turn_start``) when the store is not ``ambiguous``.
        """
        out = np.empty(slots.shape[0], dtype=np.int64)
        turn = chat_kernels.working_ages(
            slots, active, self.role.view(), self.has_calls.view(), self.caller.view(), _USER, _TOOL, out
        )
        return out, None if turn < 0 else int(turn)


def with_tool_units(
    roots: Iterable[_Key], uses: Callable[[_Key], Iterable[str]], binder: Callable[[str], _Key | None]
) -> set[_Key]:
    """``roots`` with the whole tool-call unit of each: the closure over tool-call referents.

    A block is added when a block in the set uses a ``tool_call:``/``tool_result:`` referent
    it is the ``binder`` of (the calling assistant message binds the first, each result the
    second), until nothing more is added.  ``uses`` and ``binder`` read blocks by any key
    (ids, store slots); ``binder`` returns None for a referent with no binder that counts.
    """
    chosen = set(roots)
    frontier = list(chosen)
    while frontier:
        for referent in uses(frontier.pop()):
            if referent.startswith((CALL_PREFIX, RESULT_PREFIX)):
                member = binder(referent)
                if member is not None and member not in chosen:
                    chosen.add(member)
                    frontier.append(member)
    return chosen


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
        self.binder.update((x, block.id) for x in block.binds if x.startswith((CALL_PREFIX, RESULT_PREFIX)))
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
        chosen = with_tool_units([*live, *turn, *self.pinned], lambda i: self.uses.get(i, ()), self.binder.get)
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
