"""The product-unit tables' parts on hand-made sessions: the store's cost, scores on sent text,
the anchors' rules, the digest oracle and the refusal of held-out splits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dsgc_bench.bfcl.anchors import (
    CLEAR_KEEP,
    CLEARED,
    MASK_KEEP,
    MASKED,
    POLICIES,
    Context,
    clear_tool_uses,
    cleared_by_langchain,
    cleared_by_rule,
    drop_oldest,
    from_selection,
    observation_masking,
    oracle_digest,
    oracle_in_place,
    oracle_units,
    store_default,
    store_default_whole,
    store_recency,
)
from dsgc_bench.bfcl.data import HELD_OUT, SPLITS, check_split
from dsgc_bench.bfcl.oracle import digest_lines, digest_oracle, result_lines, unit_oracle
from dsgc_bench.bfcl.points import make_point
from dsgc_bench.bfcl.units import (
    Sent,
    charged,
    counter_of,
    in_unit,
    message_cost,
    score_sent,
    sent_of,
    transcript_problems,
)
from dsgc_fast import SelectCache, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.token_counts import message_tokens


def _call(k: int, name: str, args: dict) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


def _result(k: int, payload: object) -> dict:
    return {"role": "tool", "tool_call_id": f"c{k}", "content": json.dumps(payload)}


def _session(results: list[object], needed: list[str], system: bool = False, query: str = "and now?"):
    """A first user turn, one call with its result per entry of ``results``, a closing reply,
    then the query; ``needed`` are the next call's values."""
    messages = [{"role": "system", "content": "You are a careful agent."}] if system else []
    messages.append({"role": "user", "content": "please look things up for me"})
    for k, payload in enumerate(results):
        messages += [_call(k, "lookup", {"page": k}), _result(k, payload)]
    messages += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": query}]
    turns = [0] * (len(messages) - 1) + [1]
    kinds = ["user" if m["role"] in ("user", "system") else "other" for m in messages]
    return make_point("s", "synthetic", 1, messages, turns, kinds, [("text", v.casefold()) for v in needed])


def _context(unit: str = "tokens") -> Context:
    return Context(unit, SelectCache(LexicalEncoder()))


def _bulky(k: int) -> dict:
    return {"order_id": f"ord{k}x", "notes": " ".join(f"filler{j}" for j in range(40))}


def test_costs_are_the_stores_and_select_reports_what_it_is_charged():
    point = in_unit(_session([_bulky(k) for k in range(4)], ["ord1x"]), "tokens")
    counter = counter_of("tokens")
    assert point.costs.tolist() == [message_tokens(m, counter) for m in point.messages]
    words = in_unit(point, "whitespace").costs
    assert all(point.costs[i] > words[i] for i in range(point.n))  # framing: every message costs more
    everything = select([dict(m) for m in point.messages], int(point.costs.sum()), cache=SelectCache())
    assert everything.used == int(point.costs.sum())
    for share in (0.1, 0.25, 0.5):
        budget = point.budget(share)
        for rule in (store_default, store_recency):
            sent = rule(point, budget, _context())
            assert sent.reported is not None and charged(sent, counter) == sent.reported <= budget
            assert score_sent(point, sent, budget, counter).misreported == 0


def test_whitespace_unit_is_the_paper_cost_without_framing():
    point = _session([_bulky(0)], ["ord0x"])
    assert in_unit(point, "whitespace").costs.tolist() == point.costs.tolist()
    with pytest.raises(ValueError, match="unit must be one of"):
        in_unit(point, "bytes")


def test_budget_charges_system_messages_and_the_query_then_a_share_of_the_rest():
    point = in_unit(_session([_bulky(0), _bulky(1)], [], system=True), "tokens")
    assert point.roots == (0, point.query)
    roots = int(point.costs[0] + point.costs[point.query])
    rest = int(point.costs.sum()) - roots
    assert point.budget(0.25) == roots + -(-rest // 4)
    assert point.budget(0.0) == roots


def test_scores_count_only_the_values_the_sent_text_holds():
    point = in_unit(_session([_bulky(0), _bulky(1)], ["ord0x"]), "tokens")
    counter = counter_of("tokens")
    whole = sent_of(point, range(point.n))
    holder = point.holders[("text", "ord0x")][0]
    blank = sent_of(point, range(point.n), {holder: {**point.messages[holder], "content": CLEARED}})
    budget = int(point.costs.sum())
    assert score_sent(point, whole, budget, counter).kept == 1
    got = score_sent(point, blank, budget, counter)
    assert got.kept == 0 and got.broken == 0 and got.invalid == 0 and got.used < budget
    note = Sent(blank.messages, blank.origins, notes=("order_id: ord0x",))
    assert score_sent(point, note, budget, counter).kept == 1
    assert charged(note, counter) == charged(blank, counter) + counter("order_id: ord0x")


def test_transcript_problems_name_orphans_missing_results_roots_and_order():
    point = _session([_bulky(0), _bulky(1)], [], system=True)
    assert transcript_problems(point, sent_of(point, range(point.n))) == []
    orphan = sent_of(point, [0, 1, 3, point.query])  # the result of c0 without its call
    assert any("answering no open call" in p for p in transcript_problems(point, orphan))
    lonely = sent_of(point, [0, 1, 2, point.query])  # the call of c0 without its result
    assert any("without their results" in p for p in transcript_problems(point, lonely))
    rootless = sent_of(point, [1, point.query])
    assert transcript_problems(point, rootless) == ["live root 0 not sent unchanged"]
    backwards = Sent(tuple(reversed(point.messages)), tuple(reversed(range(point.n))))
    assert "history messages out of order or repeated" in transcript_problems(point, backwards)
    with pytest.raises(ValueError, match="origins"):
        Sent(point.messages, ())


def test_clear_tool_uses_is_langchains_rule_then_drops_oldest_units():
    pytest.importorskip("langchain.agents.middleware")
    point = in_unit(_session([_bulky(k) for k in range(6)], ["ord0x", "ord5x"]), "tokens")
    counter = counter_of("tokens")
    results = [i for i, m in enumerate(point.messages) if m["role"] == "tool"]
    total = int(point.costs.sum())
    assert cleared_by_langchain(point, total, counter) == cleared_by_rule(point, total, counter) == []
    # one token over: the oldest result alone is cleared; far over: every result but the newest three
    assert cleared_by_langchain(point, total - 1, counter) == cleared_by_rule(point, total - 1, counter) == results[:1]
    for budget in (point.budget(0.5), point.budget(0.25), point.budget(0.1)):
        cleared = cleared_by_langchain(point, budget, counter)
        assert cleared == cleared_by_rule(point, budget, counter)
        assert cleared == results[: len(cleared)] and 1 <= len(cleared) <= len(results) - CLEAR_KEEP
    assert cleared == results[: len(results) - CLEAR_KEEP]  # at 10% nothing short of all of them fits
    sent = clear_tool_uses(point, total - 1, _context())  # clearing the oldest result is enough
    assert sent.origins == tuple(range(point.n))
    assert [o for m, o in zip(sent.messages, sent.origins) if m["content"] == CLEARED] == results[:1]
    assert score_sent(point, sent, total - 1, counter).kept == 1  # ord5x kept; ord0x was in the cleared result
    for share in (0.1, 0.5):
        got = score_sent(point, clear_tool_uses(point, point.budget(share), _context()), point.budget(share), counter)
        assert got.used <= point.budget(share) and got.broken == 0 and got.invalid == 0


def test_observation_masking_blanks_all_but_the_newest_ten_outputs_whatever_the_budget():
    point = in_unit(_session([_bulky(k) for k in range(MASK_KEEP + 2)], ["ord0x", "ord11x"]), "tokens")
    counter = counter_of("tokens")
    results = [i for i, m in enumerate(point.messages) if m["role"] == "tool"]
    ample = int(point.costs.sum())
    sent = observation_masking(point, ample, _context())
    assert sent.origins == tuple(range(point.n))
    masked = [o for m, o in zip(sent.messages, sent.origins) if m.get("content") == MASKED]
    assert masked == results[:2]
    assert score_sent(point, sent, ample, counter).kept == 1
    tight = observation_masking(point, point.budget(0.1), _context())
    assert charged(tight, counter) <= point.budget(0.1) and transcript_problems(point, tight) == []


def test_drop_oldest_drops_whole_units_oldest_first_and_never_a_root():
    point = in_unit(_session([_bulky(k) for k in range(3)], [], system=True), "tokens")
    counter = counter_of("tokens")
    roots = point.budget(0.0)
    sent = drop_oldest(point, {}, roots, counter)
    assert sent.origins == point.roots and not sent.over_budget
    # room for exactly the newest units: the closing reply and the last call with its result
    room = roots + int(point.costs[point.query - 3 : point.query].sum())
    assert drop_oldest(point, {}, room, counter).origins == (0, *range(point.query - 3, point.n))
    assert drop_oldest(point, {}, roots - 1, counter).over_budget


def test_the_digest_oracle_keeps_a_value_as_its_line_where_the_unit_does_not_fit():
    big = {"listing": [{"file": f"file{j}.txt", "size": j} for j in range(60)], "owner": "acct9917"}
    point = in_unit(_session([big], ["acct9917", "file7.txt"]), "tokens")
    counter = counter_of("tokens")
    budget = point.budget(0.1)
    assert score_sent(point, oracle_units(point, budget, _context()), budget, counter).kept == 0
    lines = digest_lines(point, counter)
    assert lines[("text", "acct9917")] == ("owner: acct9917", counter("owner: acct9917"))
    assert lines[("text", "file7.txt")][0] == "file: file7.txt"
    sent = oracle_digest(point, budget, _context())
    got = score_sent(point, sent, budget, counter)
    assert got.kept == 2 and got.used <= budget and got.invalid == 0
    assert set(sent.notes) == {"owner: acct9917", "file: file7.txt"}
    assert result_lines("plain text\nsecond line") == [
        ("result: plain text", "plain text"),
        ("result: second line", "second line"),
    ]
    assert result_lines("42") == [("result: 42", "42")]


@pytest.mark.parametrize("seed", range(12))
def test_the_digest_oracle_never_keeps_less_than_the_unit_oracle(seed):
    rng = np.random.default_rng(seed)
    codes = [f"k{j}q" for j in range(6)]
    results = [
        {"code": str(rng.choice(codes)), "text": " ".join(["pad"] * int(rng.integers(0, 30)))}
        for _ in range(int(rng.integers(1, 6)))
    ]
    point = in_unit(_session(results, [str(c) for c in rng.choice(codes, 3, replace=False)]), "tokens")
    counter = counter_of("tokens")
    for share in (0.1, 0.25, 0.5):
        budget = point.budget(share)
        units, digest = unit_oracle(point, budget), digest_oracle(point, budget, counter)
        kept = [
            score_sent(point, rule(point, budget, _context()), budget, counter)
            for rule in (oracle_units, oracle_digest)
        ]
        assert kept[1].kept >= kept[0].kept and all(k.used <= budget for k in kept)
        assert units.exact and digest.exact


def test_every_policy_sends_a_valid_transcript_within_budget():
    point = in_unit(_session([_bulky(k) for k in range(5)], ["ord2x"], system=True), "tokens")
    counter = counter_of("tokens")
    for share in (0.1, 0.25, 0.5):
        budget = point.budget(share)
        for name, (_, rule, _) in POLICIES.items():
            got = score_sent(point, rule(point, budget, _context()), budget, counter)
            assert (got.broken, got.invalid, got.used <= budget) == (0, 0, True), name


def test_held_out_splits_are_refused_unless_asked_for_by_name():
    assert SPLITS == ("base", "long_context")
    for split in HELD_OUT:
        with pytest.raises(ValueError, match="held out"):
            check_split(split)
        assert check_split(split, held_out=True) == split
    with pytest.raises(ValueError, match="development splits"):
        check_split("anything", held_out=True)


def test_a_binding_table_is_an_added_message_and_counts_for_the_values_it_holds():
    messages = [
        {"role": "system", "content": "be careful"},
        {"role": "user", "content": "account A-17 is mine " + "filler " * 80, "dsgc": {"binds": {"acct": "A-17"}}},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "close that account", "dsgc": {"uses": ["acct"]}},
    ]
    point = in_unit(make_point("s", "synthetic", 1, messages, [0, 0, 0, 1], ["user"] * 4, [("text", "a-17")]), "tokens")
    counter = counter_of("tokens")
    budget = point.budget(0.0) + 16  # the table fits beside the roots, its source does not
    got = select(messages, budget, cache=SelectCache(), on_over_budget="roots_only")
    assert got.binding_table is not None and got.indices == [0, 3]
    sent = from_selection(got)
    assert sent.origins == (0, None, 3)
    scored = score_sent(point, sent, budget, counter)
    assert (scored.kept, scored.invalid, scored.misreported) == (1, 0, 0)
    assert charged(sent, counter) == got.used <= budget


def _listing(k0: int, n: int) -> dict:
    return {
        "orders": [
            {"id": f"ORD-{k}", "status": "shipped", "note": "packed with care and sent " * 6} for k in range(k0, k0 + n)
        ]
    }


def test_the_digest_row_keeps_a_value_the_whole_message_row_loses_charged_the_digests_framed_cost():
    point = in_unit(
        _session([_listing(1000, 12), _listing(2000, 12)], ["ORD-1003"], system=True, query="cancel that one"),
        "tokens",
    )
    counter = counter_of("tokens")
    holder = point.holders[("text", "ord-1003")][0]
    found = []
    for share in [k / 20 for k in range(1, 20)]:
        budget = point.budget(share)
        whole = score_sent(point, store_default_whole(point, budget, _context()), budget, counter)
        got = select(
            [dict(m) for m in point.messages], budget, cache=SelectCache(), on_over_budget="roots_only", digests=True
        )
        sent = store_default(point, budget, _context())
        assert sent == from_selection(got)
        digest = score_sent(point, sent, budget, counter)
        assert (digest.broken, digest.invalid, digest.misreported, digest.used <= budget) == (0, 0, 0, True)
        for k, dg in got.digested.items():  # a digest is sent in place, charged its own framed cost
            assert sent.messages[sent.origins.index(k)] == dg.message != point.messages[k]
            assert message_cost(dg.message, counter) == dg.cost < point.costs[k]
        if holder in got.digested and digest.kept > whole.kept:
            assert "ORD-1003" in got.digested[holder].text
            found.append(share)
    assert found, "no share digests the holder and keeps its value: the fixture no longer exercises digests"


def test_the_in_place_oracle_bounds_every_in_place_policy_and_beats_the_unit_oracle_with_a_digest():
    point = in_unit(
        _session([_listing(1000, 12), _listing(2000, 12)], ["ORD-1003", "ORD-2001"], system=True, query="cancel"),
        "tokens",
    )
    counter = counter_of("tokens")
    gained = []
    for share in [k / 20 for k in range(1, 21)]:
        budget = point.budget(share)
        scores = {
            rule: score_sent(point, rule(point, budget, _context()), budget, counter)
            for rule in (oracle_in_place, oracle_units, store_default_whole, store_recency)
        }
        bound = scores[oracle_in_place]
        assert (bound.broken, bound.invalid, bound.used <= budget) == (0, 0, True)
        assert all(bound.kept >= got.kept for got in scores.values())
        sent = oracle_in_place(point, budget, _context())
        for message, origin in zip(sent.messages, sent.origins):
            if message != point.messages[origin]:  # sent as the store's own digest of that result
                assert message["tool_call_id"] == point.messages[origin]["tool_call_id"]
                assert message["content"].startswith(f"[digest of block m{origin},")
        if bound.kept > scores[oracle_units].kept:
            gained.append(share)
    assert gained, "no share where a digest keeps more than whole units: the fixture no longer exercises digests"
