"""The Agents SDK ``InputFilter`` is a pure function of the items it is handed (issue 26 item 1).

``InputFilter`` is documented (``dsgc_fast.integrations.openai_agents``) as stateless: it groups
the Responses items into chat messages, decides with ``dsgc_fast.select`` and returns the kept
groups' items (the input's own objects, in input order; an output ``select`` cut or digested as
a copy with the text ``select`` sends; trailing reasoning items always), with a binding table as
a system item after the leading system/developer items.  ``reference`` below computes exactly
that from ``select``'s ``Selection.messages`` with a fresh ``SelectCache``.

Random histories (system and developer items, user turns as text or input parts, assistant
output messages, reasoning, parallel ``function_call`` units with outputs in any order, large
outputs, ``binds`` / ``uses`` annotations from ``annotate``) go to ``InputFilter`` in different
chunkings (growth a unit or an item at a time, a call waiting for its output, replays of an
earlier point), cache states (the process cache, a ``SelectCache`` shared with another
conversation and holding one history, one holding few texts, caches cleared) and restarts (a
new ``InputFilter``): every call sends exactly what ``reference`` sends.  Edits, removals and
redactions are reflected at the next call, and a removed secret is held by nothing the filter
owns once the caller's cache forgets it.
"""

from __future__ import annotations

import json
import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._requires import require

require("agents", "openai-agents")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents.run_config import CallModelData, ModelInputData

from dsgc_fast import SelectCache, forget_texts, select
from dsgc_fast.integrations.openai_agents import InputFilter, item_groups, item_kind
from dsgc_fast.memory.history import default_cache
from tests._billing_script import CUSTOMER, OTHERS, TOOLS
from tests._reachable import SECRET, reachable_strings
from tests._scripted_agents_model import text_of

ACCOUNTS = [*OTHERS, CUSTOMER]
TOOL_NAMES = [tool.__name__ for tool in TOOLS]
TOPICS = ["KYC status", "disputed charge", "late payout", "refund", "chargeback fee"]

LONG = "It has a long dispute history. " * 30
BINDER = re.compile(r"^From now on, that account means (AC-\d{4})")


def annotate(item):
    """``binds`` for a user item that names "that account", ``uses`` for one that refers to it."""
    if item.get("role") != "user":
        return None
    text = text_of(item)
    found = BINDER.match(text)
    if found:
        return {"binds": {"that account": found.group(1)}}
    return {"uses": ["that account"]} if "that account" in text else None


@st.composite
def units(draw, k: int, kind: str | None = None) -> list[dict]:
    """One unit of a history (ids from ``k``): a user turn, an answer, a tool-call unit or an instruction."""
    kind = kind or draw(st.sampled_from(["user", "user", "tools", "tools", "answer", "system"]))
    account, topic = draw(st.sampled_from(ACCOUNTS)), draw(st.sampled_from(TOPICS))
    if kind == "user":
        text = draw(
            st.sampled_from(
                [
                    f"Please check the {topic} of account {account}.",
                    f"From now on, that account means {account}: check its {topic}.",
                    f"From now on, that account means {account}. {LONG}",
                    f"What about the {topic} of that account?",
                ]
            )
        )
        if draw(st.booleans()):
            return [{"role": "user", "content": text}]
        return [{"role": "user", "content": [{"type": "input_text", "text": text}]}]
    if kind == "answer":
        text = f"The {topic} of {account} is under review."
        if draw(st.booleans()):
            return [{"role": "assistant", "content": text}]
        return [said(f"msg_{k}", text)]
    if kind == "system":
        return [{"role": draw(st.sampled_from(["system", "developer"])), "content": f"Note: {account} is audited."}]
    calls = [
        {
            "type": "function_call",
            "call_id": f"c{k}_{j}",
            "name": draw(st.sampled_from(TOOL_NAMES)),
            "arguments": json.dumps({"account": draw(st.sampled_from(ACCOUNTS))}),
        }
        for j in range(draw(st.integers(1, 3)))
    ]
    size = draw(st.sampled_from([1, 1, 3, 40]))
    outputs = [
        {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": json.dumps([{"call": call["call_id"], "status": "cleared", "n": n} for n in range(size)]),
        }
        for call in calls
    ]
    lead = [{"type": "reasoning", "id": f"rs_{k}", "summary": [{"type": "summary_text", "text": f"check {topic}"}]}]
    lead = lead if draw(st.booleans()) else []
    if draw(st.booleans()):
        lead.append(said(f"msg_{k}", f"Checking the {topic}."))
    return [*lead, *calls, *draw(st.permutations(outputs))]


def said(item_id: str, text: str) -> dict:
    """An assistant output message, as the SDK puts a model's text in its input."""
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "role": "assistant", "id": item_id, "status": "completed", "content": content}


@st.composite
def histories(draw) -> tuple[list[list[dict]], int]:
    """Units (the first an instruction, the second a user turn) and a budget."""
    out = [[{"role": "system", "content": "You triage billing tickets."}], draw(units(0, "user"))]
    out += [draw(units(k)) for k in range(1, draw(st.integers(1, 9)))]
    if draw(st.booleans()):  # the first turn names "that account" at length, the last question uses it
        out[1] = [{"role": "user", "content": f"From now on, that account means AC-7730. {LONG}"}]
        out.append([{"role": "user", "content": "Did that account clear KYC?"}])
    return out, draw(st.sampled_from([0, 20, 60, 150, 400, 5000]))


def flat(chunks: list[list[dict]]) -> list[dict]:
    return [item for chunk in chunks for item in chunk]


def shape(sent: list, items: list) -> list[tuple[int, str]]:
    """What a model reads of the items sent: each one's JSON, and its input position when it is the input's object."""
    return [(next((k for k, item in enumerate(items) if item is s), -1), json.dumps(s, sort_keys=True)) for s in sent]


def reference(items: list[dict], budget: int, annotate=None) -> list:
    """``InputFilter``'s documented rule: ``select`` (a fresh cache) over the groups' chat messages, mapped back."""
    groups = item_groups(items)
    spoken = [group for group in groups if group.message is not None]
    chat = []
    for group in spoken:
        found = [annotate(items[k]) for k in group.indices] if annotate else []
        annotation = next((a for a in found if a), None)  # a unit of these histories has at most one
        chat.append({**group.message, **({"dsgc": annotation} if annotation else {})})
    chosen = select(chat, budget, on_over_budget="truncate", cache=SelectCache())
    table = [{"role": "system", "content": text} for text in chosen.tables]  # binding and value tables
    messages = [m for m in chosen.messages if m not in table]
    sent: dict[int, dict] = {}
    for g, message in zip(chosen.indices, messages, strict=True):
        for k in spoken[g].indices:
            cut = item_kind(items[k]).cut and message["content"] != chat[g]["content"]
            sent[k] = {**items[k], "output": message["content"]} if cut else items[k]
    for group in groups:
        if group.message is None:  # trailing reasoning items
            sent.update((k, items[k]) for k in group.indices)
    out = [sent[k] for k in sorted(sent)]
    lead = next((k for k, item in enumerate(out) if item.get("role") not in ("system", "developer")), len(out))
    return [*out[:lead], *table, *out[lead:]]


def through_run_config(chosen: InputFilter, items: list[dict]) -> list:
    """What the SDK sends when ``chosen`` is its ``call_model_input_filter``."""
    data = CallModelData(model_data=ModelInputData(input=items, instructions="x"), agent=None, context=None)
    got = chosen(data)
    assert got.instructions == "x"
    return got.input


@settings(max_examples=40, deadline=None)
@given(histories(), st.booleans(), st.data())
def test_the_filter_sends_what_select_sends_whatever_the_chunking_caches_and_restarts(case, annotated, data):
    chunks, budget = case
    notes = annotate if annotated else None
    history = flat(chunks)
    start = len(chunks[0]) + len(chunks[1])  # a prefix holds the instruction and the first user turn
    at_units = sorted({len(flat(chunks[:n])) for n in data.draw(st.lists(st.integers(2, len(chunks)), max_size=3))})
    at_items = data.draw(st.lists(st.integers(start, len(history)), max_size=3))  # a call may wait for its output
    other = flat([chunks[0], *chunks[:0:-1]])  # another conversation over the same caches
    process = InputFilter(budget, annotate=notes)
    one = SelectCache(max_histories=1)
    shared = [InputFilter(budget, annotate=notes, cache=one), InputFilter(budget, annotate=notes, cache=one)]
    few = InputFilter(budget, annotate=notes, cache=SelectCache(max_texts=3))
    for n in sorted({*at_units, *at_items, len(history)}):  # the list grows
        prefix = history[:n]
        expected = shape(reference(prefix, budget, notes), prefix)
        assert shape(process.select(prefix), prefix) == expected
        assert shape(through_run_config(few, prefix), prefix) == expected
        shared[0].select(other)
        assert shape(shared[1].select(prefix), prefix) == expected
    back = data.draw(st.integers(start, len(history)))  # time travel, then the list grows again
    if data.draw(st.booleans()):
        one.clear()
    for n in (back, len(history)):
        assert shape(shared[0].select(history[:n]), history[:n]) == shape(
            reference(history[:n], budget, notes), history[:n]
        )
    expected = shape(reference(history, budget, notes), history)
    assert shape(InputFilter(budget, annotate=notes).select(history), history) == expected  # restart
    forget_texts()
    assert shape(process.select(history), history) == expected


@settings(max_examples=25, deadline=None)
@given(histories(), st.data())
def test_edits_removals_and_redactions_are_reflected_and_nothing_removed_is_kept(case, data):
    chunks, budget = case
    k = data.draw(st.integers(1, len(chunks) - 1))
    secret = {"role": "user", "content": f"My card is {SECRET}, charge it for account AC-4417."}
    before = flat([*chunks[: k + 1], [secret], *chunks[k + 1 :]])
    cache = SelectCache()
    chosen = InputFilter(budget, cache=cache)
    assert shape(chosen.select(before), before) == shape(reference(before, budget), before)
    assert [s for s in reachable_strings(chosen) if SECRET in s]  # held while the items hold it
    edit = data.draw(st.sampled_from(["remove", "redact", "remove_unit", "edit_output"]))
    if edit == "remove":
        after = flat([*chunks[: k + 1], *chunks[k + 1 :]])
    elif edit == "redact":
        redacted = {**secret, "content": "My card is [redacted], charge it for account AC-4417."}
        after = flat([*chunks[: k + 1], [redacted], *chunks[k + 1 :]])
    elif edit == "remove_unit":  # the secret and the unit before it (a whole tool-call unit if it is one)
        after = flat([*chunks[:k], *chunks[k + 1 :]]) if k > 1 else flat([*chunks[: k + 1], *chunks[k + 1 :]])
    else:  # the secret in a tool output, then replaced in place
        after = flat([*chunks[: k + 1], *chunks[k + 1 :]])
        outputs = [item for item in after if item.get("type") == "function_call_output"]
        if outputs:
            outputs[0]["output"] = f"card {SECRET} on file"
            assert shape(chosen.select(after), after) == shape(reference(after, budget), after)
            outputs[0]["output"] = "card [redacted] on file"  # an in-place edit of the framework's item
    assert shape(chosen.select(after), after) == shape(reference(after, budget), after)
    cache.clear()  # the caller's cache forgets what it held; the filter itself holds nothing of the items
    assert not [s for s in reachable_strings(chosen) if SECRET in s]
    process = InputFilter(budget)  # on the process cache: forget_texts empties it
    process.select(before)
    assert shape(process.select(after), after) == shape(reference(after, budget), after)
    forget_texts()
    assert not [s for s in reachable_strings((process, default_cache())) if SECRET in s]


def test_reachable_strings_finds_what_the_process_cache_holds():
    """The check above can fail: before ``forget_texts`` the process cache holds the secret."""
    InputFilter(500).select([{"role": "system", "content": "You triage."}, {"role": "user", "content": SECRET}])
    assert [s for s in reachable_strings(default_cache()) if SECRET in s]
    forget_texts()
    assert not [s for s in reachable_strings(default_cache()) if SECRET in s]
