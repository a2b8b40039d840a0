"""The four benchmark templates (our own sentences): two controls and two targets.

Each template is a query pattern, a chain of fact patterns (upstream first: ``c1 .. ck``,
edge ``(c_{t+1}, c_t)`` meaning c_{t+1} depends on c_t), value pools for the slots, honeypot
sentences in three strengths and a verdict that turns the chain's facts into the answer.

- controls (depth 2, 4 honeypots): every chain block names the query's entity and shares its
  decisive words, so similarity alone keeps the chain;
- targets (depth 3, 2 honeypots): the middle block ``c2`` shares no word with the query;
  in *role* ``c1`` still names the user and the backup, in *profile* ``c1`` shares only the
  service identifier.

Honeypots share the query's decisive vocabulary but never complete the chain: they speak
about other entities (medium), add the query's own entity or a rule for another clearance /
profile (hard: near-confounders that still leave the answer unique), or share a single
decisive word (easy).  ``{other_<slot>}`` in a honeypot is a pool value the chain does not
use; ``{<slot>}`` is the chain's value.  The calibration that led to these sentences is in
``calibration.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .patterns import Pattern

STRENGTHS: tuple[str, ...] = ("easy", "medium", "hard")
REGIMES: tuple[str, ...] = ("control", "target")


@dataclass(frozen=True)
class Template:
    """One scenario family: query, labelled chain, honeypot pools and the verdict rule."""

    name: str
    regime: str
    query: Pattern
    chain: tuple[Pattern, ...]
    pools: Mapping[str, tuple[str, ...]]
    honeypots: Mapping[str, tuple[str, ...]]
    n_honeypots: int
    verdict: Callable[[Mapping[str, str]], str]
    #: text appended to every query (the reader ignores it)
    suffix: str = ""

    @property
    def depth(self) -> int:
        return len(self.chain)

    def read_answer(self, query: str, texts: Sequence[str]) -> str | None:
        """The answer derived from ``texts`` by walking the chain from the query, else None.

        Each chain pattern must be matched, consistently with the slots bound so far, by
        exactly one fact among ``texts``; a missing link or two conflicting facts give None.
        """
        bound = self.query.read(query.removesuffix(self.suffix))
        if bound is None:
            raise ValueError(f"query {query!r} does not fit template {self.name!r}")
        for pattern in self.chain:
            found = {tuple(sorted(m.items())) for t in texts if (m := pattern.read(t, **bound)) is not None}
            if len(found) != 1:
                return None
            bound = {**bound, **dict(found.pop())}
        return self.verdict(bound)


def _permission(values: Mapping[str, str]) -> str:
    return "yes" if values["permission"] == "may" else "no"


def expense_verdict(values: Mapping[str, str]) -> str:
    amount = int(values["amount"])
    return "yes" if amount <= int(values["threshold"]) and amount <= int(values["budget"]) else "no"


def threshold_verdict(values: Mapping[str, str]) -> str:
    return "yes" if int(values["reading"]) > int(values["limit"]) else "no"


EXPENSE = Template(
    name="expense",
    regime="control",
    query=Pattern("Is a {amount} dollar expense for project {project} allowed?"),
    chain=(
        Pattern("Each expense for project {project} is drawn from a {budget} dollar budget."),
        Pattern("An expense for project {project} is allowed up to {threshold} dollar."),
    ),
    pools={
        "project": ("Falcon", "Heron", "Lynx", "Otter", "Puma", "Wren", "Ibis", "Koala"),
        "budget": ("1200", "2500", "4000", "6500", "9000"),
        "threshold": ("300", "500", "800", "1500", "3000"),
        "amount": ("150", "250", "450", "700", "1100", "2000"),
    },
    honeypots={
        "easy": (
            "Dollar amounts in reports are rounded to whole numbers.",
            "The expense portal is down for maintenance tonight.",
            "Project kickoffs are announced in the main channel.",
            "Receipts are allowed as photos or scans.",
            "The dollar exchange rate is updated daily.",
        ),
        "medium": (
            "Project {other_project} reviews each expense above a fixed amount.",
            "Dollar figures in project {other_project} expense reports are audited.",
            "Is the taxi expense for project {other_project} allowed?",
            "Project {other_project} caps every single expense at {other_threshold} dollar.",
            "Expense claims for project {other_project} are allowed monthly.",
        ),
        "hard": (
            "Project {project} asked whether a {other_amount} dollar expense is allowed.",
            "Project {project} logged a {other_amount} dollar expense for travel.",
            "An expense for project {other_project} is allowed up to {threshold} dollar.",
            "Each expense for project {other_project} is drawn from a {budget} dollar budget.",
            "Is a {amount} dollar expense allowed for project {other_project}?",
        ),
    },
    n_honeypots=4,
    verdict=expense_verdict,
)

THRESHOLD = Template(
    name="threshold",
    regime="control",
    query=Pattern("Does the {unit} pressure reading exceed its limit?"),
    chain=(
        Pattern("The pressure limit of the {unit} is {limit} kilopascals."),
        Pattern("The latest pressure reading of the {unit} is {reading} kilopascals."),
    ),
    pools={
        "unit": ("boiler", "chiller", "compressor", "autoclave", "kiln", "reactor", "turbine", "condenser"),
        "limit": ("180", "220", "260", "300", "340"),
        "reading": ("150", "200", "240", "280", "320", "360"),
    },
    honeypots={
        "easy": (
            "The pressure gauges were recalibrated last year.",
            "Each reading is stored for ninety days.",
            "Limit switches are checked during the annual audit.",
            "The control room display shows every reading in kilopascals.",
            "Sensors that exceed their service life are replaced.",
        ),
        "medium": (
            "The pressure limit of the {other_unit} is {other_limit} kilopascals.",
            "The latest pressure reading of the {other_unit} is {other_reading} kilopascals.",
            "A pressure reading that exceeds its limit raises an alarm.",
            "Does the pressure reading exceed its limit during startup?",
            "The {other_unit} pressure reading must not exceed its limit.",
        ),
        "hard": (
            "The {unit} pressure reading was checked against its limit yesterday.",
            "The {unit} pressure reading is logged every minute.",
            "The pressure limit of the {other_unit} is {limit} kilopascals.",
            "The latest pressure reading of the {other_unit} is {reading} kilopascals.",
            "Does the {other_unit} pressure reading exceed its limit?",
        ),
    },
    n_honeypots=4,
    verdict=threshold_verdict,
)

ROLE = Template(
    name="role",
    regime="target",
    query=Pattern("May {user} delete the production backup?"),
    chain=(
        Pattern("{user} is assigned to the {bundle} backup bundle."),
        Pattern("Bundle {bundle} grants clearance {tier} across every storage cluster."),
        Pattern("Clearance {tier} {permission} delete the production backup."),
    ),
    pools={
        "user": ("Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro"),
        "bundle": ("orchid", "basalt", "juniper", "cobalt", "saffron", "tundra", "quartz", "maple"),
        "tier": ("T2", "T3", "T4", "T5", "T6", "T7"),
        "permission": ("may", "cannot"),
    },
    honeypots={
        "easy": (
            "Backup tapes are rotated to the offsite vault monthly.",
            "The production floor was quiet during the audit.",
            "Interns may delete their own draft documents.",
            "The backup generator was serviced in spring.",
        ),
        "medium": (
            "Requests to delete the production backup are logged.",
            "Nobody should delete the production backup at night.",
            "Only storage staff delete the production backup.",
            "Deleting the production backup requires a ticket from {other_user}.",
        ),
        "hard": (
            "{user} asked whether to delete the production backup.",
            "Clearance {other_tier} may delete the production backup.",
            "{user} reviewed who may delete the production backup.",
            "Clearance {other_tier} cannot delete the production backup.",
        ),
    },
    n_honeypots=2,
    verdict=_permission,
)

PROFILE = Template(
    name="profile",
    regime="target",
    query=Pattern("May {service} send telemetry directly to the collector?"),
    chain=(
        Pattern("{service} has held route ticket {ticket} since its spring platform migration."),
        Pattern("Route ticket {ticket} selects relay profile {profile} for outbound streams."),
        Pattern("Relay profile {profile} {permission} send telemetry directly to the collector."),
    ),
    pools={
        "service": ("orion-7", "vega-2", "lyra-9", "draco-4", "hydra-5", "cetus-3", "pavo-8", "ara-6"),
        "ticket": ("RT-114", "RT-208", "RT-315", "RT-442", "RT-570", "RT-693"),
        "profile": ("Amber", "Slate", "Ivory", "Onyx", "Coral", "Jade"),
        "permission": ("may", "cannot"),
    },
    honeypots={
        "easy": (
            "The collector dashboard was redesigned in spring.",
            "Telemetry retention is ninety days.",
            "Telemetry dashboards refresh every minute.",
            "Nobody may send parcels from the mailroom after six.",
        ),
        "medium": (
            "Telemetry sent directly to the collector is sampled.",
            "The collector accepts telemetry sent directly from agents.",
            "Sending telemetry directly to the collector skips buffering.",
            "Agents may send telemetry to the collector via gateways.",
        ),
        "hard": (
            "{service} tried to send telemetry directly to the collector.",
            "Relay profile {other_profile} may send telemetry directly to the collector.",
            "{service} was asked to send telemetry to the collector.",
            "Relay profile {other_profile} cannot send telemetry directly to the collector.",
        ),
    },
    n_honeypots=2,
    verdict=_permission,
)

TEMPLATES: dict[str, Template] = {t.name: t for t in (EXPENSE, THRESHOLD, ROLE, PROFILE)}
CONTROLS: tuple[str, ...] = tuple(n for n, t in TEMPLATES.items() if t.regime == "control")
TARGETS: tuple[str, ...] = tuple(n for n, t in TEMPLATES.items() if t.regime == "target")
