"""Check the replay against BFCL's own multi-turn executor, call for call.

BFCL's executor (``execute_multi_turn_func_call``) returns one string per call: a string
return value as is, a dict as ``json.dumps`` (``str`` when that fails), anything else as
``str``; an exception as a message that ends with the exception's text.  ``bfcl_text``
renders our replayed return value by that rule, so a replayed call agrees when
``bfcl_text(call) == `` the executor's string, for every call of every turn (the executor
keeps each session's API objects across turns, as our replay does).  Our tool message is
the same value as JSON; for dict results the two texts are identical.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from .replay import Call, Transcript

_RUNS = itertools.count()


@dataclass(frozen=True)
class CheckResult:
    """Calls compared, calls that disagree (``(session id, call id, ours, BFCL's)``)."""

    calls: int
    mismatches: tuple[tuple[str, str, str, str], ...]
    identical_text: int


def bfcl_text(call: Call) -> str:
    """Our return value rendered by the executor's rule (module docstring)."""
    value = call.value
    if call.error is not None:
        return call.error
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except TypeError:
            return str(value)
    return str(value)


def _agrees(call: Call, theirs: str) -> bool:
    if call.error is not None:
        return theirs.endswith(call.error)
    return bfcl_text(call) == theirs


def check_transcript(transcript: Transcript) -> CheckResult:
    """Run the session's ground truth through BFCL's executor and compare every result."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    session = transcript.session
    model = f"dsgc_replay_check_{next(_RUNS)}"
    before = set(vars(multi_turn_utils))
    mismatches = []
    calls = identical = 0
    try:
        for t, truth in enumerate(session.ground_truth):
            results, _ = multi_turn_utils.execute_multi_turn_func_call(
                list(truth),
                session.initial_config,
                list(session.involved_classes),
                model,
                session.id,
                long_context=session.long_context,
            )
            ours = transcript.calls[t]
            if len(results) != len(ours):
                raise AssertionError(f"{session.id} turn {t}: {len(ours)} replayed calls, BFCL ran {len(results)}")
            for call, theirs in zip(ours, results):
                calls += 1
                identical += call.content == theirs
                if not _agrees(call, theirs):
                    mismatches.append((session.id, call.id, bfcl_text(call), theirs))
    finally:
        # the executor keeps API objects as module globals; drop the ones this check made
        for name in set(vars(multi_turn_utils)) - before:
            delattr(multi_turn_utils, name)
    return CheckResult(calls, tuple(mismatches), identical)


def check_all(transcripts: list[Transcript]) -> CheckResult:
    """``check_transcript`` over many sessions, summed."""
    results = [check_transcript(t) for t in transcripts]
    mismatches: list[Any] = [m for r in results for m in r.mismatches]
    return CheckResult(sum(r.calls for r in results), tuple(mismatches), sum(r.identical_text for r in results))
