"""Cost units, and scores on the text a policy actually sends.

**Cost units.**  ``UNITS`` maps a unit's name to the ``tokenizer=`` option of ``dsgc_fast``:
``"tokens"`` is the store's default (``None``: ``token_counts.default_tokenizer()``, o200k_base
with the ``tokens`` extra) with chat framing; ``"whitespace"`` is the paper's cost, the suite's
unit before budgets were in model tokens.  A message costs exactly what ``MemoryStore`` and
``select`` charge for it: ``token_counts.block_tokens(message_text(m), m, counter)`` (the
public functions the store calls), so a policy outside the store and the store itself are
charged alike.  ``in_unit(point, unit)`` is a scoring point with its costs in that unit; its
budget at share f is the live roots' cost plus ``ceil(f * cost of the rest)``
(``Point.budget``).

**Sent text.**  A policy answers with a ``Sent``: the messages it sends, in order, each with
the position of the history message it stands for (None for a message the policy added, such
as the store's binding table), and *notes*, text the policy sends outside the transcript (the
value-level oracle's ``key: value`` lines).  A sent message may differ from its original (a
blanked or cut tool result, a digest): it is scored on its own content.

**Scores** (``score_sent``): a needed value is *kept* when the view (``values``) of a sent
message or note holds it, so a blanked result keeps none of its values and a digest keeps the
values its text holds; ``used`` is the charged cost of everything sent (messages at their
cost in the unit, notes at ``counter(note)``); ``broken`` counts tool calls whose call and
result are not both sent or both dropped; ``invalid`` counts the transcript problems of
``transcript_problems``; ``misreported`` is 1 when the policy reports its own cost (``select``'s
``used``) and that differs from the charged cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgc_fast.memory.messages import message_text
from dsgc_fast.memory.token_counts import TokenCounter, block_tokens, token_counter

from .metrics import Score, broken_pairs
from .points import Point
from .values import View, message_view, normal_view

#: cost unit -> the ``tokenizer=`` option that counts it
UNITS: dict[str, str | None] = {"whitespace": "whitespace", "tokens": None}
#: the fields of a chat message a provider reads (annotations such as ``"dsgc"`` are not sent)
SENT_FIELDS: tuple[str, ...] = ("role", "content", "name", "tool_calls", "tool_call_id")


def provider_form(message: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``message`` a provider reads (``SENT_FIELDS``)."""
    return {k: message[k] for k in SENT_FIELDS if k in message}


def counter_of(unit: str) -> TokenCounter:
    """The ``TokenCounter`` of a cost unit (``UNITS``)."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {tuple(UNITS)}, got {unit!r}")
    return token_counter(UNITS[unit])


def message_cost(message: Mapping[str, Any], counter: TokenCounter) -> int:
    """What the store charges for ``message`` under ``counter`` (framing included when it frames)."""
    return int(block_tokens(message_text(message), message, counter))


def in_unit(point: Point, unit: str) -> Point:
    """``point`` with every block's cost in ``unit`` (the needed values and views unchanged)."""
    counter = counter_of(unit)
    costs = np.array([message_cost(m, counter) for m in point.messages], dtype=np.int64)
    return dataclasses.replace(point, costs=costs)


@dataclass(frozen=True)
class Sent:
    """What a policy sends (module docstring): ``messages`` in order, ``origins[k]`` the history
    position ``messages[k]`` stands for (None: added), ``notes`` outside the transcript,
    ``over_budget`` when even the roots did not fit, ``reported`` the cost the policy reports
    itself (None: it reports none)."""

    messages: tuple[dict[str, Any], ...]
    origins: tuple[int | None, ...]
    notes: tuple[str, ...] = ()
    over_budget: bool = False
    reported: int | None = None

    def __post_init__(self) -> None:
        if len(self.messages) != len(self.origins):
            raise ValueError(f"{len(self.messages)} messages but {len(self.origins)} origins")


def sent_of(
    point: Point, kept: Sequence[int], replaced: Mapping[int, dict[str, Any]] | None = None, **fields: Any
) -> Sent:
    """The history messages at positions ``kept`` (ascending), each as ``replaced[i]`` when given."""
    replaced = replaced or {}
    order = sorted(int(i) for i in kept)
    return Sent(tuple(replaced.get(i, point.messages[i]) for i in order), tuple(order), **fields)


def charged(sent: Sent, counter: TokenCounter) -> int:
    """The cost of everything ``sent`` sends: its messages as the store counts them, its notes as text."""
    return sum(message_cost(m, counter) for m in sent.messages) + sum(int(counter(note)) for note in sent.notes)


def sent_views(point: Point, sent: Sent) -> list[View]:
    """The view of every sent message and note (a message equal to its original reuses the point's view)."""
    out = []
    for message, origin in zip(sent.messages, sent.origins):
        same = origin is not None and message == point.messages[origin]
        out.append(point.views[origin] if same and origin is not None else View(message_view(message)))
    return out + [View(normal_view(note)) for note in sent.notes]


def transcript_problems(point: Point, sent: Sent) -> list[str]:
    """Why the sent messages are not a valid transcript of the point (empty when valid).

    Valid: the sent history messages keep their order, each at most once; every live root
    (``Point.roots``) is sent unchanged (``provider_form``); every tool result answers a call of the assistant
    message before it, with only tool results between; every call of a sent assistant message
    has its result sent before the next message that is not a tool result.
    """
    problems = []
    origins = [o for o in sent.origins if o is not None]
    if origins != sorted(set(origins)):
        problems.append("history messages out of order or repeated")
    at = dict(zip(sent.origins, sent.messages))
    problems += [
        f"live root {r} not sent unchanged"
        for r in point.roots
        if r not in at or provider_form(at[r]) != provider_form(point.messages[r])
    ]
    pending: set[str] = set()
    for k, message in enumerate(sent.messages):
        if message.get("role") == "tool":
            call = message.get("tool_call_id")
            if call in pending:
                pending.discard(call)
            else:
                problems.append(f"sent message {k}: a tool result answering no open call ({call!r})")
            continue
        if pending:
            problems.append(f"sent message {k}: calls {sorted(pending)} left without their results")
        pending = {c["id"] for c in message.get("tool_calls") or ()}
    if pending:
        problems.append(f"calls {sorted(pending)} left without their results at the end")
    return problems


@dataclass(frozen=True)
class SentScore(Score):
    """A ``metrics.Score`` with the transcript problems and the cost mismatch of the sent text."""

    invalid: int = 0
    misreported: int = 0


def score_sent(point: Point, sent: Sent, budget: int, counter: TokenCounter) -> SentScore:
    """The score of ``sent`` at ``point`` (module docstring), costs under ``counter``."""
    views = sent_views(point, sent)
    used = charged(sent, counter)
    return SentScore(
        session=point.session,
        split=point.split,
        turn=point.turn,
        needed=len(point.needed),
        kept=sum(any(v.holds(value) for v in views) for value in point.needed),
        broken=broken_pairs(point, [o for o in sent.origins if o is not None]),
        used=used,
        budget=budget,
        over_budget=sent.over_budget,
        invalid=len(transcript_problems(point, sent)),
        misreported=int(sent.reported is not None and sent.reported != used),
    )
