"""What a compaction of chat blocks needs of each block, as arrays, so a turn's working ages cost no Python loop.

``messages.ChatUnits`` states the rule over a list of blocks (oldest first): an assistant
message with tool calls and the tool results answering them form one unit, every other block
is a unit on its own; a tool block's working age is the number of units from its unit to the
newest user message's.  A tool result joins its call's unit only if the calling block is
among the blocks, so the units of a store's active blocks change as blocks are evicted.

``ChatFacts`` keeps, per block slot, the facts the rule reads and that never change for a
block: whether it is a user message or a tool result, whether its message carries tool
calls, and the slot of the block that made the call a tool result answers.  ``ages`` then
applies the rule to any set of active slots in one kernel call (``kernels.chat.working_ages``).
Stores whose blocks make the rule depend on more than these facts (a call id made by two
blocks, a tool message with tool calls of its own, a message that is not shaped as
``add_messages`` makes it) are ``ambiguous``: their callers apply ``ChatUnits`` itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from .._deferred import deferred
from ._growable import Growable

chat_kernels = deferred("dsgc_fast.kernels.chat")

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
