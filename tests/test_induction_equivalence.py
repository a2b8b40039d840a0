"""The engines agree on induced inputs: what the store's induction feeds retention.

Random chat sessions (user turns naming values, tool calls with JSON arguments, JSON tool
results, assistant prose) go through ``add_messages`` with its default induction.  The
engine inputs ``compact_messages`` builds from them (declared and induced edges, tool-unit
referents, working ages, live roots) are rebuilt from the store's public API and given to
``dsgc_fast.retain`` and ``dsgc_ref.retain``: the two must agree bit for bit, and the store
must keep what the fast engine keeps.  The pinning form of induction (``induce_messages``
with ``pin_referents=True``) feeds both engines too.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
import dsgc_ref
from dsgc_fast import MemoryStore
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.induction import induce_messages, message_texts
from dsgc_fast.memory.messages import add_messages, compact_messages, current_turn, live_roots, working_ages
from dsgc_ref.contract import ReferentEvictionError

from ._cases import assert_same, examples, to_lists

KEYS = ["order_id", "symbol", "folder", "ticket_id", "current_working_directory", "status", "id"]
VALUES = [12446, "3426812", "AAPL", "temp", 2, 7, "ch_9f2a", "open", "rear_left"]
USER = ["Cancel that order.", "What does AAPL trade at?", "Move it to the temp folder.", "Check order 12446.",
        "Is the ticket I opened done?", "Thanks, and the weather?", "Use the same folder as before."]  # fmt: skip
SAY = ["Order 12446 is open.", "AAPL is up.", "Done with ch_9f2a.", "Nothing new.", "Ticket 2 is closed."]
FUNCTIONS = ["get_order_details", "create_ticket", "get_stock_info", "cd", "ls"]
ENCODER = LexicalEncoder()

payloads = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@st.composite
def sessions(draw) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "You help with orders."}]
    for k in range(draw(st.integers(0, 9))):
        kind = draw(st.sampled_from(["user", "call", "say"]))
        if kind == "user":
            messages.append({"role": "user", "content": draw(st.sampled_from(USER))})
        elif kind == "say":
            messages.append({"role": "assistant", "content": draw(st.sampled_from(SAY))})
        else:
            name, arguments = draw(st.sampled_from(FUNCTIONS)), draw(payloads)
            function = {"name": name, "arguments": json.dumps(arguments)}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": f"c{k}", "type": "function", "function": function}],
                }
            )
            messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": json.dumps(draw(payloads))})
    messages.append({"role": "user", "content": draw(st.sampled_from(USER))})
    return messages


def run_both(q, embs, costs, budget, **kwargs):
    """Both engines on one case; ``None`` for an engine that raised ``ReferentEvictionError``."""
    try:
        fast = dsgc_fast.retain(q, embs, costs, budget, **kwargs)
    except ReferentEvictionError:
        fast = None
    rq, re, rc, rk = to_lists(q, embs, costs, kwargs)
    try:
        ref = dsgc_ref.retain(rq, re, rc, budget, **rk)
    except ReferentEvictionError:
        ref = None
    assert (fast is None) == (ref is None)
    if fast is not None:
        assert_same(fast, ref)
    return fast


def store_inputs(store: MemoryStore) -> tuple[list[str], dict]:
    """The active ids and the engine arguments ``compact_messages`` gives ``store.compact``."""
    blocks = store.blocks()
    ids = [b.id for b in blocks]
    at = {block_id: i for i, block_id in enumerate(ids)}
    declared = [(at[b.id], at[d]) for b in blocks for d in b.depends_on]
    induced = [(at[j], at[i]) for j, i in store.induced_edges()]
    ages = working_ages(blocks)
    live = sorted(at[block_id] for block_id in live_roots(blocks))
    args = {
        "q": ENCODER.encode([current_turn(blocks)[0].text])[0],
        "embs": np.array([b.embedding for b in blocks]),
        "costs": np.array([b.cost for b in blocks], dtype=np.int64),
        "edges": np.array(declared + induced, dtype=np.int64).reshape(-1, 2),
        "live": live,
        "binds": [dict(b.binds) or None for b in blocks],
        "uses": [list(b.uses) for b in blocks],
        "ages": [ages.get(block_id, 0) for block_id in ids],
    }
    return ids, args


@given(messages=sessions(), fraction=st.sampled_from([0.1, 0.25, 0.5, 1.0]), policy=st.sampled_from(["agent", "dsgc"]))
@settings(max_examples=examples(2))
def test_engines_agree_on_the_store_induced_inputs(messages, fraction, policy):
    with MemoryStore(encoder=ENCODER, tokenizer="whitespace") as store:
        add_messages(store, messages)
        ids, args = store_inputs(store)
        budget = int(args["costs"].sum() * fraction)
        q, embs, costs = args.pop("q"), args.pop("embs"), args.pop("costs")
        if policy != "agent":
            args.pop("ages")
        fast = run_both(q, embs, costs, budget, params=store.params, policy=policy, **args)
        try:
            report = compact_messages(store, budget, policy=policy, values=False)  # the engine alone: no reserve
        except ReferentEvictionError:
            assert fast is None
            return
        assert fast is not None and report.kept == [ids[i] for i in fast.retained.tolist()]


@given(
    messages=sessions(),
    fraction=st.sampled_from([0.1, 0.25, 0.5]),
    policy=st.sampled_from(["agent", "dsgc", "recency"]),
)
@settings(max_examples=examples(2))
def test_engines_agree_on_pinned_induced_referents(messages, fraction, policy):
    texts = message_texts(messages)
    found = induce_messages(messages, pin_referents=True)
    embs = ENCODER.encode(texts)
    costs = np.array([dsgc_fast.whitespace_cost(t) for t in texts], dtype=np.int64)
    n = len(texts)
    ages = {"ages": [max(0, n - 1 - i) % 4 for i in range(n)]} if policy == "agent" else {}
    run_both(embs[-1], embs, costs, int(costs.sum() * fraction), policy=policy, edges=found.edges,
             live=[0, n - 1], binds=found.binds, uses=found.uses, **ages)  # fmt: skip
