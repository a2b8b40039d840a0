"""The ``tokenizer=`` option on every entry point: the store, ``compact_messages``, ``select``, the CLI.

A chat message costs what the chat API charges for it (``message_tokens``, framing included);
a plain block costs the count of its text; ``"whitespace"`` is the paper's cost of the text.
"""

from __future__ import annotations

import json

import pytest

from dsgc_fast import MemoryStore, SelectCache, select, whitespace_cost
from dsgc_fast.cli import main
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.content_kinds import IMAGE_TOKENS
from dsgc_fast.memory.messages import add_messages, compact_messages
from dsgc_fast.memory.token_counts import (
    TOKENS_PER_MESSAGE,
    TokenCounter,
    block_tokens,
    default_tokenizer,
    message_tokens,
    offline_encodings_available,
    token_counter,
)

needs_tiktoken = pytest.mark.skipif(not offline_encodings_available(), reason="needs the tokens extra")

MESSAGES = [
    {"role": "system", "content": "You are a support triage assistant."},
    {"role": "user", "content": "Account 8841-C disputes a charge.", "dsgc": {"binds": {"that account": "8841-C"}}},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup_charge", "arguments": '{"account": "8841-C"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"charge_id": "ch_5521", "status": "disputed"}'},
    {"role": "user", "content": "Did that account clear KYC?", "dsgc": {"uses": ["that account"]}},
]


def words(text: str) -> int:
    return len(text.split())


def plain(message):
    return {k: v for k, v in message.items() if k != "dsgc"}


@pytest.mark.parametrize(
    "tokenizer",
    ["approx", "whitespace", words, token_counter(words)]
    + (["o200k_base", "cl100k_base", None] if offline_encodings_available() else [None]),
)
def test_store_and_select_charge_the_chat_cost_of_each_message(tokenizer):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=tokenizer)
    ids = add_messages(store, MESSAGES)
    counter = store.tokenizer
    want = [block_tokens(store.get(i).text, plain(m), counter) for i, m in zip(ids, MESSAGES)]
    assert [store.get(i).cost for i in ids] == want
    if counter.frames_messages:
        assert want == [message_tokens(plain(m), counter) for m in MESSAGES]
    else:
        assert want == [whitespace_cost(store.get(i).text) for i in ids]
    store.add("a plain note", id="note")
    assert store.get("note").cost == counter.count("a plain note")  # a plain block: its text alone
    got = select(MESSAGES, 10_000, tokenizer=tokenizer, cache=SelectCache())
    assert got.report.to_dict()["decisions"] == compact_messages(_fresh(tokenizer), 10_000).to_dict()["decisions"]
    assert [got.report.decisions[i].cost for i in ids] == want


def _fresh(tokenizer):
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=tokenizer)
    add_messages(store, MESSAGES)
    return store


@needs_tiktoken
def test_the_default_is_o200k_with_the_extra():
    assert default_tokenizer() == "o200k_base"
    assert MemoryStore().tokenizer.name == "o200k_base"
    assert select(MESSAGES, 1000).report.decisions["m4"].cost == message_tokens(plain(MESSAGES[4]), "o200k_base")


def test_whitespace_counts_text_without_framing():
    counter = token_counter("whitespace")
    assert not counter.frames_messages and token_counter("approx").frames_messages
    message = {"role": "user", "content": "one two three"}
    assert block_tokens("one two three", message, counter) == 3
    assert block_tokens("one two three", message, words) == TOKENS_PER_MESSAGE + 1 + 3  # framing, role, text


def test_tokenizer_objects_are_accepted():
    tiktoken = pytest.importorskip("tiktoken")
    if not offline_encodings_available():
        pytest.skip("needs the tokens extra")
    from dsgc_fast.memory.token_counts import encoding

    enc = encoding("cl100k_base")
    assert isinstance(enc, tiktoken.Encoding)
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer=enc)
    (i,) = add_messages(store, [MESSAGES[0]])
    assert store.get(i).cost == message_tokens(MESSAGES[0], "cl100k_base")
    cache = SelectCache()
    select(MESSAGES, 1000, tokenizer=enc, cache=cache)
    assert cache.counter(enc) is cache.counter(enc)  # one counter (and count cache) per tokenizer object


def test_token_counter_is_replaced_by_tokenizer_with_a_pointer(tmp_path):
    with pytest.raises(TypeError, match="token_counter= was replaced by tokenizer="):
        MemoryStore(token_counter=len)
    with pytest.raises(TypeError, match="token_counter= was replaced by tokenizer="):
        MemoryStore.load(tmp_path / "x.db", token_counter=len)
    with pytest.raises(ValueError, match="tokenizer: unknown tokenizer 'gpt2'"):
        MemoryStore(tokenizer="gpt2")
    with pytest.raises(TypeError, match="tokenizer: tokenizer must be"):
        MemoryStore(tokenizer=3)
    assert MemoryStore(encoder=LexicalEncoder(), tokenizer=len).tokenizer.name == "callable:len"  # old positional use


def test_an_archive_refuses_another_tokenizer(tmp_path):
    path = tmp_path / "agent.db"
    with MemoryStore(archive=path, tokenizer="whitespace") as store:
        store.add("kept text")
        store.save(tmp_path / "copy.db")
    with pytest.raises(ValueError, match="costs were counted with 'whitespace', but tokenizer is 'approx'"):
        MemoryStore(archive=path, tokenizer="approx")
    with pytest.raises(ValueError, match="counted with 'whitespace'"):
        MemoryStore.load(tmp_path / "copy.db", tokenizer="approx")
    with MemoryStore(archive=path, tokenizer="whitespace") as again:
        assert again.total == 1


def test_compact_messages_takes_the_stores_tokenizer_only():
    store = _fresh("approx")
    assert compact_messages(store, 1000, tokenizer="approx").kept
    with pytest.raises(ValueError, match="tokenizer 'whitespace' is not the store's"):
        compact_messages(store, 1000, tokenizer="whitespace")


def test_a_message_with_an_image_costs_the_image_estimate_or_its_explicit_cost():
    image = {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}],
    }
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="approx")
    (i,) = add_messages(store, [image])
    assert store.get(i).cost == message_tokens(image, "approx") > IMAGE_TOKENS
    assert select([image], 100, tokenizer="approx", cache=SelectCache(), on_over_budget="roots_only").indices == [0]
    (i,) = add_messages(store, [{**image, "dsgc": {"cost": 900}}])
    assert store.get(i).cost == 900
    assert (
        MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace").add("see") == "b0"
    )  # the paper's cost needs no framing


def test_the_cli_budget_is_in_the_chosen_tokens(tmp_path, capsys):
    session = tmp_path / "s.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES))
    costs = {}
    for name in ("whitespace", "approx"):
        assert (
            main(["retain", "--input", str(session), "--budget", "1000", "--tokenizer", name, "--format", "json"]) == 0
        )
        costs[name] = {d["id"]: d["cost"] for d in json.loads(capsys.readouterr().out)["decisions"]}
    assert costs["whitespace"]["m4"] == 5 and costs["approx"]["m4"] == block_tokens("", plain(MESSAGES[4]), "approx")
    with pytest.raises(SystemExit):
        main(["retain", "--input", str(session), "--budget", "10", "--tokenizer", "gpt2"])


def test_counters_are_token_counters():
    assert isinstance(MemoryStore(tokenizer="approx").tokenizer, TokenCounter)
