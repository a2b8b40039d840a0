"""Induction takes linear time on adversarial texts (no regular-expression backtracking blow-up).

Each case builds a text family of n and of 4n characters and times the whole induction
(edges, referents, the incremental inducer and tool-trace edges) on both.  Linear work grows
about 4x; a quadratic one 16x.  To stay robust on a busy machine the clock is the thread's
CPU time (other processes do not count), the small size takes the best of three runs, the large size passes as soon as one of up to three runs is within
``GROWTH`` times the small one (or under ``FLOOR`` seconds, too short to judge), and a
clearly superlinear first run fails at once instead of being repeated.
"""

from __future__ import annotations

import itertools
import string
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsgc_fast.induction import DESCRIPTION_WINDOW, IncrementalInducer, induce, trace_edges

from ._cases import examples

#: allowed growth of the time from n to 4n characters (linear: 4, quadratic: 16)
GROWTH = 8.0
#: a large-size time below this many seconds is too short to judge
FLOOR = 0.02


def induce_everything(texts: list[str]) -> None:
    """Every induction entry point on the texts (as blocks, tool results and call arguments)."""
    induce(texts)
    inducer = IncrementalInducer()
    for text in texts:
        inducer.add(text)
    messages = []
    for k, text in enumerate(texts):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": text}}
        messages += [{"role": "assistant", "content": text, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"c{k}", "content": text}]  # fmt: skip
    trace_edges(messages)


def seconds(texts: list[str]) -> float:
    start = time.thread_time()
    induce_everything(texts)
    return time.thread_time() - start


def assert_near_linear(make: Callable[[int], list[str]], n: int) -> None:
    """Induction on ``make(4 * n)`` takes at most ``GROWTH`` times as long as on ``make(n)``."""
    small = min(seconds(make(n)) for _ in range(3))
    bound = max(GROWTH * small, FLOOR)
    big = make(4 * n)
    times = []
    for _ in range(3):
        times.append(seconds(big))
        if times[-1] <= bound or times[-1] > 4 * bound:
            break
    assert min(times) <= bound, f"{n} chars: {small:.4f} s; {4 * n} chars: {[round(t, 4) for t in times]} s"


def one_text(make: Callable[[int], str]) -> Callable[[int], list[str]]:
    """Two blocks holding the same n-character text."""
    return lambda n: [make(n)] * 2


def repeated(unit: str) -> Callable[[int], list[str]]:
    return one_text(lambda n: (unit * (n // len(unit) + 1))[:n])


def numbered(template: str) -> Callable[[int], list[str]]:
    """``template.format(i)`` for i = 0, 1, ... joined by spaces, cut to n characters."""

    def make(n: int) -> str:
        parts, size, i = [], 0, 0
        while size < n:
            parts.append(template.format(i))
            size += len(parts[-1]) + 1
            i += 1
        return " ".join(parts)[:n]

    return one_text(make)


def letter_words() -> Iterator[str]:
    """aa, ab, ..., zz, aaa, ...: words whose identifiers ``<word>1`` all have different shapes."""
    for size in itertools.count(2):
        for letters in itertools.product(string.ascii_lowercase, repeat=size):
            yield "".join(letters)


def many_shapes_then_descriptions(n: int) -> list[str]:
    """One block naming n/20 accounts of different shapes, then (past the look-back window) a
    block of as many "that account" descriptions."""
    k = n // 20
    accounts = " ".join(f"account {w}1" for w, _ in zip(letter_words(), range(k)))
    return [accounts] + ["filler"] * (DESCRIPTION_WINDOW + 1) + ["that account " * k]


@pytest.mark.parametrize(
    ("make", "n"),
    [
        (repeated("+"), 3000),
        (repeated("a+"), 3000),
        (repeated("a:"), 3000),
        (numbered("x{}"), 12000),
        (numbered("K{0} = v{0}"), 12000),
        (many_shapes_then_descriptions, 20000),
    ],
    ids=["plus-run", "a+a+", "a:a:", "distinct-ids", "assignments", "descriptions"],
)
def test_induction_is_linear_on_runs_found_by_review(make, n):
    """Regression: runs of ``+``, ``a+``, ``a:`` backtracked quadratically in the identifier
    pattern (12,000 characters: 10 s); many distinct identifiers or assignments in one text
    were quadratic in referent induction (a list scan per mention, the rest of the text
    split per binding), and so were descriptions times the shapes of their noun."""
    assert_near_linear(make, n)


#: characters that continue, start, end or assign identifiers, and separators
ALPHABET = "aZ7_-./@~:+=' \n\t,#"
units = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
families = st.one_of(
    units.map(repeated),  # repeated punctuation and alternating patterns
    st.tuples(units, units).map(lambda u: repeated(u[0] * 3 + u[1])),
    st.tuples(st.sampled_from(["a", "7", "_", "aB"]), units).map(  # one long token, a mark at its end
        lambda u: one_text(lambda n: (u[0] * n)[: n - len(u[1])] + u[1])
    ),
    st.sampled_from(
        ["x{}", "RT-{}", "K{0} = v{0}", "Project Falcon{0} is now v{0}", "that account a{}", "{0}.{0}"]
    ).map(numbered),
)


@given(make=families)
@settings(max_examples=examples(0.03))
def test_fuzz_induction_time_grows_linearly(make):
    """100,000-character adversarial texts take about 4x the time of 25,000-character ones."""
    assert_near_linear(make, 25_000)
