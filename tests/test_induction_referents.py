"""Referent induction: binds/uses for the pinning API, conservative definite descriptions."""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
from dsgc_fast.induction import induce_referents


def test_turn_12_turn_19_pins_the_account():
    texts = [f"Filler note {k} about lunch plans." for k in range(20)]
    texts[12] = "Account 8841-C, the one flagged last week, disputes a billing charge."
    texts[19] = "Did that account clear KYC?"
    binds, uses = induce_referents(texts)
    assert binds[12] == {"8841-C": "Account 8841-C"}
    assert uses[19] == ["8841-C"]
    assert dsgc_fast.pin_closure([19], uses, binds).tolist() == [12, 19]
    kept_without_12 = [k for k in range(20) if k != 12]
    assert dsgc_fast.orphans(kept_without_12, uses, binds) == [(19, "8841-C", 12)]


def test_identifier_mentions_use_the_introducer_binding():
    texts = ["Set MAX_RETRIES = 5 in the config.", "Retry up to max_retries times.", "Nothing to see."]
    binds, uses = induce_referents(texts)
    assert binds == [{"MAX_RETRIES": "5"}, None, None]
    assert uses == [[], ["MAX_RETRIES"], []]


@pytest.mark.parametrize(
    ("text", "name", "value"),
    [
        ("Bundle Orchid maps to clearance T2.", "Bundle Orchid", "clearance T2"),
        ("TIMEOUT_S is set to 30 seconds, then retried.", "TIMEOUT_S", "30 seconds"),
        ("Use route ticket RT-114 for it.", "RT-114", "ticket RT-114"),
        ("(see /etc/app.yaml)", "/etc/app.yaml", "/etc/app.yaml"),
        ("env: ACME-PROD", "ACME-PROD", "ACME-PROD"),
        # an assignment never binds a function word: the identifier keeps its head noun
        ("Log ticket RT-114: the printer on floor 3 is jammed.", "RT-114", "ticket RT-114"),
        ("Ticket RT-114 is the one from Monday.", "RT-114", "Ticket RT-114"),
        ("MODE_FLAG: on", "MODE_FLAG", "MODE_FLAG"),
        ("MODE_FLAG: fast", "MODE_FLAG", "fast"),
    ],
)
def test_binding_values(text, name, value):
    binds, _ = induce_referents([text])
    assert binds[0][name] == value


def test_explicit_change_rebinds_and_plain_mention_uses():
    texts = ["MAX_RETRIES = 5", "MAX_RETRIES is now 7.", "Loop MAX_RETRIES times.", "MAX_RETRIES maps to nothing new."]
    binds, uses = induce_referents(texts)
    assert binds[:3] == [{"MAX_RETRIES": "5"}, {"MAX_RETRIES": "7"}, None]
    assert uses == [[], [], ["MAX_RETRIES"], ["MAX_RETRIES"]]
    # the newest binder is live for the pinning API
    assert dsgc_fast.pin_closure([2], uses, binds).tolist() == [1, 2]


def test_ambiguous_description_proposes_nothing():
    texts = ["Account 8841-C was flagged.", "Account 7730-B was opened.", "Did that account clear KYC?"]
    _, uses = induce_referents(texts)
    assert uses[2] == []


ANCHOR = "Account 8841-C disputes a charge. Keep an eye on that account today."


def test_a_description_next_to_one_key_anchors_it_for_later_ambiguous_ones():
    """ "that account" said beside exactly one account fixes its meaning: a later "that account"
    that recent mentions leave ambiguous resolves to it, beyond the window too."""
    others = ["Account 7730-B was opened.", "Account 5502-A was closed."]
    assert induce_referents([ANCHOR, *others, "Did that account clear KYC?"])[1][3] == ["8841-C"]
    plain = ["Account 8841-C disputes a charge.", *others, "Did that account clear KYC?"]
    assert induce_referents(plain)[1][3] == []  # no anchor: ambiguous, nothing proposed
    far = [ANCHOR] + ["Lunch notes."] * 5 + ["Did that account clear KYC?"]
    assert induce_referents(far, window=5)[1][-1] == ["8841-C"]


def test_the_window_s_one_candidate_and_the_newest_anchor_come_first():
    recent = [ANCHOR, "Lunch notes.", "Account 7730-B was opened.", "Did that account clear KYC?"]
    assert induce_referents(recent, window=2)[1][-1] == ["7730-B"]  # one candidate in the window
    newer = [
        ANCHOR,
        "Account 7730-B is new; watch this account too.",
        "Account 5502-A was closed.",
        "Is that account ok?",
    ]
    assert induce_referents(newer)[1][-1] == ["7730-B"]
    two = [
        "Account 8841-C and account 7730-B: keep an eye on that account.",
        "Account 5502-A was closed.",
        "Is that account ok?",
    ]
    assert induce_referents(two)[1][-1] == []  # two accounts beside it: no anchor


def test_a_store_links_an_anchored_description_to_the_block_that_anchored_it():
    from dsgc_fast.induction import IncrementalInducer

    chat = [
        {"role": "user", "content": ANCHOR},
        {"role": "assistant", "content": "Noted: account 8841-C is flagged."},
        {"role": "user", "content": "Account 7730-B was opened."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Account 5502-A was closed."},
        {"role": "user", "content": "Did that account clear KYC?"},
    ]
    inducer = IncrementalInducer(pin_referents=False)
    for message in chat:
        inducer.add(message["content"], message=message)
    assert [5, 0] in inducer.edges.tolist()
    assert [5, 1] not in inducer.edges.tolist()


def test_a_description_of_a_value_the_newest_exchange_names_rests_on_the_block_that_bound_it():
    """The store's edge for "that account": the newest exchange names the account (a call's argument),
    so the edge goes to the earlier message that introduced it, not into the exchange; where nothing
    before the exchange bound it, there is no edge (recency keeps the exchange)."""
    from dsgc_fast.induction import IncrementalInducer

    def edges(chat):
        inducer = IncrementalInducer(pin_referents=False)
        for message in chat:
            inducer.add(message["content"], message=message)
        return inducer.edges.tolist()

    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "check", "arguments": '{"account": "AC-7730"}'}}
        ],
    }
    chat = [
        {"role": "user", "content": "The customer on the line owns account AC-7730."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What did their payout do?"},
        call,
        {"role": "tool", "tool_call_id": "c1", "content": '{"payout": "held"}'},
        {"role": "user", "content": "Did that account clear KYC?"},
    ]
    assert [5, 0] in edges(chat) and [5, 3] not in edges(chat)
    # introduced inside the newest exchange: no description edge from the question
    assert not any(a == 5 for a, _ in edges([chat[2], {**chat[0], "role": "assistant"}, *chat[3:]]))


def test_identifiers_of_the_same_shape_make_a_description_ambiguous():
    texts = ["I opened refund ticket RF-1968.", "Ticketing created RF-2841 for it.", "Attach the logs to that ticket."]
    assert induce_referents(texts)[1][2] == []
    assert induce_referents([texts[0], "Nothing new.", texts[2]])[1][2] == ["RF-1968"]
    # a shape-mate in the block itself keeps the description local
    assert induce_referents([texts[0], "Is that ticket RF-2841 or another?"])[1][1] == []


def test_description_outside_the_window_proposes_nothing():
    texts = ["Account 8841-C was flagged."] + ["Lunch notes."] * 5 + ["Did that account clear KYC?"]
    assert induce_referents(texts, window=6)[1][-1] == ["8841-C"]
    assert induce_referents(texts, window=5)[1][-1] == []


def test_description_next_to_a_local_identifier_is_not_resolved_elsewhere():
    texts = ["Account 8841-C was flagged.", "Check that account 7730-B is open."]
    binds, uses = induce_referents(texts)
    assert binds[1] == {"7730-B": "open"}
    assert uses[1] == []


def test_description_needs_a_matching_head_noun():
    texts = ["Account 8841-C was flagged.", "Is that ticket closed?", "This account, is it cleared?"]
    _, uses = induce_referents(texts)
    assert uses == [[], [], ["8841-C"]]


def test_timestamps_order_the_scan():
    texts = ["Loop MAX_RETRIES times.", "MAX_RETRIES = 5"]
    binds, uses = induce_referents(texts, timestamps=[2, 1])
    assert binds == [None, {"MAX_RETRIES": "5"}]
    assert uses == [["MAX_RETRIES"], []]


def test_deterministic():
    texts = ["Account 8841-C flagged.", "Bundle Orchid maps to clearance T2.", "that bundle and T2 and 8841-C"]
    assert induce_referents(texts) == induce_referents(list(texts))
    assert induce_referents(texts)[1][2] == ["8841-C", "Bundle Orchid", "T2"]


def test_induced_referents_drive_retain_pins():
    texts = ["Account 8841-C, flagged last week, disputes a charge."] + [f"Note {k} on lunch." for k in range(4)]
    texts.append("Did that account clear KYC?")
    binds, uses = induce_referents(texts)
    rng = np.random.default_rng(3)
    embs = rng.normal(size=(6, 8))
    query = embs[5] + embs[1]
    result = dsgc_fast.retain(query, embs, [2] * 6, 4, policy="similarity", live=[5], uses=uses, binds=binds)
    assert set(result.retained.tolist()) == {0, 5}


def test_argument_errors():
    with pytest.raises(TypeError, match="texts"):
        induce_referents(None)
    with pytest.raises(ValueError, match="window"):
        induce_referents(["a"], window=0)
