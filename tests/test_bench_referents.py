"""Referent-session benchmark: generator determinism, ground truth, and the suite's guarantees."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dsgc_fast
from dsgc_bench.referent_domains import DOMAINS, FORMS
from dsgc_bench.referent_sessions import QUERY_WEIGHTS, generate, generate_all, interleave
from dsgc_bench.referents import BUDGETS, Budget, Prepared, ReferentSuite, evaluate
from dsgc_bench.runner import Encodings
from dsgc_bench.suite import RunConfig, execute

SEEDS = range(12)
CASES = [(d, s) for d in DOMAINS for s in SEEDS]


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_generator_is_deterministic_per_seed(domain):
    assert generate(domain, 5) == generate(domain, 5)
    texts = {generate(domain, s).texts for s in range(6)}
    assert len(texts) == 6


def test_seeds_vary_entities_and_forms():
    sessions = generate_all(range(20))
    assert {s.form for s in sessions} == set(FORMS)
    assert {s.query_kind for s in sessions} == {"parent", "child"}
    for domain in DOMAINS:
        needed = {s.needed for s in sessions if s.domain == domain}
        assert len(needed) >= 8


@pytest.mark.parametrize(("domain", "seed"), CASES)
def test_ground_truth_is_consistent(domain, seed):
    s = generate(domain, seed)
    assert s.kinds[0] == "system" and s.kinds[-1] == "query" and s.roles[s.query] == "user"
    assert (s.costs >= 1).all()
    index = dsgc_fast.ReferentIndex.from_lists(s.uses, s.binds)
    live = dict(zip(index.names, index.live_binder.tolist()))
    assert [len(xs) for xs in s.uses] == [len(m) for m in s.meant]
    for u, xs in enumerate(s.uses):
        for x, meant in zip(xs, s.meant[u]):
            assert x in s.texts[u]
            b = live[x]
            assert b == meant, f"turn {u} uses {x!r} meaning turn {meant}, but it resolves to turn {b}"
            assert 0 < b < u and s.kinds[b] == "intro"
            assert x in s.texts[b] or s.binds[b][x] in s.texts[b]  # an id, or what names the id
    for b, bound in enumerate(s.binds):
        for x in bound or {}:
            assert any(x in xs for xs in s.uses), f"turn {b} binds {x!r}, which nobody uses"
    assert s.uses[s.query] == (s.needed,) and s.needed in s.texts[s.query]
    assert live[s.needed] == s.binder
    assert s.binder in dsgc_fast.pin_closure(list(s.live), referents=index).tolist()
    indptr, needs = index.needs()
    owner = np.repeat(np.arange(s.n_blocks), np.diff(indptr))
    assert s.reference_edges() == sorted(set(zip(owner.tolist(), needs.tolist())))


@pytest.mark.parametrize(("domain", "seed"), CASES[::5])
def test_query_turns_are_the_last_user_turns(domain, seed):
    s = generate(domain, seed)
    turns = s.query_turns()
    assert turns[-1] == s.query and len(turns) == len(QUERY_WEIGHTS)
    assert all(s.roles[i] == "user" for i in turns)
    later = [i for i in range(turns[0], s.n_blocks) if s.roles[i] == "user"]
    assert later == turns


def test_interleave_keeps_each_sequence_in_order():
    rng = np.random.default_rng(0)
    seqs = [["a1", "a2", "a3"], ["b1"], [], ["c1", "c2"]]
    out = interleave(rng, seqs)
    assert sorted(out) == sorted(x for q in seqs for x in q)
    for q in seqs:
        assert [x for x in out if x in q] == q


def test_generate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="domain"):
        generate("chat", 0)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="seed"):
            generate("support", bad)


def test_budget_is_a_ceiling_of_the_exact_fraction():
    assert Budget("total", 0.3).of(101, 50) == 31
    assert Budget("total", 0.3).of(100, 50) == 30
    assert Budget("pinned", 0.8).of(1000, 51) == 41
    assert Budget("pinned", 0.8).label == "0.8 x pinned"


@pytest.fixture(scope="module")
def lexical_rows():
    return evaluate([Prepared.of(s) for s in generate_all([0, 1, 2])], Encodings(), ["lexical"])


def test_pinned_variants_never_orphan_and_keep_the_needed_binding(lexical_rows):
    pinned = [r for r in lexical_rows if r["pins"]]
    assert pinned
    for r in pinned:
        assert r["orphans"] == 0 and r["sessions_with_orphan"] == 0
        assert r["needed_survived"] == r["sessions"] - r["errors"]


def test_similarity_orphans_at_every_budget(lexical_rows):
    sim = [r for r in lexical_rows if r["variant"] == "similarity"]
    assert len(sim) == len(BUDGETS)
    for r in sim:
        assert r["orphan_rate"] > 0.2 and r["errors"] == 0


def test_escalation_happens_only_with_pins_under_the_pinned_budget(lexical_rows):
    for r in lexical_rows:
        if not r["pins"]:
            assert r["escalations"] == r["errors"] == 0 and r["table_tokens"] == 0
    tight = [r for r in lexical_rows if r["pins"] and r["budget"] == "0.8 x pinned"]
    assert all(r["escalations"] + r["errors"] == r["sessions"] for r in tight)
    assert all(r["escalations"] > 0 for r in tight)
    # roots + table <= 0.8 x pinned < roots + the pinned turns the table replaces
    assert all(r["table_tokens"] < r["tabled_tokens"] for r in tight)


def test_eviction_volume_is_consistent(lexical_rows):
    for r in lexical_rows:
        assert 0 <= r["evicted_tokens"] <= r["total_tokens"]
        assert r["evicted_turns"] > 0


def test_referent_suite_writes_its_outputs(tmp_path):
    suite = ReferentSuite()
    result = execute(suite, RunConfig(seeds=(3,), encoders=("lexical",)), tmp_path)
    assert result["n_sessions"] == len(DOMAINS) and result["pinned_orphans"] == 0
    assert suite.load(tmp_path) == json.loads(json.dumps(result))
    md = (tmp_path / "referents.md").read_text()
    assert md.startswith("## Referent sessions\n") and "| lexical | 0.2 x total | dsgc+pins | 0.0%" in md
    assert (tmp_path / "referents.png").stat().st_size > 0


@pytest.mark.sentence
def test_sentence_encoder_pinned_variants_never_orphan():
    pytest.importorskip("sentence_transformers")
    rows = evaluate([Prepared.of(generate("support", 0))], Encodings(), ["sentence"], budgets=BUDGETS[:2])
    assert all(r["orphans"] == 0 for r in rows if r["pins"])
