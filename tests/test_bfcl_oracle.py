"""The unit oracle is the exact optimum over whole units; metrics on hand-made points."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dsgc_bench.bfcl.metrics import broken_pairs, kept_values, score
from dsgc_bench.bfcl.oracle import unit_oracle
from dsgc_bench.bfcl.points import make_point, tool_units
from dsgc_bench.bfcl.policies import Selection


def _session(rng: np.random.Generator, calls: int):
    """Random tool units holding random codes, then a query naming none of them."""
    words = [f"v{k}x" for k in range(8)]
    messages, turns, kinds = [{"role": "user", "content": "start " * int(rng.integers(1, 6))}], [0], ["user"]
    for c in range(calls):
        held = rng.choice(words, size=int(rng.integers(0, 3)), replace=False)
        args = '{"q": "' + " ".join(rng.choice(words, size=1)) + '"}'
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{c}", "function": {"name": "f", "arguments": args}}],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{c}",
                "content": '{"r": "' + " ".join(held) + " " + "pad " * int(rng.integers(0, 8)) + '"}',
            }
        )
        turns += [0, 0]
        kinds += ["call", "result"]
    messages.append({"role": "user", "content": "next please"})
    turns.append(1)
    kinds.append("user")
    return make_point("s", "synthetic", 1, messages, turns, kinds, [("text", w) for w in words])


def _brute_force(point, budget):
    units = [u for u in point.units if point.query not in u]
    room = budget - int(point.costs[point.query])
    best = 0
    for r in range(len(units) + 1):
        for combo in itertools.combinations(units, r):
            blocks = [i for u in combo for i in u]
            if int(point.costs[blocks].sum()) <= room:
                sel = Selection(np.array(sorted(blocks + [point.query])))
                best = max(best, sum(kept_values(point, sel)))
    return best


@pytest.mark.parametrize("case", range(25))
def test_oracle_matches_brute_force(case):
    rng = np.random.default_rng(case)
    point = _session(rng, int(rng.integers(1, 6)))
    budget = point.budget(float(rng.choice([0.1, 0.25, 0.5])))
    choice = unit_oracle(point, budget)
    assert choice.exact
    assert int(point.costs[choice.retained].sum()) <= budget
    assert point.query in choice.retained
    assert broken_pairs(point, choice.retained.tolist()) == 0
    assert sum(kept_values(point, Selection(choice.retained))) == _brute_force(point, budget)


def test_units_and_broken_pairs():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "user", "content": "more"},
    ]
    assert tool_units(messages) == ((0,), (1, 2, 3), (4,))
    point = make_point("s", "synthetic", 1, messages, [0, 0, 0, 0, 1], ["user", "call", "result", "result", "user"], [])
    assert broken_pairs(point, [1, 2, 4]) == 1
    assert broken_pairs(point, [2, 3, 4]) == 2
    assert score(point, Selection(np.array([0, 4])), 10).broken == 0


def test_budget_charges_the_query_on_top_of_the_history_share():
    messages = [{"role": "user", "content": "one two three four five six seven"}, {"role": "user", "content": "a b c"}]
    point = make_point("s", "synthetic", 1, messages, [0, 1], ["user", "user"], [])
    assert point.budget(0.25) == 3 + 2  # ceil(7 / 4) + the query's 3
    assert point.budget(0.5) == 3 + 4
