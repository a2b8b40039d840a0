"""Sentence banks for the referent-session benchmark (our own sentences): three domains.

Each domain has a *parent* kind (account, file, document) and a *child* kind introduced
against a parent (ticket, constant, clause).  An entity is introduced once by an intro turn
that binds three referents: the kind's shared anaphor (``"that account"``, rebound by every
newer intro of the kind), the intro's definite description (``"the flagged account"``,
unique in a session) and the bare identifier (``"8841-C"``).  Later turns refer back by any
of the three forms through ``{ref}``; a child intro names its parent through ``{parent}``.

Template slots: ``{id}`` the entity's identifier, ``{parent}`` the parent reference,
``{parent_id}`` the parent's identifier, ``{ref}`` a reference to the entity a turn is
about, and the session pools ``{month}``, ``{day}``, ``{person}``, ``{amount}``,
``{number}``.  Every turn starts with its speaker (``user``, ``assistant``, ``tool``,
``system``) and a colon.

A query is asked about one entity of one kind; its *topic mentions* use the query's
vocabulary about some entity of that kind (a honeypot when the entity is not the one asked
about), its *honeypots* use the vocabulary without naming any entity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FORMS: tuple[str, ...] = ("anaphor", "description", "identifier")
KINDS: tuple[str, ...] = ("parent", "child")

POOLS: Mapping[str, tuple[str, ...]] = {
    "month": ("january", "march", "april", "june", "august", "october", "november"),
    "day": ("monday", "tuesday", "wednesday", "thursday", "friday"),
    "person": ("Priya", "Tomas", "Ines", "Kwame", "Mei", "Dario", "Saoirse", "Yusuf"),
    "amount": ("412 dollars", "1,980 dollars", "75 euros", "2,300 dollars", "640 pounds", "19 dollars"),
    "number": ("3", "5", "8", "12", "30", "45", "90", "250"),
}


@dataclass(frozen=True)
class Intro:
    """An intro turn: its template, the definite description it establishes, the id's gist."""

    text: str
    description: str
    gist: str


@dataclass(frozen=True)
class Kind:
    """An entity kind: shared anaphor, identifier pool, intro and mention templates."""

    noun: str
    anaphor: str
    ids: tuple[str, ...]
    intros: tuple[Intro, ...]
    mentions: tuple[str, ...]


@dataclass(frozen=True)
class Query:
    """The question turn (``{ref}`` = the entity asked about) and its same-topic distractors."""

    text: str
    topic_mentions: tuple[str, ...]
    honeypots: tuple[str, ...]


@dataclass(frozen=True)
class Domain:
    """One session family: system prompts, the two kinds, queries per kind, neutral fillers."""

    name: str
    systems: tuple[str, ...]
    parent: Kind
    child: Kind
    queries: Mapping[str, tuple[Query, ...]]
    fillers: tuple[str, ...]

    def kind(self, which: str) -> Kind:
        """The ``"parent"`` or ``"child"`` kind."""
        return self.parent if which == "parent" else self.child


SUPPORT = Domain(
    name="support",
    systems=(
        "system: you are the triage assistant of the billing support desk; answer briefly and cite ticket numbers",
        "system: you help support agents triage billing and account issues; never guess account details",
        "system: you are a support copilot for the payments team; keep replies short and factual",
    ),
    parent=Kind(
        noun="account",
        anaphor="that account",
        ids=("8841-C", "7702-B", "5310-A", "6627-D", "9154-E", "4486-F", "2239-G", "3075-H", "1196-K", "6408-M"),
        intros=(
            Intro(
                "user: account {id}, the one flagged last week, disputes a {amount} charge on its {month} invoice; "
                "the customer says nobody authorised it and wants it reversed before the next billing run",
                "the flagged account",
                "disputes a {month} charge",
            ),
            Intro(
                "user: a customer on account {id} reports it was locked after three failed logins on {day}; "
                "she reset her password twice already and still cannot reach the payment page",
                "the locked account",
                "locked after failed logins",
            ),
            Intro(
                "tool: crm lookup for account {id}: status dormant since {month}, last login 214 days ago, "
                "region north, plan basic, new card payment of {amount} received yesterday",
                "the dormant account",
                "dormant since {month}",
            ),
            Intro(
                "user: account {id} was merged into a duplicate profile during the {month} cleanup and lost its "
                "invoices; the customer needs a copy of every invoice for an external audit",
                "the merged account",
                "merged in the {month} cleanup",
            ),
            Intro(
                "user: {person} from finance asked us to watch account {id}, which has been on a payment plan "
                "since {month} and missed the last instalment by four days",
                "the payment plan account",
                "payment plan since {month}",
            ),
            Intro(
                "tool: fraud screen raised a velocity alert on account {id}: five refund requests in one hour "
                "from two devices, risk score 87, the card on file is now frozen",
                "the alerted account",
                "velocity fraud alert",
            ),
        ),
        mentions=(
            "user: {ref} also wants a paper copy of the last statement mailed to the office",
            "assistant: I added a note to {ref} about the callback window {person} asked for",
            "user: please make sure {ref} is not charged the late fee again this cycle",
            "tool: {ref} has two open emails in the shared inbox, last reply on {day}",
            "assistant: the billing address on {ref} still points to the old warehouse",
            "user: {person} called about {ref} and sounded upset about the wait",
        ),
    ),
    child=Kind(
        noun="ticket",
        anaphor="that ticket",
        ids=("RF-3307", "RF-4412", "RF-1968", "RF-5520", "RF-2841", "RF-6073", "RF-7719", "RF-9046"),
        intros=(
            Intro(
                "assistant: I opened refund ticket {id} for {parent} with the invoice and the bank statement "
                "attached; finance reviews refunds within two days",
                "the refund ticket",
                "refund for {parent_id}",
            ),
            Intro(
                "assistant: escalation ticket {id} now tracks {parent} together with the fraud desk, priority "
                "high, with the login history and device list attached",
                "the escalation ticket",
                "fraud escalation for {parent_id}",
            ),
            Intro(
                "assistant: I filed chargeback case {id} against the {month} charge on {parent}; the card "
                "network answers within ten days and the customer gets a provisional credit",
                "the chargeback case",
                "chargeback for {parent_id}",
            ),
            Intro(
                "tool: ticketing created {id} to restore the invoice history of {parent}; owner {person}, "
                "queue data repair, due in five business days",
                "the restore ticket",
                "invoice restore for {parent_id}",
            ),
        ),
        mentions=(
            "assistant: {ref} is waiting for a manager signature before anything moves",
            "user: can you attach the customer screenshots to {ref}",
            "tool: {ref} changed state to pending review on {day}",
            "user: {person} wants to be copied on every update to {ref}",
        ),
    ),
    queries={
        "parent": (
            Query(
                "user: did {ref} clear KYC?",
                (
                    "tool: KYC status for {ref} was requested by compliance on {day}",
                    "user: compliance asked whether {ref} ever sent the KYC documents",
                ),
                (
                    "assistant: KYC checks for new customers usually clear within one business day",
                    "user: does the compliance team still clear KYC reviews every {day}",
                    "tool: the KYC portal is down for maintenance on {day} night",
                ),
            ),
            Query(
                "user: what is the current balance on {ref}?",
                (
                    "tool: the balance export for {ref} failed with a timeout",
                    "user: {person} thinks the balance on {ref} looked wrong last month",
                ),
                (
                    "assistant: balances on the portal refresh every night at midnight",
                    "user: why do some current balances show in euros now",
                    "tool: the balance service reported high latency this morning",
                ),
            ),
            Query(
                "user: can we lift the hold on {ref} today?",
                (
                    "assistant: the risk team placed a hold on {ref} last quarter",
                    "user: {person} asked if the hold on {ref} can wait until {day}",
                ),
                (
                    "assistant: holds placed by the risk team need two approvals to lift",
                    "user: the hold queue is long today because of the holiday",
                    "tool: 14 holds were lifted automatically overnight",
                ),
            ),
        ),
        "child": (
            Query(
                "user: has {ref} been approved yet?",
                (
                    "tool: the approval workflow for {ref} paused waiting on finance",
                    "user: {person} says {ref} was approved once and then reopened",
                ),
                (
                    "assistant: approvals from finance usually take two business days",
                    "user: who can approve refunds over the limit while {person} is away",
                    "tool: the approval queue has 31 items older than a week",
                ),
            ),
            Query(
                "user: who owns {ref} right now?",
                (
                    "tool: the owner field on {ref} was cleared by an automation rule",
                    "user: I thought {person} owned {ref} before the shift change",
                ),
                (
                    "assistant: ownership moves to the on call agent after each shift change",
                    "user: who owns the refund queue right now",
                    "tool: 6 tickets have no owner right now",
                ),
            ),
        ),
    },
    fillers=(
        "user: thanks, that helps a lot",
        "assistant: understood, I will keep an eye on the queue",
        "user: the portal was slow this morning but it is back now",
        "assistant: reminder that the team meeting moved to three o clock",
        "user: I am going to grab a coffee, back in five minutes",
        "tool: nightly export finished without errors",
        "assistant: the shared inbox has eleven unread messages from the weekend",
        "user: {person} is covering the phones until noon",
        "assistant: noted, I will summarise the open items at the end of the shift",
        "user: can you use shorter replies from now on",
        "tool: single sign on token refreshed",
        "user: the new headset finally arrived",
    ),
)

CODE_REVIEW = Domain(
    name="code_review",
    systems=(
        "system: you are the code review assistant of the platform team; quote file paths exactly",
        "system: you help reviewers read pull requests; point to files and names, never invent code",
        "system: you are a review copilot; keep comments short and tied to the diff",
    ),
    parent=Kind(
        noun="file",
        anaphor="that file",
        ids=(
            "deploy/settings.yaml",
            "src/retry_policy.py",
            "config/limits.toml",
            "app/http_client.py",
            "infra/queue.json",
            "lib/cache_layer.py",
            "svc/billing_sync.go",
            "etc/worker.ini",
        ),
        intros=(
            Intro(
                "user: the config file of the ingest service is {id}; every tunable limit lives there and "
                "it is loaded once when the process starts",
                "the config file",
                "ingest service config",
            ),
            Intro(
                "user: this pull request mostly touches {id}, the module that wraps outbound calls with "
                "retries, timeouts and the circuit breaker",
                "the client module",
                "wraps outbound calls",
            ),
            Intro(
                "assistant: the diff also edits {id}, the migration script that runs before each deploy and "
                "rewrites the schema of the jobs table",
                "the migration script",
                "pre deploy migration",
            ),
            Intro(
                "user: {person} wrote {id} last {month}; it is the entry point of the scheduler and decides "
                "which worker picks up each job",
                "the scheduler entry point",
                "scheduler entry point",
            ),
            Intro(
                "tool: coverage report ranks {id} lowest in this change at {number} percent of lines, with "
                "no test for the error branches",
                "the least tested file",
                "{number} percent coverage",
            ),
        ),
        mentions=(
            "user: {ref} needs a docstring on the public helper before we merge",
            "assistant: {ref} still imports the deprecated logging wrapper",
            "tool: lint reports three unused imports in {ref}",
            "user: {person} asked for {ref} to be split into two smaller pieces",
            "assistant: the unit tests for {ref} pass locally but flake in CI",
        ),
    ),
    child=Kind(
        noun="constant",
        anaphor="that constant",
        ids=("MAX_RETRIES", "TIMEOUT_MS", "BATCH_SIZE", "POOL_LIMIT", "BACKOFF_BASE", "QUEUE_DEPTH", "CACHE_TTL"),
        intros=(
            Intro(
                "assistant: in {parent}, {id} is set to {number} and read once at startup, so changing it "
                "needs a restart of every worker",
                "the startup setting",
                "{number}, read at startup in {parent_id}",
            ),
            Intro(
                "user: the change raises {id} in {parent} from {number} to twice that, without a comment "
                "explaining why the old value was too low",
                "the raised limit",
                "raised from {number} in {parent_id}",
            ),
            Intro(
                "assistant: {parent} hardcodes {id} = {number} instead of reading the environment, unlike "
                "every other setting next to it",
                "the hardcoded value",
                "{number}, hardcoded in {parent_id}",
            ),
            Intro(
                "user: {id} in {parent} controls how long workers wait before giving up on a job, currently "
                "{number} seconds",
                "the wait setting",
                "{number} seconds in {parent_id}",
            ),
        ),
        mentions=(
            "assistant: {ref} is also referenced by the health check",
            "user: we should document {ref} in the runbook",
            "tool: {ref} appears in four test fixtures",
            "user: {person} thinks {ref} should come from the environment instead",
        ),
    ),
    queries={
        "parent": (
            Query(
                "user: is {ref} covered by the integration tests?",
                (
                    "tool: the integration test run skipped {ref} because a fixture is missing",
                    "user: {person} says the integration tests never load {ref}",
                ),
                (
                    "assistant: the integration tests run nightly against the staging cluster",
                    "user: the integration tests have been red since {day}",
                    "tool: integration test summary uploaded, 3 suites covered",
                ),
            ),
            Query(
                "user: who owns {ref} after the reorg?",
                (
                    "assistant: the owners file lists nobody for {ref} since the reorg",
                    "user: {person} owned {ref} before the reorg, I think",
                ),
                (
                    "user: the reorg moved three teams under {person}",
                    "assistant: the owners file was last updated before the reorg",
                    "tool: 12 paths have no owner after the reorg",
                ),
            ),
        ),
        "child": (
            Query(
                "user: should we raise {ref} before the release?",
                (
                    "user: {person} wants to raise {ref} for the release as well",
                    "tool: the release notes draft mentions {ref} twice",
                ),
                (
                    "assistant: the release branch is cut on {day}",
                    "user: raising limits before a release needs a load test",
                    "tool: the release checklist has two open items",
                ),
            ),
            Query(
                "user: where else is {ref} read at runtime?",
                (
                    "tool: runtime trace shows {ref} read by the worker pool",
                    "assistant: {ref} may be read at runtime by the admin endpoint too",
                ),
                (
                    "assistant: runtime configuration is read from the environment first",
                    "user: where else do we read settings at runtime",
                    "tool: runtime profile captured for the worker pool",
                ),
            ),
        ),
    },
    fillers=(
        "user: thanks, good catch",
        "assistant: I will leave the nit comments for later",
        "user: CI is slow today, the runners are overloaded",
        "assistant: the style checker has no complaints about the formatting",
        "user: let us take a short break and continue after lunch",
        "tool: dependency cache restored",
        "user: {person} will do the second review tomorrow",
        "assistant: the branch is up to date with main",
        "user: please keep comments short, it is a big diff",
        "tool: build artifacts uploaded",
        "assistant: I rebased the review notes onto the latest push",
        "user: the commit messages look fine to me",
    ),
)

DOCUMENTS = Domain(
    name="documents",
    systems=(
        "system: you are a research assistant working across the documents the user uploads; cite document codes",
        "system: you help compare contracts and reports; quote clauses exactly and name the document",
        "system: you are a document analyst; keep answers short and say which file each fact comes from",
    ),
    parent=Kind(
        noun="document",
        anaphor="that document",
        ids=("HR-2291", "FIN-0417", "LGL-7730", "OPS-5512", "MKT-3384", "AUD-6150", "PRC-2708", "ENG-9921"),
        intros=(
            Intro(
                "user: I uploaded {id}, the vendor lease we signed in {month} for the warehouse space, "
                "twelve pages plus two signed annexes",
                "the vendor lease",
                "vendor lease of {month}",
            ),
            Intro(
                "user: {id} is the quarterly risk report from the audit team, dated {month}, with the heat "
                "map and the list of open findings",
                "the risk report",
                "quarterly risk report",
            ),
            Intro(
                "user: attaching {id}, the hosting contract that is up for renewal in {month}; pricing is "
                "in schedule two and the service levels in schedule three",
                "the hosting contract",
                "hosting contract",
            ),
            Intro(
                "tool: ingested {id}, a forty page onboarding memo drafted by legal for new suppliers, "
                "with a checklist on the last page",
                "the onboarding memo",
                "legal onboarding memo",
            ),
            Intro(
                "user: {person} sent {id}, the procurement policy revised in {month}, which now asks for "
                "three quotes above a small threshold",
                "the procurement policy",
                "procurement policy",
            ),
        ),
        mentions=(
            "assistant: {ref} uses a different date format in the appendix",
            "user: please keep {ref} out of the summary for the board",
            "tool: OCR confidence for {ref} is low on pages twelve to fifteen",
            "user: {person} has the signed original of {ref}",
            "assistant: {ref} refers to an exhibit that was not uploaded",
        ),
    ),
    child=Kind(
        noun="clause",
        anaphor="that clause",
        ids=("clause 4.2", "clause 7.1", "clause 9.3", "clause 12.5", "clause 14.3", "clause 3.8", "clause 11.2"),
        intros=(
            Intro(
                "assistant: {id} of {parent} sets the termination notice to {number} days, counted from "
                "written notice sent by registered mail",
                "the termination clause",
                "{number} days notice in {parent_id}",
            ),
            Intro(
                "assistant: {id} in {parent} caps liability at {amount} per year, except for data breaches "
                "and gross negligence",
                "the liability cap",
                "cap of {amount} in {parent_id}",
            ),
            Intro(
                "tool: extracted {id} from {parent}: customer data is deleted {number} days after exit and "
                "backups are purged within a quarter",
                "the retention clause",
                "deletion after {number} days in {parent_id}",
            ),
            Intro(
                "assistant: {id} of {parent} renews the agreement automatically every {month} unless one "
                "side objects sixty days before",
                "the renewal clause",
                "auto renewal in {parent_id}",
            ),
        ),
        mentions=(
            "user: flag {ref} for the legal review on {day}",
            "assistant: {ref} conflicts with the wording of our standard template",
            "user: {person} wants {ref} quoted verbatim in the memo",
            "tool: {ref} was highlighted by the contract scanner",
        ),
    ),
    queries={
        "parent": (
            Query(
                "user: does {ref} mention an audit right?",
                (
                    "tool: keyword search found no audit right wording in {ref}",
                    "user: {person} remembers an audit right somewhere in {ref}",
                ),
                (
                    "assistant: an audit right usually sits near the confidentiality terms",
                    "user: our template always includes an audit right for vendors",
                    "tool: audit rights index rebuilt for 40 files",
                ),
            ),
            Query(
                "user: summarize {ref} in two lines for the board",
                (
                    "assistant: the board asked for {ref} to be summarized before {day}",
                    "user: {person} already drafted two lines on {ref} for the board",
                ),
                (
                    "user: the board meets on {day} and wants short summaries",
                    "assistant: board summaries should stay under two lines each",
                    "tool: board pack template updated",
                ),
            ),
        ),
        "child": (
            Query(
                "user: can we negotiate {ref} down?",
                (
                    "user: {person} tried to negotiate {ref} last year without luck",
                    "assistant: the counterparty refused to negotiate {ref} in the first round",
                ),
                (
                    "assistant: negotiation points go to legal before {day}",
                    "user: can we negotiate anything down this late in the process",
                    "tool: negotiation tracker has four open points",
                ),
            ),
            Query(
                "user: is {ref} stricter than what we usually accept?",
                (
                    "assistant: legal called {ref} stricter than usual in the first pass",
                    "user: {person} asked if we usually accept terms like {ref}",
                ),
                (
                    "assistant: we usually accept ninety day terms from vendors",
                    "user: what do we usually accept for liability in hosting deals",
                    "tool: playbook lists the terms we usually accept",
                ),
            ),
        ),
    },
    fillers=(
        "user: thanks, keep going",
        "assistant: I will note page numbers next to each quote",
        "user: the upload was slow, the network is flaky today",
        "assistant: the scanned pages are readable except for the stamps",
        "user: I have a call in ten minutes, then we continue",
        "tool: text extraction finished",
        "user: {person} will review the final memo on {day}",
        "assistant: I will keep the summary in plain language",
        "user: please use bullet points from now on",
        "tool: index refreshed",
        "assistant: the shared folder now has a read only copy",
        "user: the printer on the third floor is broken again",
    ),
)

DOMAINS: Mapping[str, Domain] = {d.name: d for d in (SUPPORT, CODE_REVIEW, DOCUMENTS)}
