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

The needed value is the fact's value (the name, the city, the date as written); the
turn stating it is its only holder.  ``points(count, ...)`` returns scoring points in the
form of ``dsgc_bench.bfcl.points`` so every BFCL policy runs on them unchanged; budgets
are fractions of the history as there.  All texts are written for this harness.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from .bfcl.points import Point, make_point
from .bfcl.values import normal_value

KINDS = ("name", "city", "birthday")
#: distractor facts of the same kind per conversation
DISTRACTORS = 4
#: filler exchanges (user + assistant) per conversation
FILLER_TURNS = (24, 40)

_NAMES = """Rowan Tembe, Ilse Marwick, Tomas Okafor, Priya Lindqvist, Mateo Halloran, Yuki Brennan,
Odile Nakamura, Kwame Sorensen, Lena Castellanos, Arjun Pellegrini, Freya Obuya, Dmitri Aldana,
Sanne Whitlock, Emeka Rasmussen, Carmen Holloway, Jonas Adeyemi, Noor Fairbanks, Elias Moreau""".replace("\n", " ").split(", ")
_CITIES = """Tampere, Porto, Valparaiso, Ljubljana, Hobart, Kraków, Winnipeg, Cusco, Bergen, Tbilisi,
Leipzig, Rosario, Nagano, Cork, Daejeon, Asheville, Trieste, Mombasa""".replace("\n", " ").split(", ")
_MONTHS = "January February March April May June July August September October November December".split()
_RELATIONS = ("sister", "colleague", "neighbour", "cousin", "landlord", "dentist", "manager", "best friend")

_STATE = {
    "name": [
        "Before we start: my name is {v}, in case you need it for anything.",
        "Quick introduction, I'm {v}, and I'll be asking a lot of questions today.",
    ],
    "city": [
        "For context, I live in {v} now; I moved there two years ago.",
        "I should mention that my home is in {v}, so keep that in mind for local tips.",
    ],
    "birthday": [
        "Small thing to remember: my birthday is {v}, and I like to plan around it.",
        "By the way, I was born on {v}, if dates ever matter for this.",
    ],
}
_DISTRACT = {
    "name": ["My {r} is called {v}, and she keeps giving me advice.", "I had lunch with my {r}, {v}, yesterday."],
    "city": ["My {r} lives in {v} and loves it there.", "My {r} just moved to {v} for a new job."],
    "birthday": ["My {r}'s birthday is {v}, so I need a present soon.", "My {r} was born on {v}, the same week as a holiday."],
}
_ASK = {
    "name": ["What is my name again?", "Remind me, what did I say my name was?"],
    "city": ["Remind me, which city do I live in?", "Where did I tell you my home is?"],
    "birthday": ["When is my birthday again?", "Remind me of my date of birth, please."],
}
_ACK = ["Noted, thanks for telling me.", "Got it, I will keep that in mind.", "Thanks, that helps."]

_TOPICS = {
    "cooking": (
        ["How long should I roast {x} at a medium heat?", "What can I add to {x} to make it less bland?", "Can I freeze {x} and reheat it later?"],
        ["roasted vegetables", "a lentil soup", "a tomato sauce", "a rice dish", "a chicken stew", "a bean salad"],
        ["About forty minutes usually works; turn it once halfway.", "A little acid, such as lemon, and a pinch of salt go a long way.", "Yes, most of it freezes well for a couple of months in a sealed box."],
    ),
    "travel": (
        ["What should I pack for {x}?", "How early should I get to the station for {x}?", "Is it worth buying insurance for {x}?"],
        ["a weekend hike", "a long train trip", "a beach holiday", "a winter city break", "a work conference", "a camping night"],
        ["Layers, a rain shell and comfortable shoes cover most cases.", "Half an hour is plenty unless you need to buy a ticket on the spot.", "For longer or costly trips it usually pays for itself."],
    ),
    "garden": (
        ["When is the right time to plant {x}?", "How often should I water {x}?", "Why are the leaves of {x} turning yellow?"],
        ["tomatoes", "basil", "a young apple tree", "lavender", "spring bulbs", "strawberries"],
        ["Plant after the last frost, once the soil has warmed up.", "Water deeply twice a week rather than a little every day.", "Often it is too much water or too little light."],
    ),
    "money": (
        ["How much should I keep aside for {x}?", "Is it smarter to pay off {x} first?", "How do I track spending on {x}?"],
        ["emergencies", "a new laptop", "the car loan", "a credit card", "groceries", "subscriptions"],
        ["Three months of basic costs is a common starting point.", "Usually the debt with the highest interest goes first.", "A simple weekly check of your statements is enough to start."],
    ),
    "fitness": (
        ["How many times a week should I do {x}?", "What should I eat before {x}?", "How do I avoid soreness after {x}?"],
        ["strength training", "a long run", "a yoga class", "swimming laps", "a cycling tour", "interval sessions"],
        ["Two or three sessions with rest days between them is a good base.", "Something light with carbohydrates an hour or two before.", "Warm up, stretch gently afterwards and build up slowly."],
    ),
    "reading": (
        ["Can you suggest something like {x}?", "How do I make time for {x}?", "Is it better to read {x} in print or on a screen?"],
        ["a slow mystery novel", "a popular science book", "short stories", "a travel memoir", "poetry", "a history of cities"],
        ["Try an author with a similar pace and a strong sense of place.", "Ten pages before bed adds up to a book a month.", "Print is easier on the eyes for long sessions; screens are handy on trips."],
    ),
}


@dataclass(frozen=True)
class Conversation:
    """A long-range conversation: messages (the question last), the fact and its turn."""

    seed: int
    kind: str
    value: str
    messages: tuple[dict[str, str], ...]
    fact_index: int


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


def _filler(rng: random.Random) -> tuple[str, str]:
    questions, things, answers = _TOPICS[rng.choice(sorted(_TOPICS))]
    return rng.choice(questions).format(x=rng.choice(things)), rng.choice(answers)


def conversation(seed: int, kind: str | None = None) -> Conversation:
    """One conversation (module docstring); ``kind`` defaults to ``KINDS[seed % 3]``."""
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)] if kind is None else kind
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    value, *others = _values(kind, rng, DISTRACTORS + 1)
    turns = [_filler(rng) for _ in range(rng.randint(*FILLER_TURNS))]
    fact_turn = rng.randint(0, 3)
    spots = sorted(rng.sample(range(fact_turn + 1, len(turns)), DISTRACTORS))
    for spot, other in zip(reversed(spots), reversed(others)):
        text = rng.choice(_DISTRACT[kind]).format(r=rng.choice(_RELATIONS), v=other)
        turns.insert(spot, (text, rng.choice(_ACK)))
    turns.insert(fact_turn, (rng.choice(_STATE[kind]).format(v=value), rng.choice(_ACK)))
    messages: list[dict[str, str]] = []
    for user, reply in turns:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": rng.choice(_ASK[kind])})
    return Conversation(seed, kind, value, tuple(messages), 2 * fact_turn)


def to_point(conv: Conversation) -> Point:
    """The conversation as a scoring point: the question is the query, the fact the needed value."""
    turns = [k // 2 for k in range(len(conv.messages))]
    kinds = ["user" if m["role"] == "user" else "reply" for m in conv.messages]
    needed: Any = normal_value(conv.value)
    point = make_point(f"longrange_{conv.seed}", "longrange", turns[-1], conv.messages, turns, kinds, [needed])
    if point.holders.get(needed) != (conv.fact_index,):
        raise AssertionError(f"seed {conv.seed}: the fact must have exactly one holder, got {point.holders}")
    return point


def points(count: int = 60, first_seed: int = 0) -> list[Point]:
    """``count`` long-range scoring points, seeds ``first_seed ..``."""
    return [to_point(conversation(s)) for s in range(first_seed, first_seed + count)]
