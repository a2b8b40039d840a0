"""The ``paper`` scenario family's templates and filler pool (our own sentences).

Same four templates, regimes, chain depths and honeypot counts as the neutral family
(``templates.py``), written to carry the mechanisms of the paper's own generator:

- four values per slot; eight honeypot sentences per strength and template, several of the
  medium ones naming the query's own entity;
- a pool of only 16 generic filler sentences (10-13 words) that the generator draws from
  with replacement, so stores hold identical copies;
- every query ends with ``SUFFIX``;
- role: c3 shares only "the" and "nightly" with the query, c1 the user and "snapshot";
  profile: c1 is short and shares only the service identifier, c2 shares the function word
  "to" with the query.
"""

from __future__ import annotations

from collections.abc import Mapping

from .patterns import Pattern
from .templates import Template, expense_verdict, threshold_verdict

#: the permission words of the targets' c3 that grant the action (the others deny it)
GRANTS: frozenset[str] = frozenset({"permits", "allows"})


def permission_verdict(values: Mapping[str, str]) -> str:
    """ "yes" when c3's permission word grants the action."""
    return "yes" if values["permission"] in GRANTS else "no"


#: the text every query of the family ends with
SUFFIX = " Answer yes or no."

#: generic background sentences, drawn with replacement (10-13 words each)
FILLERS: tuple[str, ...] = (
    "Please return the umbrellas to reception or stack them by the door.",
    "A list of lost items is kept next to the front entrance.",
    "Fresh fruit is delivered to every floor on Monday and Thursday mornings.",
    "Our cafeteria will serve a vegetarian lunch menu every Thursday this month.",
    "Delivery drivers should use the loading bay behind our building.",
    "Parking spots near our north entrance are reserved for visitors on Mondays.",
    "Remember to submit your travel receipts before each quarter ends.",
    "A new coffee machine was installed in our kitchen near the lifts.",
    "Visitors should sign the guest book at reception and wear a badge.",
    "Our gym downstairs offers free yoga classes on Tuesday and Friday mornings.",
    "Lost keys and badges are kept at the security desk for a week.",
    "Courier pickups for outgoing packages happen every weekday at three.",
    "Someone left a blue scarf in meeting room six last Friday.",
    "Our elevator on the east side will be serviced next Saturday morning.",
    "Holiday requests for December should reach your manager by early November.",
    "Windows on floor three will be cleaned on Tuesday afternoon.",
)

EXPENSE = Template(
    name="expense",
    regime="control",
    query=Pattern("Can the {team} team approve a {amount} dollar expense?"),
    chain=(
        Pattern("The {team} team has a {budget} dollar budget for every expense."),
        Pattern("The {team} team can approve a single expense of up to {threshold} dollars."),
    ),
    pools={
        "team": ("Falcon", "Harbor", "Juniper", "Meridian"),
        "budget": ("1800", "3200", "5400", "7600"),
        "threshold": ("400", "900", "1500", "2500"),
        "amount": ("250", "700", "1200", "2100"),
    },
    honeypots={
        "easy": (
            "Expense reports are due on the last working day of the month.",
            "The finance portal shows every dollar amount with two decimals.",
            "Each team lead keeps a copy of the signed travel policy.",
            "Receipts older than a year are moved to the archive.",
            "The approval workflow sends a reminder after three days.",
            "Currency conversions use the rate published each morning.",
            "Office supplies are ordered through the shared catalogue.",
            "Team offsites are announced at least a month in advance.",
        ),
        "medium": (
            "Finance checks every expense the {other_team} team files.",
            "The {team} team asked finance about approval rules.",
            "The {other_team} team may approve catering costs this quarter.",
            "The {team} team filed a taxi expense of {other_amount} dollars last week.",
            "A dollar expense above the limit needs a second approver.",
            "The {other_team} team spent {other_budget} dollars of its expense budget.",
            "Every expense over {other_threshold} dollars needs a manager's signature.",
            "The {team} team reviews every approved expense on Fridays.",
        ),
        "hard": (
            "The {other_team} team has a {budget} dollar budget for every expense.",
            "The {other_team} team can approve a single expense of up to {threshold} dollars.",
            "The {team} team wants to approve a {other_amount} dollar expense.",
            "Can the {team} team approve a {other_amount} dollar expense for travel?",
            "The {team} team approved a {amount} dollar expense for the {other_team} team.",
            "The {other_team} team can approve a {amount} dollar expense.",
            "An expense of {amount} dollars was approved by the {other_team} team.",
            "The {team} team has approved every expense under {other_threshold} dollars.",
        ),
    },
    n_honeypots=4,
    verdict=expense_verdict,
    suffix=SUFFIX,
)

THRESHOLD = Template(
    name="threshold",
    regime="control",
    query=Pattern("Has the {sensor} sensor crossed its alarm limit?"),
    chain=(
        Pattern("The alarm limit of the {sensor} sensor is {limit} degrees."),
        Pattern("The {sensor} sensor last reported {reading} degrees against its alarm limit."),
    ),
    pools={
        "sensor": ("furnace", "cellar", "dryer", "smelter"),
        "limit": ("210", "260", "310", "360"),
        "reading": ("190", "240", "290", "380"),
    },
    honeypots={
        "easy": (
            "Sensors in the old building are replaced every five years.",
            "The maintenance crew logs each visit in the shared sheet.",
            "Temperature charts are printed for the monthly review.",
            "The control room keeps spare batteries in the top drawer.",
            "Alarm drills take place twice a year on a weekday.",
            "Technicians wear gloves when they open a cabinet.",
            "Each degree on the dial is marked in black ink.",
            "The plant manager signs off on every new procedure.",
        ),
        "medium": (
            "The alarm limit of the {other_sensor} sensor is {other_limit} degrees.",
            "The {sensor} sensor alarm was tested during a night shift.",
            "Did the {other_sensor} sensor trip an alarm this week?",
            "A sensor that crosses an alarm limit pages the duty engineer.",
            "The {other_sensor} sensor last reported {other_reading} degrees.",
            "The {sensor} sensor housing was cleaned on Monday.",
            "Alarm limits for every sensor are reviewed each spring.",
            "The {other_sensor} sensor tripped its alarm during startup.",
        ),
        "hard": (
            "The alarm limit of the {other_sensor} sensor is {limit} degrees.",
            "The {other_sensor} sensor last reported {reading} degrees against its alarm limit.",
            "The {sensor} sensor has crossed an alarm limit in the past.",
            "Has the {sensor} sensor crossed its alarm limit before?",
            "The {sensor} sensor alarm limit was discussed at the review.",
            "The {sensor} sensor reported {other_reading} degrees during the test.",
            "The {sensor} sensor alarm limit used to be {other_limit} degrees.",
            "The {other_sensor} sensor has crossed its alarm limit twice.",
        ),
    },
    n_honeypots=4,
    verdict=threshold_verdict,
    suffix=SUFFIX,
)

ROLE = Template(
    name="role",
    regime="target",
    query=Pattern("May {user} erase the nightly database snapshot?"),
    chain=(
        Pattern("{user} is on the {group} rota for snapshot duty through spring and summer."),
        Pattern("Rota {group} comes with access level {level} in our staff directory for all regions."),
        Pattern("Access level {level} {permission} erasing the nightly snapshots."),
    ),
    pools={
        "user": ("Alice", "Marek", "Sunita", "Tobias"),
        "group": ("heron", "quill", "ember", "fjord"),
        "level": ("L2", "L3", "L4", "L5"),
        "permission": ("permits", "allows", "forbids", "blocks"),
    },
    honeypots={
        "easy": (
            "The office plants are watered every second day.",
            "Database courses are listed on the training page.",
            "The nightly bus leaves from the corner at eleven.",
            "Snapshots of the launch party are in the shared album.",
            "New laptops arrive with the standard image installed.",
            "The cleaning crew empties the bins after eight.",
            "Security badges must be visible inside the building.",
            "The wiki has a page on naming conventions.",
        ),
        "medium": (
            "{user} asked the database team about the nightly snapshot schedule.",
            "Erasing a database snapshot needs a second person to confirm.",
            "Requests to erase database tables go through a change ticket.",
            "The nightly database snapshot finishes before six in the morning.",
            "{user} restored a snapshot last week after a bad deploy.",
            "{other_user} keeps the nightly reports in a shared folder.",
            "Snapshot retention for the billing service was extended last month.",
            "Database staff rotate the storage used for snapshots every quarter.",
        ),
        "hard": (
            "Access level {other_level} permits erasing the nightly snapshots.",
            "Access level {other_level} forbids erasing the nightly snapshots.",
            "{user} wants to erase the nightly database snapshot today.",
            "May {user} erase the nightly database snapshot of staging?",
            "{user} erased a nightly database snapshot by mistake once.",
            "{other_user} is on the {group} rota for snapshot duty through spring and summer.",
            "Rota {other_group} comes with access level {level} in our staff directory for all regions.",
            "{user} was told who may erase the nightly database snapshot.",
        ),
    },
    n_honeypots=2,
    verdict=permission_verdict,
    suffix=SUFFIX,
)

PROFILE = Template(
    name="profile",
    regime="target",
    query=Pattern("May {service} push its metrics straight to the central collector of the cluster?"),
    chain=(
        Pattern("{service} carries routing key {key} since March."),
        Pattern("Routing key {key} is mapped to relay tier {tier} for every outbound stream."),
        Pattern("Relay tier {tier} {permission} pushing metrics straight to the central collector at any hour."),
    ),
    pools={
        "service": ("nova-3", "atlas-8", "kepler-5", "vesta-2"),
        "key": ("RK-17", "RK-42", "RK-63", "RK-88"),
        "tier": ("Copper", "Cobalt", "Indigo", "Umber"),
        "permission": ("permits", "allows", "forbids", "blocks"),
    },
    honeypots={
        "easy": (
            "The metrics dashboard got a darker colour scheme.",
            "Central heating comes on in late October.",
            "The collector pins on the wall are from a trade fair.",
            "Straight answers are valued in the weekly review.",
            "Push notifications can be muted in the settings.",
            "The service desk closes early on Fridays.",
            "Every team shares one calendar for holidays.",
            "The old server room is now a storage area.",
        ),
        "medium": (
            "{service} batches metrics before they reach a collector.",
            "Pushed metrics skip sampling at the collector.",
            "Test agents may push metrics to collectors.",
            "The collector rejects metrics that arrive without a timestamp.",
            "{service} was asked to send fewer metrics upstream.",
            "Pushing metrics to the collector needs a valid token.",
            "The collector stores pushed metrics for thirty days.",
            "{other_service} stopped pushing metrics to the central collector.",
        ),
        "hard": (
            "Relay tier {other_tier} permits pushing metrics to the collector.",
            "Relay tier {other_tier} forbids pushing metrics to the collector.",
            "{service} tried to push metrics straight to the central collector.",
            "May {service} push metrics straight to the central collector today?",
            "{service} pushed metrics straight to the central collector once.",
            "{other_service} carries routing key {key} since March.",
            "Routing key {other_key} is mapped to relay tier {tier} for every outbound stream.",
            "{service} was told which tier may push metrics to the collector.",
        ),
    },
    n_honeypots=2,
    verdict=permission_verdict,
    suffix=SUFFIX,
)

TEMPLATES: dict[str, Template] = {t.name: t for t in (EXPENSE, THRESHOLD, ROLE, PROFILE)}
