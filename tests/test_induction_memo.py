"""Induction's memos change no result: a block read with warm memos is read as with cold ones.

``mentions.prose_reading`` and ``json_values.leaf_value`` memoize what a piece of prose or a
JSON leaf holds whatever was read before it.  Random sessions (prose naming values, tool calls
and results whose leaves are equal under ``==`` but of different types: ``1``, ``1.0``,
``True``, ``"1"``) are induced once after ``forget_texts`` and once more with the memos that
run and an unrelated one left behind: every block's induction must be the same.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast._text_caches import forget_texts
from dsgc_fast.induction import IncrementalInducer, message_text
from dsgc_fast.induction.json_values import Leaf, leaf_value
from dsgc_fast.induction.mentions import MEMO_CHARS, prose_reading

from ._cases import examples

KEYS = ["order_id", "ticket_id", "id", "folder", "status", "symbol", "events", "file_name"]
LEAVES = [1, 1.0, True, "1", 12446, 12446.0, "12446", -0.0, 0.0, None, 2, "2", "AAPL", "temp", "rear_left",
          "ch_9f2a", "M-3745", "2026-11-01T17:00Z", "see order 12446 and INV-11534", "x" * 300]  # fmt: skip
PROSE = ["Cancel that order.", "Check order 12446 please", "Project Falcon maps to clearance T2.",
         "MAX_RETRIES = 5", "RF-2841 is now closed", "the same ticket", "AAPL and the temp folder",
         "ticket 2 is open", "y" * (MEMO_CHARS + 5) + " INV-1"]  # fmt: skip
FUNCTIONS = ["get_order_details", "create_ticket", "ls"]

leaves = st.sampled_from(LEAVES)
payloads = st.recursive(
    st.dictionaries(st.sampled_from(KEYS), leaves, max_size=3),
    lambda inner: st.dictionaries(st.sampled_from(KEYS), inner | st.lists(inner | leaves, max_size=3), max_size=3),
    max_leaves=8,
)


@st.composite
def sessions(draw) -> list[dict]:
    messages: list[dict] = []
    for k in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "call"]))
        if kind != "call":
            messages.append({"role": kind, "content": " ".join(draw(st.lists(st.sampled_from(PROSE), max_size=3)))})
            continue
        function = {"name": draw(st.sampled_from(FUNCTIONS)), "arguments": json.dumps(draw(payloads))}
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{k}", "function": function}]})
        result = json.dumps(draw(payloads)) if draw(st.booleans()) else draw(st.sampled_from(PROSE))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": result})
    return messages


def _induced(messages: list[dict], pin_referents: bool) -> list[tuple]:
    inducer = IncrementalInducer(pin_referents=pin_referents)
    out = []
    for message in messages:
        block = inducer.add(message_text(message), message=message)
        out.append((block.edges.tolist(), block.retracted.tolist(), block.binds, block.uses, block.keys, block.support))
    return out


@given(messages=sessions(), other=sessions(), pin_referents=st.booleans())
@settings(max_examples=examples(1), deadline=None)
def test_warm_memos_induce_what_cold_ones_do(messages, other, pin_referents):
    forget_texts()
    cold = _induced(messages, pin_referents)
    _induced(other, not pin_referents)  # memos of another session, in the other mode
    assert _induced(messages, pin_referents) == cold


def test_equal_leaves_of_different_types_keep_their_own_values():
    forget_texts()
    for order in (LEAVES, LEAVES[::-1]):
        got = [leaf_value(Leaf(x, "ticket_id", "ticket")) for x in order]
        forget_texts()
        assert got == [leaf_value(Leaf(x, "ticket_id", "ticket")) for x in order]
    assert leaf_value(Leaf(1, "ticket_id", "ticket")) is not None  # an int id is a value ...
    assert leaf_value(Leaf(True, "ticket_id", "ticket")) is None  # ... a flag is not
    assert leaf_value(Leaf(1.0, "ticket_id", "ticket")) is None  # nor a float


def test_a_reading_is_its_text_s_whatever_was_read_before():
    for text in PROSE:
        for in_json in (False, True):
            forget_texts()
            cold = prose_reading(text, in_json)
            prose_reading(text, not in_json)
            assert prose_reading(text, in_json) == cold
