"""The long-range generator: deterministic, one holder of the fact, a question without it."""

from __future__ import annotations

from dsgc_bench.bfcl.policies import Embeddings, recency_first_fit, similarity
from dsgc_bench.bfcl.metrics import kept_values
from dsgc_bench.longrange import KINDS, conversation, points
from dsgc_fast.encoders import make_encoder


def test_deterministic_and_well_formed():
    a, b = conversation(7), conversation(7)
    assert a == b
    assert conversation(8) != a
    for seed in range(30):
        conv = conversation(seed)
        assert conv.kind == KINDS[seed % 3]
        assert conv.messages[-1]["role"] == "user"
        assert conv.value.casefold() not in conv.messages[-1]["content"].casefold()
        assert conv.value in conv.messages[conv.fact_index]["content"]
        assert conv.fact_index <= 6 and len(conv.messages) >= 2 * 24 + 1
        roles = [m["role"] for m in conv.messages]
        assert roles[0::2] == ["user"] * len(roles[0::2]) and set(roles[1::2]) == {"assistant"}


def test_points_have_one_holder_and_recency_loses_the_fact():
    emb = Embeddings(make_encoder("lexical"))
    pts = points(12)
    assert all(len(p.needed) == 1 and len(p.holders[p.needed[0]]) == 1 for p in pts)
    recency = [kept_values(p, recency_first_fit(p, emb, p.budget(0.05)))[0] for p in pts]
    similar = [kept_values(p, similarity(p, emb, p.budget(0.25)))[0] for p in pts]
    assert not any(recency)
    assert any(similar)
