"""Trace facts behind the policy design, measured on the replayed sessions.

- ``previous_turn_share``: of all needed values, the share held by a block of the turn
  just before the query (turn t - 1).
- ``lost_with_call_kept``: for the message-level ``dsgc`` policy (paper rule,
  ``trace_edges``), among the needed values it loses that some tool result holds, the
  share whose newest holding result had its *call* kept (the result -> call edge lifted
  the call while the result, with no dependent yet, had no support).
- ``identifier_share``: the share of needed values that the prose rules treat as
  identifiers (``dsgc_fast.induction.iter_identifiers`` finds one spanning the whole
  value, in the casing of the call argument), and the share that the JSON value rules
  name (``payload_values`` of the call's arguments gives the argument a value).
- ``induction_audit``: induction on every full transcript, message by message.  Edges: the
  store's induction (``IncrementalInducer(pin_referents=False)``, what ``add_messages``
  gives a store), each edge resting on the value keys ``BlockInduction.support`` names
  (result -> call edges, which rest on no value and which the store declares anyway, are
  left out).  Bindings: the pinning form (``pin_referents=True``, ``induce_messages``'
  referents), each resting on its name's key.  Schema vocabulary: the function names,
  parameter and response property names of the session's docs and every JSON key of its
  call arguments and tool results that is not also a value in them (an id keying a table,
  ``{"USR003": [...]}``, is data), under every key rule (``identifier_key``, lower case,
  the singular ``normal_key``).  Reported: the share of edges all of whose keys are schema
  vocabulary, and the share of bindings whose key is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from dsgc_fast.induction import IncrementalInducer, identifier_key, iter_identifiers, normal_key, payload_values
from dsgc_fast.memory.messages import message_text

from .data import function_docs
from .metrics import kept_values
from .points import Point
from .policies import Selection
from .replay import Transcript
from .values import leaves, normal_value, walk


def previous_turn_share(points: Iterable[Point]) -> tuple[int, int]:
    """``(values held by turn t - 1, needed values)``."""
    held = total = 0
    for p in points:
        for v in p.needed:
            total += 1
            held += any(p.turns[i] == p.turn - 1 for i in p.holders[v])
    return held, total


def lost_with_call_kept(point: Point, selection: Selection) -> tuple[int, int]:
    """``(lost result-held values whose call was kept, lost result-held values)``."""
    kept = set(selection.retained.tolist())
    call_at: dict[str, int] = {}
    for i, message in enumerate(point.messages):
        for call in message.get("tool_calls") or ():
            call_at[call["id"]] = i
    with_call = lost = 0
    for value, held in zip(point.needed, kept_values(point, selection)):
        results = [i for i in point.holders[value] if point.kinds[i] == "result"]
        if held or not results:
            continue
        lost += 1
        caller = call_at.get(point.messages[results[-1]].get("tool_call_id"))
        with_call += caller in kept
    return with_call, lost


def identifier_share(transcripts: Iterable[Transcript], points: Sequence[Point]) -> tuple[int, int, int]:
    """``(needed values that are prose identifiers, that are JSON values, needed values)``
    (module docstring)."""
    surfaces: dict[tuple[str, int], dict[Any, str]] = {}
    named: set[tuple[str, int, Any]] = set()
    for tr in transcripts:
        for t, calls in enumerate(tr.calls):
            table = surfaces.setdefault((tr.session.id, t), {})
            for call in calls:
                for leaf in leaves(call.arguments):
                    value = normal_value(leaf)
                    if value is not None and isinstance(leaf, str):
                        table.setdefault(value, leaf.strip())
                for leaf, found in payload_values(call.arguments, call.name):
                    if found is not None:
                        named.add((tr.session.id, t, normal_value(leaf)))
    ident = json_named = total = 0
    for p in points:
        table = surfaces.get((p.session, p.turn), {})
        for v in p.needed:
            total += 1
            json_named += (p.session, p.turn, v) in named
            surface = table.get(v)
            if surface:
                ident += any(start == 0 and end == len(surface) for _, _, start, end in iter_identifiers(surface))
    return ident, json_named, total


def _doc_names(doc: Any) -> Iterable[str]:
    if isinstance(doc, dict):
        for key, item in doc.items():
            if key == "properties" and isinstance(item, dict):
                yield from item
            if key == "name" and isinstance(item, str):
                yield item
            yield from _doc_names(item)
    elif isinstance(doc, list):
        for item in doc:
            yield from _doc_names(item)


def _json_items(transcript: Transcript) -> tuple[set[str], set[str]]:
    """The JSON keys and the string and number leaves of the session's arguments and results."""
    keys, values = set(), set()
    for calls in transcript.calls:
        for call in calls:
            payloads = [call.arguments]
            try:
                payloads.append(json.loads(call.content))
            except ValueError:
                pass
            for payload in payloads:
                for is_key, item in walk(payload):
                    if is_key:
                        keys.add(str(item))
                    elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
                        values.add(str(item))
    return keys, values


def schema_keys(transcript: Transcript) -> set[str]:
    """Every key of the session's schema vocabulary (module docstring)."""
    docs = set(_doc_names(function_docs(transcript.session)))
    keys, values = _json_items(transcript)
    names = docs | (keys - values)
    return set().union(*(_name_keys(name) for name in names))


def _name_keys(name: str) -> set[str]:
    """Every key a name has under the key rules (module docstring)."""
    return {k for k in (identifier_key(name), name.lower(), normal_key(name)) if k is not None}


def induction_audit(transcript: Transcript) -> dict[str, int]:
    """Counts of induced edges and bindings, and of those resting only on schema vocabulary."""
    vocab = schema_keys(transcript)
    edges: dict[tuple[int, int], frozenset[str]] = {}
    store, pinning = IncrementalInducer(pin_referents=False), IncrementalInducer(pin_referents=True)
    binds: list[str] = []
    for message in transcript.messages:
        text = message_text(message)
        update = store.add(text, message=message)
        edges.update((pair, keys) for pair, keys in update.support.items() if keys)
        for pair in update.retracted.tolist():
            edges.pop(tuple(pair), None)
        binds += pinning.add(text, message=message).binds or ()
    schema_edges = sum(keys <= vocab for keys in edges.values())
    schema_binds = sum(bool(_name_keys(name) & vocab) for name in binds)
    return {"edges": len(edges), "schema_edges": schema_edges, "binds": len(binds), "schema_binds": schema_binds}
