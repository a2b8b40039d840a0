"""Replay of BFCL sessions against BFCL's APIs, checked against BFCL's own executor.

Runs on a small fixed subset of the development splits; skipped without bfcl-eval.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (pip install --no-deps bfcl-eval)")

from dsgc_bench.bfcl.agent import CANDIDATES, RECOMMENDED
from dsgc_bench.bfcl.check import check_all
from dsgc_bench.bfcl.data import SPLITS, load_sessions
from dsgc_bench.bfcl.metrics import score
from dsgc_bench.bfcl.padded import padded
from dsgc_bench.bfcl.points import transcript_points
from dsgc_bench.bfcl.policies import Embeddings, baselines
from dsgc_bench.bfcl.replay import parse_call, replay
from dsgc_fast.encoders import CachedEncoder, make_encoder
from dsgc_fast.memory.messages import check_messages

BASE_IDS = tuple(f"multi_turn_base_{k}" for k in (0, 1, 15, 32, 49, 103))
LONG_IDS = ("multi_turn_long_context_0", "multi_turn_long_context_103")


@pytest.fixture(scope="module")
def transcripts():
    sessions = load_sessions("base", BASE_IDS) + load_sessions("long_context", LONG_IDS)
    return [replay(s) for s in sessions]


def test_only_development_splits_are_readable():
    assert SPLITS == ("base", "long_context")
    with pytest.raises(ValueError, match="development splits"):
        load_sessions("anything_else")


def test_transcripts_are_valid_and_deterministic(transcripts):
    for tr in transcripts:
        check_messages(tr.messages)
        assert len(tr.user_index) == len(tr.session.turns)
        for message, kind in zip(tr.messages, tr.kinds):
            if kind == "result":
                json.loads(message["content"])
            if kind == "call":
                json.loads(message["tool_calls"][0]["function"]["arguments"])
        again = replay(tr.session)
        assert again.messages == tr.messages


def test_every_result_equals_bfcl_executor(transcripts):
    result = check_all(transcripts)
    assert result.calls == sum(len(c) for tr in transcripts for c in tr.calls) > 0
    assert result.mismatches == ()


def test_positional_arguments_are_named():
    name, positional, keywords = parse_call("sort('final_report.pdf')")
    assert (name, positional, keywords) == ("sort", ["final_report.pdf"], {})
    tr = replay(load_sessions("base", ("multi_turn_base_0",))[0])
    call = tr.calls[2][0]
    assert call.name == "sort" and call.arguments == {"file_name": "final_report.pdf"}
    with pytest.raises(ValueError):
        parse_call("f(x=y)")


def test_prototypes_reproduce_the_store_and_units_stay_whole(transcripts):
    """unit-max is the store with the paper's rule, (R) the agent policy without induction."""
    emb = Embeddings(CachedEncoder(make_encoder("lexical")))
    points = [p for tr in transcripts for p in transcript_points(tr)]
    store_like, rules = CANDIDATES["unit-max (store-like)"], baselines()
    for p in points:
        budget = p.budget(0.25)
        assert np.array_equal(store_like(p, emb, budget).retained, rules["store-dsgc"](p, emb, budget).retained)
        assert np.array_equal(
            RECOMMENDED(p, emb, budget).retained, rules["store-no-induction"](p, emb, budget).retained
        )
        for policy in (RECOMMENDED, rules["store-default"], rules["store-recency"], rules["store-annotated"]):
            got = score(p, policy(p, emb, budget), budget)
            assert got.broken == 0 and got.used <= budget


def test_padded_points_add_blocks_but_no_room_and_no_needed_values(transcripts):
    """A padded point: the earlier sessions' histories first, the point unchanged after them."""
    points = [p for tr in transcripts for p in transcript_points(tr)]
    before = [(p.messages, p.needed, dict(p.holders)) for p in points]
    padded_points = padded(points, 2)
    assert before == [(p.messages, p.needed, dict(p.holders)) for p in points]  # the input is not changed
    grew = 0
    for p, q in zip(points, padded_points):
        shift = q.n - p.n
        grew += shift > 0
        check_messages(list(q.messages))  # call ids stay unique and paired
        assert q.messages[shift:] == p.messages and q.texts[shift:] == p.texts
        assert q.needed == p.needed and q.holders == {v: tuple(h + shift for h in p.holders[v]) for v in p.needed}
        assert [q.budget(f) for f in (0.25, 0.5)] == [p.budget(f) for f in (0.25, 0.5)]
        assert all(q.turns[i] < 0 for i in range(shift))
        padding = {p2.session for p2 in points if p2.split == p.split and p2.session != p.session}
        assert shift == 0 or padding
    assert grew > 0
