"""The width a store keeps embeddings in (``embedding_dtype``), in memory and in the archive."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import dsgc_fast
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.store import MemoryStore

DATA = Path(__file__).parent / "data"
ENC = LexicalEncoder()


def blob_sizes(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [
            n
            for (n,) in conn.execute(
                "SELECT length(embedding) FROM active UNION ALL SELECT length(embedding) FROM archive"
            )
        ]
    finally:
        conn.close()


@pytest.mark.parametrize(("asked", "width"), [(None, np.float32), ("float16", np.float16), (np.float64, np.float64)])
def test_the_width_is_kept_in_memory_in_the_archive_and_when_reopened(tmp_path, asked, width):
    path = tmp_path / "store.db"
    with MemoryStore(encoder=ENC, archive=path, embedding_dtype=asked) as store:
        assert store.embedding_dtype == width
        store.add("the order 12446 shipped", id="a")
        store.add("refund the order", id="b", embedding=np.linspace(-1, 1, ENC.dim))
        store.compact("refund", budget=store.get("b").cost)
        assert store.archived_ids() == ["a"]
        kept = {i: store.get(i).embedding for i in ("a", "b")}
    assert all(v.dtype == width for v in kept.values())
    np.testing.assert_array_equal(kept["a"], ENC.encode(["the order 12446 shipped"])[0].astype(width))
    assert blob_sizes(path) == [ENC.dim * np.dtype(width).itemsize] * 2
    with MemoryStore(encoder=ENC, archive=path) as reopened:
        assert reopened.embedding_dtype == width
        assert all(np.array_equal(reopened.get(i).embedding, v) for i, v in kept.items())
        reopened.save(tmp_path / "saved.db")
    loaded = MemoryStore.load(tmp_path / "saved.db", encoder=ENC)
    assert loaded.embedding_dtype == width and np.array_equal(loaded.get("a").embedding, kept["a"])
    loaded.close()


def test_a_resumed_archive_refuses_another_width(tmp_path):
    path = tmp_path / "store.db"
    MemoryStore(encoder=ENC, archive=path, embedding_dtype="float16").close()
    with pytest.raises(ValueError, match="stored as float16, but embedding_dtype is float32"):
        MemoryStore(encoder=ENC, archive=path, embedding_dtype="float32")
    with MemoryStore(encoder=ENC, archive=path, embedding_dtype="float16") as store:  # the same width is fine
        assert store.embedding_dtype == np.float16


def test_an_archive_written_before_widths_were_recorded_stays_float64(tmp_path):
    """``tests/data/store-v1.db`` holds float64 rows and names no width."""
    path = tmp_path / "store-v1.db"
    shutil.copy(DATA / "store-v1.db", path)
    conn = sqlite3.connect(path)
    raw = conn.execute("SELECT embedding FROM active WHERE id = 't1'").fetchone()[0]
    conn.close()
    with MemoryStore(encoder=ENC, archive=path) as store:
        assert store.embedding_dtype == np.float64
        assert store.get("t1").embedding.tobytes() == np.frombuffer(raw, dtype="<f8").tobytes()
        store.add("a new turn", id="t2", embedding=np.ones(store.dimension))
    with MemoryStore(encoder=ENC, archive=path) as reopened:
        assert reopened.embedding_dtype == np.float64 and reopened.get("t2").embedding.dtype == np.float64


def test_an_embedding_that_overflows_the_width_is_refused_and_nothing_is_written():
    with MemoryStore(encoder=ENC, embedding_dtype="float16") as store:
        store.add("kept", id="a")
        with pytest.raises(ValueError, match=r"embedding does not fit float16 .* wider embedding_dtype"):
            store.add("too large", embedding=np.full(ENC.dim, 1e5))
        assert store.ids() == ["a"]


@pytest.mark.parametrize("bad", ["int8", "float128", "f8>", ">f4", 3, "nonsense", np.int16])
def test_a_bad_width_is_refused(bad):
    with pytest.raises(ValueError, match="embedding_dtype must be one of"):
        MemoryStore(encoder=ENC, embedding_dtype=bad)


def test_a_corrupt_width_setting_is_reported(tmp_path):
    path = tmp_path / "store.db"
    MemoryStore(encoder=ENC, archive=path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE settings SET value = 'int8' WHERE key = 'embedding_dtype'")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match="is corrupt: embedding_dtype 'int8'"):
        MemoryStore(encoder=ENC, archive=path)


def test_select_keeps_the_store_width():
    """The stateless path scores the rows a default store would keep: the same decisions."""
    chat = [{"role": "user", "content": f"question {k} about order {k}"} for k in range(12)]
    with MemoryStore(encoder=ENC) as store:
        dsgc_fast.memory.messages.add_messages(store, chat)
        want = dsgc_fast.memory.messages.compact_messages(store, 40).to_dict()["decisions"]
    got = dsgc_fast.select(chat, 40, encoder=ENC, cache=dsgc_fast.SelectCache(ENC))
    assert got.report.to_dict()["decisions"] == want


def _huge_for(marked: str):
    """A lexical encoder whose row of any text holding ``marked`` overflows float16."""

    def encode(texts):
        rows = ENC.encode(texts)
        rows[[marked in t for t in texts]] = 1e5
        return rows

    return encode


def test_a_batch_of_messages_is_stored_in_the_width_as_one_by_one():
    from dsgc_fast.memory.messages import SessionError, add_messages

    messages = [{"role": "user", "content": f"message {k} about topic {k % 3}"} for k in range(5)]
    batch, single = MemoryStore(encoder=ENC), MemoryStore(encoder=ENC)
    add_messages(batch, messages)
    for m in messages:
        add_messages(single, [m])
    assert [b.embedding.tobytes() for b in batch.blocks()] == [b.embedding.tobytes() for b in single.blocks()]

    store = MemoryStore(encoder=_huge_for("huge"), embedding_dtype="float16")
    add_messages(store, [{"role": "user", "content": "kept"}])
    with pytest.raises(SessionError, match=r"^message 2: embedding does not fit float16"):
        add_messages(store, [*messages[:2], {"role": "user", "content": "huge"}, messages[3]])
    bad_meta = {"role": "user", "content": "early", "dsgc": {"meta": {"induced": True}}}
    with pytest.raises(SessionError, match=r"^message 0: meta key 'induced' is reserved"):  # the first bad record
        add_messages(store, [bad_meta, messages[1], {"role": "user", "content": "huge"}])
    assert [b.text for b in store.blocks()] == ["kept"]
