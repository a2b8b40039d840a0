"""The neutral background corpus the generator draws filler blocks from.

Fillers are short office and operations notes about disjoint teams, errands and schedules
(half the subjects and events are engineering operations, so that under the sentence encoder
some fillers sit near the targets' technical blocks).  They contain neither a template's
answer relation nor its decisive vocabulary (``tests/test_bench_scenarios.py`` checks this
against every template), but they do contain ordinary function words ("the", "a", "to"), as
real notes do, so under the lexical encoder some fillers overlap a query weakly.

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
    "The platform on-call",
    "The database squad",
    "The network crew",
    "The release desk",
    "The security rota",
    "The build team",
    "The search team",
    "The web operations group",
    "The identity team",
    "The data platform crew",
    "The support engineers",
    "The infrastructure guild",
)

EVENTS: tuple[str, ...] = (
    "moved the weekly sync",
    "repainted the lobby wall",
    "ordered new standing desks",
    "hosted a lunch talk",
    "rearranged the meeting rooms",
    "drained a message queue",
    "rerouted the status webhooks",
    "rolled out a logging agent",
    "muted a noisy pager alert",
    "reindexed the metrics store",
    "updated the holiday calendar",
    "organized a quiz night",
    "rotated the signing keys",
    "patched the staging cluster",
    "renamed the build pipeline",
    "archived old log shards",
    "rebooted the print server",
    "upgraded the wiki engine",
    "migrated the chat bots",
    "reviewed the firewall rules",
    "cleared the build cache",
    "resized the test runners",
    "tuned the search index",
    "replaced a failing disk",
    "renewed the domain certificates",
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


def note_number(k: int) -> int:
    """The five-digit note number of corpus entry ``k``: 10000 + 7919 k mod 90000 (distinct for k < 90000)."""
    return 10000 + (7919 * k) % 90000


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    """All 12,000 filler sentences ("<subject> <event> <time> (#<note>)."), in product order."""
    return tuple(
        f"{s} {e} {t} (#{note_number(k)})." for k, (s, e, t) in enumerate(itertools.product(SUBJECTS, EVENTS, TIMES))
    )
