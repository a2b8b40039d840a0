"""Encoders: the lexical hashing encoder against its specification, caching, the sentence model."""

from __future__ import annotations

import hashlib
import math
import os
import socket
import sys

import numpy as np
import pytest

from dsgc_fast import MemoryStore
from dsgc_fast.encoders import (
    LEXICAL_DIM,
    SENTENCE_DIM,
    CachedEncoder,
    LexicalEncoder,
    SentenceEncoder,
    make_encoder,
    token_slot,
    tokenize,
)


def spec_vector(tokens: list[str]) -> list[float]:
    """The paper's encoder written out independently: SHA-256 bucket / sign, then L2 norm."""
    counts = [0] * 256
    for tok in tokens:
        digest = hashlib.sha256(tok.encode("utf-8")).digest()
        bucket = (digest[0] << 24 | digest[1] << 16 | digest[2] << 8 | digest[3]) % 256
        counts[bucket] += 1 if digest[4] % 2 == 0 else -1
    norm = math.sqrt(sum(c * c for c in counts))
    return [c / norm if norm else 0.0 for c in counts]


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("May Alice delete the production backup?", ["may", "alice", "delete", "the", "production", "backup"]),
        ("snake_case-and-kebab T4, RT-114!", ["snake_case", "and", "kebab", "t4", "rt", "114"]),
        ("", []),
        ("  ... ?! --- ", []),
        ("Café naïve", ["caf", "na", "ve"]),  # non-ASCII letters split tokens
        ("\u212aelvin", ["kelvin"]),  # the Kelvin sign lowercases to ASCII k before tokenizing
        ("İstanbul", ["i", "stanbul"]),  # lowercases to i + combining dot
        ("１２ 12", ["12"]),  # full-width digits are not [0-9]
        ("__init__ x1_y2", ["__init__", "x1_y2"]),
    ],
)
def test_tokenize_edge_cases(text, tokens):
    assert tokenize(text) == tokens


def test_token_slots_frozen():
    # bucket = first 4 digest bytes (big-endian) mod 256, sign from byte 4; frozen literals
    assert token_slot("backup") == (134, -1)
    assert token_slot("alice") == (201, -1)
    assert token_slot("t4") == (138, 1)
    assert token_slot("_") == (247, -1)


TEXTS = [
    "May Alice delete the production backup?",
    "the the the",  # repeated token accumulates
    "Clearance T4 may delete the production backup.",
    "",
    "?!",
    "Café \u212aelvin İstanbul",
    "orion-7 has held route ticket RT-114 since its spring platform migration.",
]


def test_lexical_matches_specification_exactly():
    got = LexicalEncoder().encode(TEXTS)
    assert got.dtype == np.float64 and got.shape == (len(TEXTS), LEXICAL_DIM)
    for row, text in zip(got, TEXTS):
        assert row.tolist() == spec_vector(tokenize(text))


def test_lexical_empty_and_tokenless_texts_are_zero_vectors():
    got = LexicalEncoder().encode(["", "...", "é"])
    assert not got.any()


def test_lexical_rows_are_unit_norm_and_batch_independent():
    enc = LexicalEncoder()
    batch = enc.encode(TEXTS)
    singles = np.vstack([enc.encode([t]) for t in TEXTS])
    assert np.array_equal(batch, singles)
    norms = np.linalg.norm(batch, axis=1)
    assert np.allclose(norms[[0, 1, 2, 5, 6]], 1.0) and norms[3] == norms[4] == 0.0


def test_lexical_empty_batch():
    assert LexicalEncoder().encode([]).shape == (0, LEXICAL_DIM)


@pytest.mark.parametrize("bad, err", [("a single string", TypeError), (["ok", 3], TypeError)])
def test_encoders_reject_bad_texts(bad, err):
    with pytest.raises(err, match="texts"):
        LexicalEncoder().encode(bad)


def test_make_encoder_names():
    assert make_encoder("lexical").dim == LEXICAL_DIM
    assert make_encoder("sentence").dim == SENTENCE_DIM  # lazy: nothing loads yet
    with pytest.raises(ValueError, match="encoder must be one of"):
        make_encoder("bag-of-words")


def test_a_store_and_a_cached_encoder_take_an_encoder_name():
    expected = LexicalEncoder().encode(["the order 12446"])
    np.testing.assert_array_equal(CachedEncoder("lexical").encode(["the order 12446"]), expected)
    with MemoryStore("lexical") as store:
        store.add("the order 12446", id="a")
        np.testing.assert_array_equal(store.get("a").embedding, expected[0].astype(np.float32))


@pytest.mark.parametrize("make", [MemoryStore, CachedEncoder])
def test_an_unknown_name_or_a_non_encoder_is_refused(make):
    """A string is never taken for a callable (``str.encode`` is no encoder)."""
    with pytest.raises(ValueError, match="encoder must be one of"):
        make("bag-of-words")
    with pytest.raises(TypeError, match="encoder must be a name .* got int"):
        make(3)


class CountingEncoder:
    name = "lexical"
    dim = LEXICAL_DIM

    def __init__(self):
        self.inner = LexicalEncoder()
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_cached_encoder_encodes_each_text_once(tmp_path):
    fake = CountingEncoder()
    cached = CachedEncoder(fake, tmp_path / "enc.npz")
    first = cached.encode(["a b", "c", "a b"])
    again = cached.encode(["c", "d"])
    assert fake.calls == [["a b", "c"], ["d"]]
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], again[0])

    cached.save()
    reloaded = CachedEncoder(CountingEncoder(), tmp_path / "enc.npz")
    assert len(reloaded) == 3
    assert np.array_equal(reloaded.encode(["a b", "c", "d"]), cached.encode(["a b", "c", "d"]))
    assert reloaded.encoder.calls == []


def test_cached_encoder_file_grows_with_the_total_text_length(tmp_path):
    """Regression: texts were saved as one fixed-width array, so a single 30,000-character
    tool result made every one of the 500 rows take 120 KB (a 60 MB file)."""
    texts = [f"short text {k}" for k in range(500)] + [
        "x" * 30_000,
        "caf\u00e9 \u96ea \ud83d\ude42",
        "lone \ud800 surrogate",
    ]
    cached = CachedEncoder(LexicalEncoder(), tmp_path / "enc.npz")
    cached.encode(texts)
    cached.save()
    assert (tmp_path / "enc.npz").stat().st_size < 2 * (len(texts) * LEXICAL_DIM * 8 + 40_000)
    reloaded = CachedEncoder(CountingEncoder(), tmp_path / "enc.npz")
    assert np.array_equal(reloaded.encode(texts), cached.encode(texts))
    assert reloaded.encoder.calls == []


def test_cached_encoder_ignores_a_file_of_another_encoder(tmp_path):
    path = tmp_path / "enc.npz"
    cached = CachedEncoder(CountingEncoder(), path)
    cached.encode(["x"])
    cached.save()
    other = CountingEncoder()
    other.name = "sentence"
    assert len(CachedEncoder(other, path)) == 0


def test_sentence_encoder_names_the_extra_when_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"`sentence` extra"):
        SentenceEncoder().encode(["hello"])


@pytest.mark.sentence
def test_sentence_encoder_loads_offline_and_embeds(monkeypatch):
    """No network, no change to the environment or to transformers' global settings.

    (torch sets a few variables of its own when it is imported; the snapshot follows that import.)
    """
    import sentence_transformers  # noqa: F401  (imports torch)
    from transformers.utils import logging as transformers_logging

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)

    def no_network(*args, **kwargs):
        raise AssertionError("the sentence encoder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    environment, bars = dict(os.environ), transformers_logging.is_progress_bar_enabled()
    enc = SentenceEncoder()
    texts = [
        "May Alice delete the production backup?",
        "Can Alice remove the production backup?",
        "The choir organized a quiz night in October.",
    ]
    got = enc.encode(texts)
    assert dict(os.environ) == environment and transformers_logging.is_progress_bar_enabled() == bars
    assert got.dtype == np.float64 and got.shape == (3, SENTENCE_DIM)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-12)
    assert got[0] @ got[1] > got[0] @ got[2] + 0.3
    assert np.array_equal(enc.encode(texts), got)  # same batch, same bits


def test_a_bounded_memo_keeps_the_texts_of_the_call_it_fills():
    """Filling the memo past ``max_texts`` evicts texts of other calls, never one this call reads."""
    cached = CachedEncoder(LexicalEncoder(), max_texts=2)
    cached.encode(["alpha", "beta"])
    rows = cached.encode(["alpha", "gamma"])  # gamma's row evicts beta, the least recently used
    np.testing.assert_array_equal(rows, LexicalEncoder().encode(["alpha", "gamma"]))
    assert cached.missing(["alpha", "beta", "gamma"]) == ["beta"]
