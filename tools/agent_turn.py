"""The agent turn on a ``MemoryStore``, and the compaction of a long referent chain, in one run.

    .venv/bin/python tools/agent_turn.py turn                       # archived 0, 1,000, 10,000, 100,000
    .venv/bin/python tools/agent_turn.py turn --archived 0 --turns 400
    HF_HUB_OFFLINE=1 .venv/bin/python tools/agent_turn.py minilm    # all-MiniLM-L6-v2 (the sentence extra)
    .venv/bin/python tools/agent_turn.py chain --n 20000

turn     ``dsgc_bench.agent_turn.AgentSession``: ``add_messages`` of the turn's new messages,
         ``compact_messages``, ``to_messages``, with the budget of about 150 active blocks and an
         encoder that looks rows up (``TableEncoder``: no encoding cost).  One session per
         ``--archived`` size (the history before the timed turns, added in one batch and compacted
         once), their turns interleaved; the median of each step and of the whole turn over
         ``--turns`` turns.
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
import time
import tracemalloc

import numpy as np

import dsgc_fast
from dsgc_bench.agent_turn import AgentSession, CountingEncoder, chain_arrays, chain_store
from dsgc_fast.messages import add_messages, compact_messages, message_text, to_messages


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
    parser.add_argument("what", choices=["turn", "minilm", "chain"])
    parser.add_argument("--archived", type=int, nargs="+", default=[0, 1_000, 10_000, 100_000])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--n", type=int, nargs="+", default=[20_000])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if args.what == "turn":
        turn_table(args.archived, args.turns)
    elif args.what == "minilm":
        minilm_table(min(args.turns, 100))
    else:
        for n in args.n:
            chain_table(n, args.rounds)


if __name__ == "__main__":
    main()
