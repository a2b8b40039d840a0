"""The agent turn on a ``MemoryStore``, and the compaction of a long referent chain, in one run.

    .venv/bin/python tools/agent_turn.py turn                       # archived 0, 1,000, 10,000, 100,000
    .venv/bin/python tools/agent_turn.py turn --archived 0 --turns 400
    .venv/bin/python tools/agent_turn.py breakdown --archived 0 10000
    HF_HUB_OFFLINE=1 .venv/bin/python tools/agent_turn.py minilm    # all-MiniLM-L6-v2 (the sentence extra)
    .venv/bin/python tools/agent_turn.py chain --n 20000

turn     ``dsgc_bench.agent_turn.AgentSession``: ``add_messages`` of the turn's new messages,
         ``compact_messages``, ``to_messages``, with the budget of about 150 active blocks and an
         encoder that looks rows up (``TableEncoder``: no encoding cost).  One session per
         ``--archived`` size (the history before the timed turns, added in one batch and compacted
         once), their turns interleaved; the median of each step and of the whole turn over
         ``--turns`` turns.
breakdown  the same turns, each part of the store's work timed (module functions and methods
         wrapped while it runs, SQLite through a timing proxy of the archive's connection): the
         median per turn of each part (summed over the turn's steps) and of what is left of each
         step beside its parts (Python glue, NumPy calls on the store's small arrays).  The
         wrappers add a little to every step: the ``turn`` table gives the turn's time.
minilm   the same turns with all-MiniLM-L6-v2 (``SentenceEncoder``, nothing cached), each beside one
         call of a second instance of the encoder over the turn's new texts (the messages' texts,
         in one batch), interleaved; the median of turn / encoder-call and the encoder calls and
         texts per turn.
chain    ``dsgc_bench.agent_turn.chain_store(n)`` compacted with a live root at the middle (every
         block fits) beside ``retain`` on the arrays ``compact`` hands it (same roots and referent
         index, prebuilt), best of ``--rounds``; and the peak memory each allocates (tracemalloc).
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import dsgc_fast
from dsgc_bench.agent_turn import AgentSession, CountingEncoder, chain_arrays, chain_store
from dsgc_fast.memory import block, chat, columns, compact_run, core, messages
from dsgc_fast.memory.messages import add_messages, compact_messages, message_text, to_messages


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def turn_table(archived: list[int], count: int) -> None:
    """The steps of ``count`` turns of each session, the sessions' turns interleaved (one turn each in turn)."""
    sessions = [AgentSession(archived=target, timed=count) for target in archived]
    steps: list[dict[str, list[float]]] = [{"add": [], "compact": [], "send": [], "turn": []} for _ in sessions]
    for _ in range(count):
        for session, times in zip(sessions, steps):
            batch = session.batches[session.next]
            session.next += 1
            t0 = time.perf_counter()
            add_messages(session.store, batch)
            t1 = time.perf_counter()
            compact_messages(session.store, session.budget)
            t2 = time.perf_counter()
            to_messages(session.store)
            t3 = time.perf_counter()
            for name, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                times[name].append(dt)
    print("| archived blocks | active blocks | add_messages | compact_messages | to_messages | turn (median) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for session, times in zip(sessions, steps):
        store = session.store
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(
            f"| {store.total - len(store):,} | {len(store)} | {_ms(med['add'])} | {_ms(med['compact'])} "
            f"| {_ms(med['send'])} | {_ms(med['turn'])} |"
        )


#: the parts of a turn ``breakdown`` times: (step, part, owner, attribute); an owner's attribute is
#: replaced by a timing wrapper (the parts never call one another, so their times add up)
PARTS: list[tuple[str, str, Any, str]] = [
    ("add", "plan (checks, costs)", messages, "plan_records"),
    ("add", "encode (table lookup)", core.StoreCore, "encode"),
    ("add", "induction", columns.BlockColumns, "induce"),
    ("add", "block checks", core, "checked_block"),
    ("add", "rows (to_row)", block.Block, "to_row"),
    ("compact", "chat facts", chat.ChatFacts, "ages"),
    ("compact", "turn roots", compact_run, "turn_roots"),
    ("compact", "query", compact_run, "query_embedding"),
    ("compact", "graph gather", columns.BlockColumns, "active_graph"),
    ("compact", "referent gather", columns.BlockColumns, "active_index"),
    ("compact", "digests", compact_run, "digests_of"),
    ("compact", "decide (retain)", compact_run, "decide"),
    ("compact", "report", compact_run, "build_report"),
    ("compact", "blocks back (mark_active)", columns.BlockColumns, "mark_active"),
    ("send", "check_messages", messages, "check_messages"),
]
STEPS = ("add", "compact", "send")


class _TimedConnection:
    """A connection whose ``execute``/``executemany`` add their time to ``spent["sqlite"]``."""

    def __init__(self, connection: sqlite3.Connection, spent: dict[str, float]) -> None:
        self._connection, self._spent = connection, spent

    def _timed(self, method: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return method(*args)
        finally:
            self._spent["sqlite"] += time.perf_counter() - t0

    def execute(self, *args: Any) -> Any:
        return self._timed(self._connection.execute, *args)

    def executemany(self, *args: Any) -> Any:
        return self._timed(self._connection.executemany, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


@contextlib.contextmanager
def _timing(spent: dict[str, float]) -> Iterator[None]:
    """Every ``PARTS`` attribute wrapped to add its time to ``spent[part]`` while the block runs."""
    saved = []
    for _, part, owner, name in PARTS:
        original = owner.__dict__[name]

        def timed(*args: Any, _f: Callable[..., Any] = original, _part: str = part, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                spent[_part] += time.perf_counter() - t0

        saved.append((owner, name, original))
        setattr(owner, name, timed)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def breakdown_table(archived: list[int], count: int) -> None:
    """The median per turn of each part (``PARTS``, SQLite) and of each step's rest, in microseconds."""
    sessions = [AgentSession(archived=target, timed=count) for target in archived]
    spent: dict[str, float] = {}
    for session in sessions:
        db = session.store._archive
        db._connection = _TimedConnection(db._conn, spent)  # type: ignore[assignment]
    parts = [part for _, part, _, _ in PARTS] + ["sqlite"]
    rows: list[dict[str, list[float]]] = [{k: [] for k in (*parts, *STEPS, "turn")} for _ in sessions]
    with _timing(spent):
        for _ in range(count):
            for session, times in zip(sessions, rows):
                batch = session.batches[session.next]
                session.next += 1
                turn = dict.fromkeys(parts, 0.0)
                step = {}
                for name in STEPS:
                    spent.update(dict.fromkeys(parts, 0.0))
                    t0 = time.perf_counter()
                    if name == "add":
                        add_messages(session.store, batch)
                    elif name == "compact":
                        compact_messages(session.store, session.budget)
                    else:
                        to_messages(session.store)
                    step[name] = time.perf_counter() - t0
                    times[name].append(step[name] - sum(spent.values()))
                    for part in parts:
                        turn[part] += spent[part]
                for part in parts:
                    times[part].append(turn[part])
                times["turn"].append(sum(step.values()))
    print("| step | part | " + " | ".join(f"{s.store.total - len(s.store):,} archived" for s in sessions) + " |")
    print("| --- | --- |" + " ---: |" * len(sessions))
    owner = {part: step for step, part, _, _ in PARTS} | {"sqlite": "all"}
    rest = {"add": "rest", "compact": "rest", "send": "rest (the messages' copies)"}
    for key in (*parts, *STEPS, "turn"):
        label = (owner[key], key) if key in owner else (key, rest[key]) if key in STEPS else ("", "**turn**")
        cells = [f"{np.median(t[key]) * 1e6:.0f} us" for t in rows]
        print(f"| {label[0]} | {label[1]} | " + " | ".join(cells) + " |")


def minilm_table(count: int) -> None:
    from dsgc_fast.encoders import SentenceEncoder

    encoder = CountingEncoder(SentenceEncoder())
    session = AgentSession(timed=count, encoder=encoder, warm=5)
    reference = SentenceEncoder()
    reference.encode(["warm up"])
    ratios, turns_s, encodes_s = [], [], []
    calls, texts = encoder.calls, encoder.texts
    for _ in range(count):
        batch = session.batches[session.next]
        batch_texts = [message_text(m) for m in batch]
        t0 = time.perf_counter()
        reference.encode(batch_texts)
        t1 = time.perf_counter()
        session.turn()
        t2 = time.perf_counter()
        encodes_s.append(t1 - t0)
        turns_s.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
    print(
        "| turns | messages per turn | encoder calls per turn | texts encoded per turn | one batched call (median) | turn (median) | turn / call (median) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    n_msgs = np.mean([len(b) for b in session.batches[session.next - count : session.next]])
    print(
        f"| {count} | {n_msgs:.2f} | {(encoder.calls - calls) / count:.2f} | {(encoder.texts - texts) / count:.2f} "
        f"| {_ms(float(np.median(encodes_s)))} | {_ms(float(np.median(turns_s)))} | {np.median(ratios):.2f}x |"
    )


def chain_table(n: int, rounds: int) -> None:
    store = chain_store(n)
    live = [f"b{n // 2}"]
    query = np.ones(16)
    arrays = chain_arrays(store, live)

    def compact() -> object:
        return store.compact(query, n, live=live)

    def retain() -> object:
        return dsgc_fast.retain(query, arrays["block_embs"], arrays["costs"], n, params=store.params,
                                live=arrays["live"], referents=arrays["referents"])  # fmt: skip

    best, peak = {}, {}
    for name, fn in (("retain", retain), ("compact", compact)):
        fn()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
        tracemalloc.start()
        fn()
        peak[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print("| chain blocks | retain | compact | compact / retain | retain peak | compact peak |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {n:,} | {_ms(best['retain'])} | {_ms(best['compact'])} | {best['compact'] / best['retain']:.2f}x "
        f"| {peak['retain'] / 1e6:.1f} MB | {peak['compact'] / 1e6:.1f} MB |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["turn", "breakdown", "minilm", "chain"])
    parser.add_argument("--archived", type=int, nargs="+", default=[0, 1_000, 10_000, 100_000])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--n", type=int, nargs="+", default=[20_000])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if args.what == "turn":
        turn_table(args.archived, args.turns)
    elif args.what == "breakdown":
        breakdown_table(args.archived, args.turns)
    elif args.what == "minilm":
        minilm_table(min(args.turns, 100))
    else:
        for n in args.n:
            chain_table(n, args.rounds)


if __name__ == "__main__":
    main()
