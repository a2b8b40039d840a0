"""Induce prerequisite edges and referent bindings from the blocks' own text.

The paper supplies edges as ground truth; agent developers rarely have them.  This package
proposes them, favouring precision (a spurious edge can lift an unrelated block over a
chain block; a missing edge only withholds support):

- ``induce_edges(texts)``: a newer block that mentions a rare identifier first introduced
  by an older block depends on that block (``edges`` module: rarity, direction, hub cap);
- ``induce_referents(texts)``: ``binds``/``uses`` for the pinning API (``referents``);
- ``trace_edges(messages)``: OpenAI-style tool traces, result -> call and step -> result
  (``traces``);
- ``IncrementalInducer``: the same rules one block at a time, for a growing store;
- ``induce(texts)``: edges and referents together.

Needs scikit-learn and SciPy (the ``induce`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .edges import MAX_FANOUT, induce_edges
from .incremental import BlockInduction, IncrementalInducer
from .referents import DESCRIPTION_WINDOW, induce_referents
from .tokens import identifier_key, iter_identifiers
from .traces import message_text, message_texts, trace_edges

__all__ = [
    "DESCRIPTION_WINDOW",
    "MAX_FANOUT",
    "BlockInduction",
    "IncrementalInducer",
    "Induction",
    "identifier_key",
    "induce",
    "induce_edges",
    "induce_referents",
    "iter_identifiers",
    "message_text",
    "message_texts",
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
