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

The sentences are data, in ``referent_domains.json`` (the session ``pools`` and the
``domains``, each as its ``Domain`` fields; an intro is ``[text, description, gist]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import package_data

FORMS: tuple[str, ...] = ("anaphor", "description", "identifier")
KINDS: tuple[str, ...] = ("parent", "child")


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


def _kind(data: dict[str, Any]) -> Kind:
    return Kind(
        data["noun"], data["anaphor"], tuple(data["ids"]), tuple(Intro(*i) for i in data["intros"]),
        tuple(data["mentions"]),
    )  # fmt: skip


def _domain(data: dict[str, Any]) -> Domain:
    queries = {
        which: tuple(Query(q["text"], tuple(q["topic_mentions"]), tuple(q["honeypots"])) for q in listed)
        for which, listed in data["queries"].items()
    }
    return Domain(
        data["name"], tuple(data["systems"]), _kind(data["parent"]), _kind(data["child"]), queries,
        tuple(data["fillers"]),
    )  # fmt: skip


_DATA: dict[str, Any] = package_data.load("referent_domains.json")
#: the session pools: ``{month}``, ``{day}``, ``{person}``, ``{amount}``, ``{number}``
POOLS: Mapping[str, tuple[str, ...]] = {slot: tuple(values) for slot, values in _DATA["pools"].items()}
#: support (account / ticket), code_review (file / constant), documents (document / clause)
DOMAINS: Mapping[str, Domain] = {d["name"]: _domain(d) for d in _DATA["domains"]}
