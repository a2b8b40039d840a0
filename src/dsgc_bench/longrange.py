"""Long-range memory: a personal fact stated once, asked about dozens of messages later.

``conversation(seed)`` builds one plain chat (user and assistant turns, no tools),
deterministically from ``seed``:

- early on (one of the first four turns) the user states one personal fact about
  themself, of one of three kinds: their *name*, the *city* they live in, or their
  *birthday* (a date);
- ``DISTRACTORS`` other turns state a fact of the same kind about someone else (a
  sister's name, a colleague's city, a neighbour's birthday), with other values, spread
  over the conversation;
- the rest are everyday questions (cooking, travel, gardening, money, fitness, reading)
  and short assistant answers, composed from phrase banks;
- every user turn is followed by an assistant reply that does not repeat the fact;
- the last user turn asks for the fact without stating it ("Remind me, which city do I
  live in?").

**Tool-heavy variant** (``tools=True``): the same conversation (the same fact, distractors,
everyday turns and question: the tool draws come from a random stream of their own), in
which the assistant answers ``TOOL_SHARE`` of the everyday questions after one or two tool
calls of the question's topic (a recipe lookup, a trip planner, plant care, a spending
report, a workout plan, a library search), each an assistant message with one tool call
followed by its JSON result.  The tool units never mention a name, city or date, so the
fact keeps its single holder; they are the working set the agent policy lifts, which can
crowd the old fact out.

The needed value is the fact's value (the name, the city, the date as written); the
turn stating it is its only holder.  ``points(seeds, tools=...)`` returns one scoring
point per seed and kind, in the form of ``dsgc_bench.bfcl.points``, so every BFCL policy
runs on them unchanged; budgets are fractions of the history as there.  ``PROBES`` are
other questions to ask of the same history (every fact question and one question per
everyday topic).  All texts are written for this harness; the phrase banks are data, in
``longrange.json`` (names, cities, months, relations, the fact and topic sentences).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import package_data
from .bfcl.points import Point, make_point
from .bfcl.values import normal_value

KINDS = ("name", "city", "birthday")
#: distractor facts of the same kind per conversation
DISTRACTORS = 4
#: filler exchanges (user + assistant) per conversation
FILLER_TURNS = (24, 40)
#: share of the everyday questions answered with tool calls in the tool-heavy variant
TOOL_SHARE = 0.75

_BANKS: dict[str, Any] = package_data.load("longrange.json")
_NAMES: list[str] = _BANKS["names"]
_CITIES: list[str] = _BANKS["cities"]
_MONTHS: list[str] = _BANKS["months"]
_RELATIONS: list[str] = _BANKS["relations"]
#: per fact kind: how the user states it, how a distractor states someone else's, how it is asked
_STATE: dict[str, list[str]] = _BANKS["state"]
_DISTRACT: dict[str, list[str]] = _BANKS["distract"]
_ASK: dict[str, list[str]] = _BANKS["ask"]
_ACK: list[str] = _BANKS["ack"]
#: per everyday topic: (question patterns over ``{x}``, things ``x``, answers)
_TOPICS: dict[str, tuple[list[str], list[str], list[str]]] = {
    topic: (bank["questions"], bank["things"], bank["answers"]) for topic, bank in _BANKS["topics"].items()
}


#: per topic: the tool's name, its argument's name, and a function of (thing, rng) giving
#: the result; none of them mentions a name, a city or a date
_TOOLS: dict[str, tuple[str, str, Any]] = {
    "cooking": (
        "find_recipe",
        "dish",
        lambda x, r: {
            "dish": x,
            "minutes": r.randrange(20, 95, 5),
            "oven_c": r.randrange(160, 230, 10),
            "servings": r.randint(2, 6),
            "steps": r.randint(3, 9),
        },
    ),
    "travel": (
        "trip_planner",
        "trip",
        lambda x, r: {
            "trip": x,
            "departures": sorted(f"{r.randint(5, 21):02d}:{r.randrange(0, 60, 5):02d}" for _ in range(3)),
            "platform": r.randint(1, 12),
            "delay_minutes": r.choice([0, 0, 5, 10, 15]),
        },
    ),
    "garden": (
        "plant_care",
        "plant",
        lambda x, r: {
            "plant": x,
            "water_per_week": r.randint(1, 4),
            "sun": r.choice(["full", "partial", "shade"]),
            "frost_hardy": r.random() < 0.5,
        },
    ),
    "money": (
        "spending_report",
        "category",
        lambda x, r: {
            "category": x,
            "months": r.randint(1, 6),
            "total": round(r.uniform(20, 900), 2),
            "limit": r.randrange(100, 1000, 50),
        },
    ),
    "fitness": (
        "plan_workout",
        "activity",
        lambda x, r: {
            "activity": x,
            "level": r.choice(["beginner", "intermediate"]),
            "sessions_per_week": r.randint(2, 5),
            "minutes": r.randrange(20, 65, 5),
            "rest_days": r.randint(1, 3),
        },
    ),
    "reading": (
        "search_library",
        "query",
        lambda x, r: {
            "query": x,
            "results": r.randint(3, 40),
            "available": r.randint(0, 3),
            "branch": r.choice(["central", "north", "riverside"]),
        },
    ),
}

#: questions to ask of a history besides its own (the hub check): every fact question and
#: the first question of every everyday topic
PROBES: tuple[str, ...] = (
    *(q for kind in KINDS for q in _ASK[kind]),
    *(questions[0].format(x=things[0]) for questions, things, _ in _TOPICS.values()),
)


@dataclass(frozen=True)
class Conversation:
    """A long-range conversation: messages (the question last), the fact and its turn."""

    seed: int
    kind: str
    value: str
    messages: tuple[dict[str, Any], ...]
    fact_index: int
    tools: bool = False

    @property
    def session(self) -> str:
        """A name unique to the seed, kind and variant."""
        return f"longrange_{self.seed}_{self.kind}" + ("_tools" if self.tools else "")


def _date(rng: random.Random) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(_MONTHS)}"


def _values(kind: str, rng: random.Random, count: int) -> list[str]:
    if kind == "name":
        return rng.sample(_NAMES, count)
    if kind == "city":
        return rng.sample(_CITIES, count)
    out: list[str] = []
    while len(out) < count:
        d = _date(rng)
        if d not in out:
            out.append(d)
    return out


def _filler(rng: random.Random) -> tuple[str, str, tuple[str, str]]:
    """An everyday exchange and its (topic, thing)."""
    topic = rng.choice(sorted(_TOPICS))
    questions, things, answers = _TOPICS[topic]
    question, thing = rng.choice(questions), rng.choice(things)
    return question.format(x=thing), rng.choice(answers), (topic, thing)


def _tool_unit(turn: int, step: int, topic: str, thing: str, rng: random.Random) -> list[dict[str, Any]]:
    """An assistant tool call of the topic's tool and its JSON result."""
    name, argument, result = _TOOLS[topic]
    call_id = f"call_{turn}_{step}"
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({argument: thing})}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result(thing, rng))},
    ]


def conversation(seed: int, kind: str | None = None, *, tools: bool = False) -> Conversation:
    """One conversation (module docstring); ``kind`` defaults to ``KINDS[seed % 3]``."""
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)] if kind is None else kind
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    value, *others = _values(kind, rng, DISTRACTORS + 1)
    turns: list[tuple[str, str, tuple[str, str] | None]] = [_filler(rng) for _ in range(rng.randint(*FILLER_TURNS))]
    fact_turn = rng.randint(0, 3)
    spots = sorted(rng.sample(range(fact_turn + 1, len(turns)), DISTRACTORS))
    for spot, other in zip(reversed(spots), reversed(others)):
        text = rng.choice(_DISTRACT[kind]).format(r=rng.choice(_RELATIONS), v=other)
        turns.insert(spot, (text, rng.choice(_ACK), None))
    turns.insert(fact_turn, (rng.choice(_STATE[kind]).format(v=value), rng.choice(_ACK), None))
    tool_rng = random.Random(f"tools:{seed}:{kind}")
    messages: list[dict[str, Any]] = []
    fact_index = 0
    for t, (user, reply, topic) in enumerate(turns):
        if t == fact_turn:
            fact_index = len(messages)
        messages.append({"role": "user", "content": user})
        if tools and topic is not None and tool_rng.random() < TOOL_SHARE:
            subject, thing = topic
            for step in range(tool_rng.randint(1, 2)):  # a second call looks up another thing of the topic
                messages += _tool_unit(
                    t, step, subject, thing if step == 0 else tool_rng.choice(_TOPICS[subject][1]), tool_rng
                )
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": rng.choice(_ASK[kind])})
    return Conversation(seed, kind, value, tuple(messages), fact_index, tools)


def _kind(message: dict[str, Any]) -> str:
    if message["role"] == "user":
        return "user"
    if message["role"] == "tool":
        return "result"
    return "call" if message.get("tool_calls") else "reply"


def to_point(conv: Conversation, question: str | None = None) -> Point:
    """The conversation as a scoring point: the question (or ``question`` in its place) is the
    query, the fact the needed value."""
    messages = list(conv.messages)
    if question is not None:
        messages[-1] = {"role": "user", "content": question}
    kinds = [_kind(m) for m in messages]
    turns = [0] * len(messages)
    for k in range(1, len(messages)):
        turns[k] = turns[k - 1] + (kinds[k] == "user")
    needed: Any = normal_value(conv.value)
    point = make_point(conv.session, "longrange", turns[-1], messages, turns, kinds, [needed])
    if point.holders.get(needed) != (conv.fact_index,):
        raise AssertionError(f"{conv.session}: the fact must have exactly one holder, got {point.holders}")
    return point


def conversations(seeds: Iterable[int], *, tools: bool = False) -> list[Conversation]:
    """One conversation per seed and kind, seed by seed."""
    return [conversation(s, kind, tools=tools) for s in seeds for kind in KINDS]


def points(seeds: Iterable[int], *, tools: bool = False) -> list[Point]:
    """The scoring points of ``conversations(seeds, tools=tools)``."""
    return [to_point(c) for c in conversations(seeds, tools=tools)]
