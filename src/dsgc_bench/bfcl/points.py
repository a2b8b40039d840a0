"""Scoring points: the store just before a turn, and the values that turn's calls need.

A scoring point is a transcript cut just before turn t (0-based t >= 1, i.e. turn k = t + 1
>= 2): its blocks are every message of turns 0..t-1 (the history) followed by the turn's
user message (the query, the last block).  Block texts are what ``MemoryStore`` stores
(``dsgc_fast.memory.messages.message_text``); costs are ``dsgc_fast.whitespace_cost`` of them.

**Needed values** of the point: the leaf values (``values``) of turn t's ground-truth
call arguments that do not occur in the query's view, do not occur in the tool schema's
view (the function docs of the session's classes, JSON decoded), and occur in the view of
at least one history block (their *holders*).  Values that occur nowhere earlier are
what the turn itself must discover (``unavailable``) and are not scored.

**Units**: an assistant tool-call message with its tool result(s) is one unit; every other
block is a unit of its own.  **Live roots**: the system (and developer) messages and the query,
always kept (as in the store); budgets charge them in full.

A point's ``costs`` are in one cost unit: ``make_point`` gives the paper's whitespace cost,
``units.in_unit`` the same point in the store's model tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dsgc_fast import whitespace_cost
from dsgc_fast.memory.messages import ROOT_ROLES, message_text

from .data import Session, function_docs
from .replay import Transcript
from .values import Value, View, json_view, leaf_values, message_view, normal_view


@dataclass(frozen=True)
class Point:
    """One retention decision to score (module docstring).

    ``messages``/``texts``/``costs``/``views``/``turns``/``kinds`` are per block, the
    query last; ``units`` partition the blocks (the query's unit is ``[n - 1]``);
    ``holders[v]`` are the history blocks whose view holds needed value ``v``;
    ``budget_history``, when given, is the cost budgets are a share of (default: the point's
    own history outside the roots; ``padded`` keeps a padded point's budget that of the
    original).
    """

    session: str
    split: str
    turn: int
    messages: tuple[dict[str, Any], ...]
    texts: tuple[str, ...]
    costs: np.ndarray
    views: tuple[View, ...]
    turns: tuple[int, ...]
    kinds: tuple[str, ...]
    units: tuple[tuple[int, ...], ...]
    needed: tuple[Value, ...]
    holders: dict[Value, tuple[int, ...]]
    excluded: dict[str, int] = field(default_factory=dict)
    budget_history: int | None = None

    @property
    def n(self) -> int:
        return len(self.texts)

    @property
    def query(self) -> int:
        return self.n - 1

    @property
    def roots(self) -> tuple[int, ...]:
        """The live roots, ascending: every system or developer message, and the query."""
        return (*(i for i in range(self.query) if self.messages[i].get("role") in ROOT_ROLES), self.query)

    def budget(self, fraction: float) -> int:
        """The store's budget: the live roots' cost plus ``ceil(fraction * cost of the rest)``.

        The roots are always kept (charged to the budget), so the fraction is the share of
        the *rest of the history* that fits; computed exactly in integers.
        """
        roots = int(self.costs[list(self.roots)].sum())
        rest = int(self.costs.sum()) - roots if self.budget_history is None else self.budget_history
        numerator, denominator = float(fraction).as_integer_ratio()
        return roots - ((-rest * numerator) // denominator)

    def unit_of(self) -> np.ndarray:
        """Unit number of every block."""
        out = np.empty(self.n, dtype=np.int64)
        for u, members in enumerate(self.units):
            out[list(members)] = u
        return out


def tool_units(messages: Sequence[dict[str, Any]]) -> tuple[tuple[int, ...], ...]:
    """Assistant tool-call messages with their results as units; every other block alone."""
    owner: dict[str, int] = {}
    unit_of: list[int] = []
    units: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.get("role") == "tool" and message.get("tool_call_id") in owner:
            u = owner[message["tool_call_id"]]
            units[u].append(i)
        else:
            u = len(units)
            units.append([i])
            for call in message.get("tool_calls") or ():
                owner[call["id"]] = u
        unit_of.append(u)
    return tuple(tuple(u) for u in units)


@lru_cache(maxsize=512)
def _schema_view(session_key: tuple[str, ...], docs_json: str) -> View:
    return View(normal_view(json_view(docs_json)))


def schema_view(session: Session) -> View:
    """The view of a session's tool schema."""
    return _schema_view(session.involved_classes, json.dumps(function_docs(session)))


def make_point(
    session: str,
    split: str,
    turn: int,
    messages: Sequence[dict[str, Any]],
    turns: Sequence[int],
    kinds: Sequence[str],
    candidates: Sequence[Value],
    schema: View | None = None,
) -> Point:
    """A scoring point over ``messages`` (the query last) for ``candidates`` (module rule)."""
    views = tuple(View(message_view(m)) for m in messages)
    texts = tuple(message_text(m) for m in messages)
    excluded = {"in_query": 0, "in_schema": 0, "unavailable": 0}
    needed, holders = [], {}
    for value in dict.fromkeys(candidates):
        if views[-1].holds(value):
            excluded["in_query"] += 1
        elif schema is not None and schema.holds(value):
            excluded["in_schema"] += 1
        else:
            found = tuple(i for i in range(len(views) - 1) if views[i].holds(value))
            if found:
                needed.append(value)
                holders[value] = found
            else:
                excluded["unavailable"] += 1
    return Point(
        session=session,
        split=split,
        turn=turn,
        messages=tuple(messages),
        texts=texts,
        costs=np.array([whitespace_cost(t) for t in texts], dtype=np.int64),
        views=views,
        turns=tuple(turns),
        kinds=tuple(kinds),
        units=tool_units(messages),
        needed=tuple(needed),
        holders=holders,
        excluded=excluded,
    )


def transcript_points(transcript: Transcript) -> list[Point]:
    """The scoring points of a transcript, turns 1.. (0-based) in order."""
    session = transcript.session
    schema = schema_view(session)
    out = []
    for t in range(1, len(session.turns)):
        end = transcript.user_index[t] + 1  # the history and the turn's first user message
        candidates = [v for call in transcript.calls[t] for v in leaf_values(call.arguments)]
        out.append(
            make_point(
                session.id,
                session.split,
                t,
                transcript.messages[:end],
                transcript.turns[:end],
                transcript.kinds[:end],
                candidates,
                schema,
            )
        )
    return out
