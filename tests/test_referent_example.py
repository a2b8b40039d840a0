"""The turn-12 / turn-19 support-triage example from the referent-pinning design note."""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref
from dsgc_fast.encoders import LexicalEncoder
from dsgc_ref.contract import Reason

TURNS = [
    "system: you are a support triage assistant for the billing team",  # 0
    "customer writes in about a late invoice for march",  # 1
    "agent checks the invoice schedule and the march billing run",  # 2
    "account 8841-C, the one flagged last week, disputes a billing charge on its march invoice",  # 3 (turn 12)
    "billing charge dispute opened and routed to the billing queue",  # 4
    "kyc reviews are run by the compliance team every monday",  # 5
    "the compliance team publishes kyc clearance results on the portal",  # 6
    "did that account clear KYC?",  # 7 (turn 19)
]
USES = [[], [], [], [], [], [], [], ["that account"]]
BINDS = [None, None, None, {"that account": "8841-C"}, None, None, None, None]
LIVE = [0, 7]  # the system prompt and the current turn


@pytest.fixture(scope="module")
def store():
    embs = LexicalEncoder().encode(TURNS)
    costs = np.array([max(len(t.split()), 1) for t in TURNS])
    query = LexicalEncoder().encode([TURNS[7]])[0]
    return query, embs, costs


def test_similarity_only_evicts_turn_12(store):
    query, embs, costs = store
    budget = int(costs[[0, 7]].sum()) + 20
    got = dsgc_fast.retain(query, embs, costs, budget, policy="similarity")
    assert not got.mask[3]
    assert dsgc_fast.orphans(got.retained, USES, BINDS) == [(7, "that account", 3)]


@pytest.mark.parametrize("policy", ["similarity", "dsgc", "recency"])
def test_pinning_keeps_turn_12(store, policy):
    query, embs, costs = store
    budget = int(costs[[0, 7]].sum()) + 20
    got = dsgc_fast.retain(query, embs, costs, budget, policy=policy, live=LIVE, uses=USES, binds=BINDS)
    assert got.mask[3] and got.reason(3) == Reason.KEPT_PINNED
    assert got.pinned.tolist() == [0, 3, 7]
    assert got.binding_table is None
    assert dsgc_fast.orphans(got.retained, USES, BINDS) == []


def test_small_budget_escalates_to_binding_table(store):
    query, embs, costs = store
    roots = int(costs[[0, 7]].sum())
    got = dsgc_fast.retain(query, embs, costs, roots + 5, live=LIVE, uses=USES, binds=BINDS)
    table = got.binding_table
    assert table.entries == (("that account", "8841-C", 3),)
    assert table.text == "that account: 8841-C (block 3)" and table.cost == 5
    assert got.reason(3) == Reason.TABLED and got.mask[[0, 7]].all()
    assert dsgc_fast.orphans(got.retained, USES, BINDS, table=table) == []
    ref = dsgc_ref.retain(query.tolist(), embs.tolist(), costs.tolist(), roots + 5, live=LIVE, uses=USES, binds=BINDS)
    assert ref.binding_table == table and ref.retained == got.retained.tolist()


def test_smaller_budget_raises_with_the_numbers(store):
    query, embs, costs = store
    roots = int(costs[[0, 7]].sum())
    with pytest.raises(dsgc_fast.ReferentEvictionError) as err:
        dsgc_fast.retain(query, embs, costs, roots + 4, live=LIVE, uses=USES, binds=BINDS)
    msg = str(err.value)
    for part in ("[0, 3, 7]", f"{int(costs[[0, 3, 7]].sum())} tokens", "table costs 5", f"budget {roots + 4}"):
        assert part in msg
