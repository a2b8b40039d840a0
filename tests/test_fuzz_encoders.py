"""Fuzzing the encoders: any text list (empty, gigantic, any code point), non-str items, bytes,
and damaged encoding-cache files.

Acceptable outcomes: a (len(texts), dim) float64 matrix of unit (or, lexical, all-zero) rows
that does not depend on the other texts of the call, or ``TypeError``/``ValueError`` with a
message.  A damaged ``CachedEncoder`` file is ignored: the texts are encoded again.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.encoders import LEXICAL_DIM, CachedEncoder, LexicalEncoder, SentenceEncoder, tokenize

from ._cases import examples

texts = st.text(alphabet=st.characters(), max_size=40)  # any code point, lone surrogates included
items = st.one_of(
    texts, texts, st.binary(max_size=5), st.none(), st.integers(), st.floats(), st.lists(texts, max_size=2)
)


def check_rows(out: np.ndarray, n: int, dim: int, *, zero_ok: bool) -> None:
    assert out.shape == (n, dim) and out.dtype == np.float64 and np.isfinite(out).all()
    norms = np.linalg.norm(out, axis=1)
    assert (np.abs(norms - 1.0) < 1e-12).all() or (zero_ok and ((np.abs(norms - 1.0) < 1e-12) | (norms == 0)).all())


@given(batch=st.lists(items, max_size=6) | texts | st.none() | st.integers())
@settings(max_examples=examples(3))
def test_fuzz_lexical_encoder_with_any_items(batch):
    encoder = LexicalEncoder()
    try:
        out = encoder.encode(batch)
    except TypeError as exc:
        assert str(exc)
        return
    check_rows(out, len(batch), LEXICAL_DIM, zero_ok=True)
    for k, text in enumerate(batch):  # a row depends on its text only; no tokens -> zero row
        alone = LexicalEncoder().encode([text])[0]
        assert alone.tobytes() == out[k].tobytes()
        assert (alone == 0).all() == (not tokenize(text))


def test_lexical_encoder_on_gigantic_texts():
    rng = np.random.default_rng(0)
    words = np.array(["account", "é", "雪", "kyc", "refund", "ǅ", "İ", "\x00", "🙂"])
    huge = " ".join(rng.choice(words, size=1_000_000).tolist())  # ~4.5 million characters
    one_token = "a" * 5_000_000
    out = LexicalEncoder().encode([huge, one_token, ""])
    check_rows(out, 3, LEXICAL_DIM, zero_ok=True)
    assert (out[2] == 0).all() and np.count_nonzero(out[1]) == 1


class CountingEncoder:
    """A lexical encoder that counts the texts it is asked to encode."""

    name, dim = "lexical", LEXICAL_DIM

    def __init__(self) -> None:
        self.calls: list[str] = []

    def encode(self, batch):
        self.calls += list(batch)
        return LexicalEncoder().encode(batch)


@pytest.fixture(scope="module")
def cache_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz-cache") / "enc.npz"
    cached = CachedEncoder(LexicalEncoder(), path)
    cached.encode([f"text number {k} about accounts" for k in range(50)])
    cached.save()
    return path


@given(
    kind=st.sampled_from(["truncate", "flip", "junk", "npy", "wrong-keys", "bad-rows"]),
    at=st.integers(0, 10**6),
    value=st.integers(0, 255),
    junk=st.binary(max_size=200),
)
@settings(max_examples=examples(1))
def test_fuzz_damaged_cache_file_is_ignored(cache_file, tmp_path_factory, kind, at, value, junk):
    """Regression: a truncated or foreign cache file used to raise EOFError, BadZipFile,
    KeyError or a misleading pickle ValueError, or (mismatched rows) load silently."""
    data = cache_file.read_bytes()
    path = tmp_path_factory.mktemp("damaged-cache") / "enc.npz"
    if kind == "truncate":
        path.write_bytes(data[: at % len(data)])
    elif kind == "flip":
        damaged = bytearray(data)
        damaged[at % len(data)] = value
        path.write_bytes(bytes(damaged))
    elif kind == "junk":
        path.write_bytes(junk)
    elif kind == "npy":
        with open(path, "wb") as handle:
            np.save(handle, np.zeros(3))
    elif kind == "wrong-keys":
        np.savez(path, encoder=np.array("lexical"), rows=np.zeros((1, LEXICAL_DIM)))
    else:
        n = at % 4
        np.savez(path, encoder=np.array("lexical"), texts=np.array(["a", "b", "c"][:n] or [""]),
                 embs=np.full((max(n, 1) + 1, LEXICAL_DIM), np.nan))  # fmt: skip
    inner = CountingEncoder()
    cached = CachedEncoder(inner, path)
    batch = ["text number 3 about accounts", "a fresh text"]
    out = cached.encode(batch)
    assert out.tobytes() == LexicalEncoder().encode(batch).tobytes()  # correct rows either way
    assert "a fresh text" in inner.calls


@pytest.mark.sentence
def test_sentence_encoder_on_edge_texts():
    edge = ["", "   ", "\x00", "word " * 50_000, "ǅ İ ß ﬃ 雪 🙂", "\u200b\ufeff", "a" * 100_000]
    encoder = SentenceEncoder()
    out = encoder.encode(edge)
    check_rows(out, len(edge), encoder.dim, zero_ok=False)
    assert encoder.encode([]).shape == (0, encoder.dim)


@pytest.mark.parametrize("bad", [["ok", "a\ud800b"], ["\udcff"]])
def test_sentence_encoder_rejects_lone_surrogates_before_loading_the_model(bad):
    """Regression: the tokenizer raised "TextEncodeInput must be Union[...]" (a TypeError naming nothing)."""
    encoder = SentenceEncoder()
    with pytest.raises(ValueError, match=r"texts\[\d\] is not valid Unicode"):
        encoder.encode(bad)
    assert encoder._model is None


@pytest.mark.parametrize("bad", [None, "one string", [b"bytes"], [1], [["nested"]]])
def test_sentence_encoder_rejects_non_str_items(bad):
    with pytest.raises(TypeError):
        SentenceEncoder().encode(bad)
