"""Session shapes: whatever ``add_messages`` accepts must compact and round-trip through ``to_messages``.

Random sequences of chat messages and plain blocks (tool calls and results in any order, ids
reused, messages between a call and its result, annotations that bind or use any referent,
including the adapter's reserved ``tool_call:``/``tool_result:`` names, plain blocks whose
meta looks like a message), added in one to three batches.  A refused batch changes nothing;
after the accepted ones, ``to_messages`` returns exactly the accepted messages (annotations
stripped, plain blocks as system messages), and after any compaction and recall it is still a
valid chat list with every tool-call unit whole.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast.memory.messages import SessionError, add_messages, check_messages, compact_messages, to_messages

from ._cases import examples
from .test_messages import call, new_store, units_of

CALL_IDS = ["c0", "c1", "c2", "c3"]
REFERENTS = ["acct", "ticket", "tool_call:c0", "tool_result:c1", "tool_call:c2"]
words = st.lists(st.sampled_from(["refund", "account", "kyc", "ticket", "weather"]), min_size=1, max_size=5).map(
    " ".join
)
annotations = st.fixed_dictionaries(
    {},
    optional={
        "binds": st.dictionaries(st.sampled_from(REFERENTS), words, max_size=2),
        "uses": st.lists(st.sampled_from(REFERENTS), max_size=2),
        "pinned": st.booleans(),
    },
)


@st.composite
def records(draw):
    kind = draw(st.sampled_from(["user", "system", "assistant", "calls", "calls", "tool", "tool", "tool", "block"]))
    if kind == "block":
        record = {"text": draw(words)}
        if draw(st.booleans()):
            record["meta"] = draw(
                st.sampled_from([{"source": "notes"}, {"role": "user"}, {"message": {"role": "tool"}}])
            )
    elif kind == "calls":
        ids = draw(st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=2, unique=True))
        record = {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}
    elif kind == "tool":
        record = {"role": "tool", "tool_call_id": draw(st.sampled_from(CALL_IDS)), "content": draw(words)}
    else:
        record = {"role": kind, "content": draw(words)}
    if draw(st.integers(0, 3)) == 0:
        record.update(draw(annotations)) if kind == "block" else record.update(dsgc=draw(annotations))
    return record


def rendered(record):
    """What ``to_messages`` gives back for an accepted record (before any eviction)."""
    if "role" not in record:
        return {"role": "system", "content": record["text"]}
    return {k: v for k, v in record.items() if k != "dsgc"}


@given(
    batches=st.lists(st.lists(records(), min_size=1, max_size=6), min_size=1, max_size=3),
    steps=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(dsgc_fast.POLICIES), st.sampled_from(["first_fit", "prefix"])),
                   min_size=1, max_size=2),
    recall=st.integers(0, 5),
)  # fmt: skip
@settings(max_examples=examples(2))
def test_fuzz_accepted_sessions_compact_and_round_trip(batches, steps, recall):
    store = new_store()
    accepted, ids = [], []
    for batch in batches:
        before = store.total
        try:
            ids += add_messages(store, batch)
        except SessionError as exc:
            assert exc.where is not None and exc.where.startswith("message ") and store.total == before
            continue
        accepted += batch
    assert to_messages(store) == [rendered(r) for r in accepted]
    tool_units = units_of(accepted, ids)
    for budget, policy, selection in steps:
        query = None if any(b.meta.get("role") == "user" for b in store.blocks(embeddings=False)) else "refund"
        try:
            report = compact_messages(store, budget, query=query, policy=policy, selection=selection)
        except dsgc_fast.ReferentEvictionError:
            continue
        kept = set(report.kept)
        assert all(unit <= kept or not unit & kept for unit in tool_units)
        check_messages(to_messages(store))
        archived = store.archived_ids()
        if archived:
            store.recall(archived[recall % len(archived)])
            check_messages(to_messages(store))
