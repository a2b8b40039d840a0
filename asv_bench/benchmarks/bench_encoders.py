"""Encoders: the lexical hashing encoder over N texts, the sentence encoder at small N."""

from __future__ import annotations

from dsgc_fast.encoders import LexicalEncoder

from .common import skip_above


def _texts(n: int) -> list[str]:
    return [
        f"Block {i}: the deploy of service s{i % 97} waits on ticket T-{i * 7 % 1009} and its owner." for i in range(n)
    ]


class Lexical:
    params = [[20, 50, 1_000, 100_000]]
    param_names = ["n"]

    def setup(self, n):
        skip_above(n)
        self.texts = _texts(n)
        LexicalEncoder().encode(self.texts[:5])

    def time_encode_fresh(self, n):
        LexicalEncoder().encode(self.texts)


class Sentence:
    """all-MiniLM-L6-v2 on the CPU (needs the `sentence` extra; skipped without it)."""

    params = [[20, 50]]
    param_names = ["n"]
    timeout = 300

    def setup(self, n):
        try:
            from dsgc_fast.encoders import SentenceEncoder

            self.encoder = SentenceEncoder()
            self.encoder.encode(["warm up"])
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        self.texts = _texts(n)

    def time_encode(self, n):
        self.encoder.encode(self.texts)
