"""The neutral background corpus the generator draws filler blocks from.

Fillers are short notes about disjoint teams, errands and schedules: they contain neither a
template's answer relation nor its decisive vocabulary (``tests/test_bench_scenarios.py``
checks this against every template).  They do contain ordinary function words ("the", "a",
"to"), as real notes do, so under the lexical encoder some fillers overlap a query weakly.

The corpus is the full product ``SUBJECTS x EVENTS x TIMES`` (24 x 25 x 20 = 12,000
distinct sentences) in product order, fixed for every seed; a scenario samples its fillers
from it with its own RNG.  A fixed corpus bounds the number of distinct texts, so the
sentence encoder embeds each at most once for all suites and seeds.
"""

from __future__ import annotations

import functools
import itertools

SUBJECTS: tuple[str, ...] = (
    "The design team",
    "Facilities",
    "The hiring panel",
    "The newsletter editor",
    "Marketing",
    "The Lisbon office",
    "The intern cohort",
    "The cafeteria crew",
    "The finance desk",
    "The reception staff",
    "The mobile squad",
    "The legal clinic",
    "The travel desk",
    "The photography club",
    "The choir",
    "The garden volunteers",
    "The chess club",
    "The wellness group",
    "The translation team",
    "The onboarding buddies",
    "The book club",
    "The parking office",
    "The events committee",
    "The sustainability circle",
)

EVENTS: tuple[str, ...] = (
    "moved the weekly sync",
    "repainted the lobby wall",
    "ordered new standing desks",
    "hosted a lunch talk",
    "rearranged the meeting rooms",
    "planned a river walk",
    "tested the fire alarm",
    "watered the hallway plants",
    "refreshed the welcome posters",
    "booked the rooftop terrace",
    "swapped the coffee beans",
    "cleaned the shared fridge",
    "printed the seating chart",
    "collected old umbrellas",
    "updated the holiday calendar",
    "replaced the whiteboard markers",
    "organized a quiz night",
    "fixed the squeaky door",
    "tidied the supply closet",
    "shared a recipe list",
    "polished the trophy shelf",
    "restocked the tea corner",
    "sorted the lost and found",
    "framed the group photo",
    "labelled the bike racks",
)

TIMES: tuple[str, ...] = (
    "on Monday",
    "on Tuesday morning",
    "on Wednesday",
    "on Thursday afternoon",
    "on Friday",
    "at noon",
    "after lunch",
    "before the holiday",
    "last weekend",
    "this morning",
    "in early spring",
    "during the heatwave",
    "after the town hall",
    "in late autumn",
    "over the summer",
    "at dawn",
    "before the picnic",
    "after the concert",
    "in January",
    "in October",
)


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    """All 12,000 filler sentences ("<subject> <event> <time>."), in product order."""
    return tuple(f"{s} {e} {t}." for s, e, t in itertools.product(SUBJECTS, EVENTS, TIMES))
