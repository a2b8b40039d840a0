"""Trace facts behind the policy design, measured on the replayed sessions.

- ``previous_turn_share``: of all needed values, the share held by a block of the turn
  just before the query (turn t - 1).
- ``lost_with_call_kept``: for the message-level ``dsgc`` policy (paper rule,
  ``trace_edges``), among the needed values it loses that some tool result holds, the
  share whose newest holding result had its *call* kept (the result -> call edge lifted
  the call while the result, with no dependent yet, had no support).
- ``identifier_share``: the share of needed values that today's induction rules treat
  as identifiers (``dsgc_fast.induction.iter_identifiers`` finds one spanning the whole
  value, in the casing of the call argument).
- ``induction_audit``: ``induce`` on every full transcript.  An induced edge ``(j, i)``
  rests on the identifier keys block i introduces (first mention) and block j repeats;
  a binding rests on its referent's key.  Schema vocabulary: the keys of the function
  names, parameter and response property names of the session's docs, and every JSON
  key of its call arguments and tool results.  Reported: the share of edges all of whose
  keys are schema vocabulary, and the share of bindings whose key is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from dsgc_fast.induction import identifier_key, induce, iter_identifiers

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


def identifier_share(transcripts: Iterable[Transcript], points: Sequence[Point]) -> tuple[int, int]:
    """``(needed values that are identifiers, needed values)`` (module docstring)."""
    surfaces: dict[tuple[str, int], dict[Any, str]] = {}
    for tr in transcripts:
        for t, calls in enumerate(tr.calls):
            table = surfaces.setdefault((tr.session.id, t), {})
            for call in calls:
                for leaf in leaves(call.arguments):
                    value = normal_value(leaf)
                    if value is not None and isinstance(leaf, str):
                        table.setdefault(value, leaf.strip())
    ident = total = 0
    for p in points:
        table = surfaces.get((p.session, p.turn), {})
        for v in p.needed:
            total += 1
            surface = table.get(v)
            if surface:
                ident += any(start == 0 and end == len(surface) for _, _, start, end in iter_identifiers(surface))
    return ident, total


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


def _json_keys(value: Any) -> Iterable[str]:
    return (str(item) for is_key, item in walk(value) if is_key)


def schema_keys(transcript: Transcript) -> set[str]:
    """Identifier keys of the session's schema vocabulary (module docstring)."""
    names = set(_doc_names(function_docs(transcript.session)))
    for calls in transcript.calls:
        for call in calls:
            names.update(_json_keys(call.arguments))
            try:
                names.update(_json_keys(json.loads(call.content)))
            except ValueError:
                pass
    return {k for name in names if (k := identifier_key(name)) is not None}


def induction_audit(transcript: Transcript, texts: Sequence[str]) -> dict[str, int]:
    """Counts of induced edges and bindings, and of those resting only on schema vocabulary."""
    vocab = schema_keys(transcript)
    found = induce(list(texts))
    keys = [{k for k, *_ in iter_identifiers(t)} for t in texts]
    first: dict[str, int] = {}
    for i, ks in enumerate(keys):
        for k in ks:
            first.setdefault(k, i)
    schema_edges = 0
    for j, i in found.edges.tolist():
        support = {k for k in keys[j] & keys[i] if first[k] == i}
        schema_edges += bool(support) and support <= vocab
    binds = [name for b in found.binds if b for name in b]
    schema_binds = sum(identifier_key(name) in vocab for name in binds)
    return {"edges": len(found.edges), "schema_edges": schema_edges, "binds": len(binds), "schema_binds": schema_binds}
