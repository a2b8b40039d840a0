"""Removed data is gone: from every structure a store holds and from the bytes of its files.

A secret (a card number) is added in a user message, a tool call and its result; the messages
are compacted (so copies sit in the archive table too), then removed (``remove_messages``,
``delete``, ``pop``, ``clear``).  Afterwards no string reachable from the store holds the
secret, and once the store is closed (SQLite checkpoints its write-ahead log) neither does
any byte of the database file or its side files: deleted rows keep only a tombstone (id, seq,
the deletion), and SQLite zeroes freed content (``secure_delete``).
"""

from __future__ import annotations

import functools
import gc
import json
import types

import numpy as np
import pytest

from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import add_messages, compact_messages, remove_messages, to_messages
from dsgc_fast.memory.store import MemoryStore

SECRET = "4111-1111-1111-1111"


def session() -> list[dict]:
    call = {"id": "c1", "type": "function", "function": {"name": "charge", "arguments": json.dumps({"card": SECRET})}}
    return [
        {"role": "system", "content": "You run a shop."},
        {"role": "user", "content": "Hello, I want to buy the blue lamp."},
        {"role": "assistant", "content": "Sure, which card?"},
        {"role": "user", "content": f"Use my card {SECRET} please."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"charged": SECRET, "status": "ok"})},
        {"role": "assistant", "content": "Charged."},
        {"role": "user", "content": "Thanks, what colours does the lamp come in?"},
    ]


#: what the walk does not enter: code and classes lead to every module (and the process-wide memos)
SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType, functools.partial)


def reachable_strings(root: object) -> list[str]:
    """Every string reachable from ``root`` through instance data (and byte arrays as text)."""
    seen, frontier, out = set(), [root], []
    while frontier:
        obj = frontier.pop()
        if id(obj) in seen or isinstance(obj, SHARED) or type(obj).__name__ == "_lru_cache_wrapper":
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            out.append(obj)
        elif isinstance(obj, (bytes, bytearray)):
            out.append(bytes(obj).decode("latin-1"))
        elif isinstance(obj, np.ndarray) and obj.dtype.kind in "SUO":
            frontier.extend(obj.ravel().tolist())
        else:
            frontier.extend(gc.get_referents(obj))
    return out


def file_bytes(path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name))


@pytest.mark.parametrize("how", ["remove_messages", "delete", "clear"])
def test_removed_messages_leave_no_trace_in_the_store_or_its_files(tmp_path, how):
    path = tmp_path / "shop.db"
    store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path)
    ids = add_messages(store, session())
    compact_messages(store, 30)  # the card's messages move to the archive table
    assert any(SECRET in s for s in reachable_strings(store)) and SECRET.encode() in file_bytes(path)
    secret_ids = [ids[3], ids[4], ids[5]]
    if how == "remove_messages":
        remove_messages(store, secret_ids)
    elif how == "delete":
        store.delete(secret_ids)
    else:
        store.clear()
    assert not [s for s in reachable_strings(store) if SECRET in s]
    assert all(SECRET not in (m.get("content") or "") for m in to_messages(store))
    assert [d.block.text for d in store.deleted()] == [""] * len(store.deleted())  # tombstones only
    store.close()
    assert SECRET.encode() not in file_bytes(path)
    with MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path) as again:
        assert again.has(ids[3]) and not [s for s in reachable_strings(again) if SECRET in s]


def test_a_popped_block_is_returned_whole_and_then_erased(tmp_path):
    path = tmp_path / "pop.db"
    with MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace", archive=path) as store:
        store.add(f"card {SECRET}", id="card")
        assert store.pop().text == f"card {SECRET}"
        assert not [s for s in reachable_strings(store) if SECRET in s]
    assert SECRET.encode() not in file_bytes(path)


def memo_strings() -> list[str]:
    """Every string held by a process-wide memo: the lru caches of dsgc's modules, the default select caches."""
    memos = [
        obj
        for obj in gc.get_objects()
        if type(obj).__name__ == "_lru_cache_wrapper" and getattr(obj, "__module__", "").startswith("dsgc_fast")
    ]
    from dsgc_fast.memory.history import default_cache

    held = [default_cache()]
    for memo in memos:  # the keys an lru cache holds are reachable only through its cache dict
        held.extend(gc.get_referents(memo))
    return [s for root in held for s in reachable_strings(root)]


@pytest.mark.parametrize("how", ["store", "thread_memory"])
def test_no_process_wide_memo_keeps_a_removed_value(how):
    from dsgc_fast import select

    select(session(), 40, tokenizer="whitespace")  # the default select cache and the word memos see the card
    if how == "store":
        store = MemoryStore(encoder=LexicalEncoder(), tokenizer="whitespace")
        ids = add_messages(store, session())
        assert any(SECRET in s for s in memo_strings())
        remove_messages(store, [ids[3], ids[4], ids[5]])
        store.close()
    else:
        lc = pytest.importorskip("langchain_core.messages")
        from dsgc_fast.integrations.langchain import ThreadMemory

        memory = ThreadMemory(40, tokenizer="whitespace")
        messages = lc.convert_to_messages(session())
        memory.select(messages, thread_id="t")
        assert any(SECRET in s for s in memo_strings())
        memory.select(messages[:3] + messages[6:], thread_id="t")  # the application removed the card's messages
    assert not [s for s in memo_strings() if SECRET in s]
