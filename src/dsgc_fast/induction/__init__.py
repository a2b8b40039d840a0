"""Induce prerequisite edges and referent bindings from the blocks' own text.

The paper supplies edges as ground truth; agent developers rarely have them.  This package
proposes them, favouring precision (a spurious edge can lift an unrelated block over a
chain block; a missing edge only withholds support):

- ``induce_edges(texts)``: a newer block that mentions a rare identifier first introduced
  by an older block depends on that block (``edges`` module: rarity, direction, hub cap);
- ``induce_referents(texts)``: ``binds``/``uses`` for the pinning API (``referents``);
- ``trace_edges(messages)``: OpenAI-style tool traces, result -> call, step -> result and
  step -> user message (``traces``);
- ``IncrementalInducer``: the same rules one block at a time, for a growing store, on plain
  texts and on chat messages, whose tool-call arguments and tool results are read as JSON
  (``mentions``, ``json_values``: keys are never identifiers, values are);
- ``induce(texts)``: edges and referents together; ``induce_messages(messages)``: the same
  for a chat session (what ``dsgc_fast.memory.messages.add_messages`` gives a store).

``induce_edges`` (and so ``induce``) needs scikit-learn and SciPy (the ``induce`` extra);
everything else needs only NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgc_ref.contract import DsgcTypeError

from .edges import MAX_FANOUT, induce_edges
from .incremental import BlockInduction, IncrementalInducer
from .json_values import Value, key_noun, payload_values
from .referents import DESCRIPTION_WINDOW, induce_referents
from .tokens import identifier_key, iter_identifiers, normal_key
from .traces import message_at, message_text, message_texts, trace_edges

__all__ = [
    "DESCRIPTION_WINDOW",
    "MAX_FANOUT",
    "BlockInduction",
    "IncrementalInducer",
    "Induction",
    "Value",
    "identifier_key",
    "induce",
    "induce_edges",
    "induce_messages",
    "induce_referents",
    "iter_identifiers",
    "key_noun",
    "message_text",
    "message_texts",
    "normal_key",
    "payload_values",
    "trace_edges",
]


@dataclass(frozen=True)
class Induction:
    """Edges ((E, 2) int64, sorted) plus ``binds``/``uses`` lists, one entry per block."""

    edges: np.ndarray
    binds: list[dict[str, str] | None]
    uses: list[list[str]]


def induce(
    texts: Sequence[str],
    *,
    timestamps: Any = None,
    max_fanout: int = MAX_FANOUT,
    window: int = DESCRIPTION_WINDOW,
) -> Induction:
    """``induce_edges`` and ``induce_referents`` on the same texts, as one result."""
    edges = induce_edges(texts, timestamps=timestamps, max_fanout=max_fanout)
    binds, uses = induce_referents(texts, timestamps=timestamps, window=window)
    return Induction(edges, binds, uses)


def induce_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_fanout: int = MAX_FANOUT,
    window: int = DESCRIPTION_WINDOW,
    pin_referents: bool = False,
) -> Induction:
    """Edges and referents of a chat session, the rules of ``IncrementalInducer`` message by message.

    The block text of a message is ``message_text``.  ``pin_referents`` defaults to False,
    what the store does with ``add_messages``: no binds or uses (every entry None / []), a
    resolved definite description ("that order") is an edge to the newest message naming
    its value.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise DsgcTypeError(f"messages must be a sequence of message mappings, got {type(messages).__name__}")
    inducer = IncrementalInducer(max_fanout=max_fanout, window=window, pin_referents=pin_referents)
    for i in range(len(messages)):
        message = message_at(messages, i)
        inducer.add(message_text(message), message=message)
    return Induction(inducer.edges, inducer.binds, inducer.uses)
