"""Scenario generator: determinism, structure, derivable answers, honeypot and filler rules."""

from __future__ import annotations

import math

import pytest

from dsgc_bench import fillers
from dsgc_bench.scenarios import CONTROLS, STRENGTHS, TARGETS, TEMPLATES, generate
from dsgc_fast.encoders import tokenize

SEEDS = range(20)
FUNCTION_WORDS = {"the", "a", "to", "is", "for", "its", "does", "may"}


def decisive_vocabulary(name: str) -> set[str]:
    """The query's content words plus every slot value of the template."""
    t = TEMPLATES[name]
    words = set(tokenize(t.query.template.format(**{s: "" for s in t.query.slots}))) - FUNCTION_WORDS
    return words | {tok for pool in t.pools.values() for v in pool for tok in tokenize(v)}


def test_template_split():
    assert set(CONTROLS) == {"expense", "threshold"} and set(TARGETS) == {"role", "profile"}
    assert all(TEMPLATES[t].depth == 2 and TEMPLATES[t].n_honeypots == 4 for t in CONTROLS)
    assert all(TEMPLATES[t].depth == 3 and TEMPLATES[t].n_honeypots == 2 for t in TARGETS)


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_generate_is_deterministic_and_seeds_differ(name):
    assert generate(name, 7) == generate(name, 7)
    assert len({tuple(generate(name, s).texts) for s in range(8)}) == 8
    assert len({generate(name, s).query for s in range(30)}) > 4  # several entities / values


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("strength", STRENGTHS)
def test_structure(name, strength):
    t = TEMPLATES[name]
    for seed in SEEDS:
        sc = generate(name, seed, honeypot=strength)
        assert sc.n_blocks == 20 and len(set(sc.texts)) == 20
        assert sc.costs == [max(len(x.split()), 1) for x in sc.texts]
        assert [sc.ids[i] for i in sc.chain] == [f"c{k + 1}" for k in range(t.depth)]
        assert sc.chain == sorted(sc.chain)  # upstream blocks are older
        assert sc.edges == [(sc.chain[k + 1], sc.chain[k]) for k in range(t.depth - 1)]
        assert sc.kinds.count("chain") == t.depth and sc.kinds.count("honeypot") == t.n_honeypots
        for i, (ident, kind) in enumerate(zip(sc.ids, sc.kinds)):
            assert ident[0] == {"chain": "c", "honeypot": "h", "filler": "f"}[kind], i
        assert [sc.ids[i] for i, k in enumerate(sc.kinds) if k == "filler"] == [
            f"f{k + 1}" for k in range(20 - t.depth - t.n_honeypots)
        ]


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("strength", STRENGTHS)
def test_chain_labels_make_the_answer_derivable(name, strength):
    answers = set()
    for seed in SEEDS:
        sc = generate(name, seed, honeypot=strength)
        answers.add(sc.answer)
        assert sc.read_answer(sc.chain) == sc.answer
        assert sc.read_answer(range(sc.n_blocks)) == sc.answer  # honeypots never confound
        for missing in sc.chain:
            assert sc.read_answer([i for i in range(sc.n_blocks) if i != missing]) is None
    assert answers == {"yes", "no"}


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("strength", STRENGTHS)
def test_honeypots_share_decisive_vocabulary_and_have_no_edges(name, strength):
    for seed in SEEDS:
        sc = generate(name, seed, honeypot=strength)
        query = set(tokenize(sc.query)) - FUNCTION_WORDS
        for i, kind in enumerate(sc.kinds):
            if kind == "honeypot":
                assert query & set(tokenize(sc.texts[i])), sc.texts[i]
                assert all(i not in edge for edge in sc.edges)


def test_fillers_carry_no_decisive_vocabulary():
    decisive = set().union(*(decisive_vocabulary(t) for t in TEMPLATES))
    corpus = fillers.corpus()
    assert len(corpus) == len(set(corpus)) == 12000
    for text in corpus:
        assert not decisive & set(tokenize(text)), text


def test_target_middle_block_shares_no_query_word_and_profile_c1_only_the_identifier():
    for seed in SEEDS:
        for name in TARGETS:
            sc = generate(name, seed)
            q = set(tokenize(sc.query))
            assert not q & set(tokenize(sc.texts[sc.chain[1]]))
        sc = generate("profile", seed)
        service = sc.query.split()[1]
        assert set(tokenize(sc.query)) & set(tokenize(sc.texts[sc.chain[0]])) == set(tokenize(service))


def test_budget_rule():
    sc = generate("role", 0)
    assert sc.chain_cost == sum(sc.costs[i] for i in sc.chain)
    for m in (1.0, 1.5, 2.0, 3.0, 5.0, 1.1):
        assert sc.budget(m) == math.ceil(round(m * 10) * sc.chain_cost / 10)
    with pytest.raises(ValueError, match="multiplier"):
        sc.budget(0)


def test_large_store_and_token_cost():
    sc = generate("profile", 3, total_blocks=10000)
    assert sc.n_blocks == 10000 and len(set(sc.texts)) == 10000
    assert sc.costs == [max(len(t.split()), 1) for t in sc.texts]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(template="nope", seed=0), "template must be one of"),
        (dict(template="role", seed=-1), "seed"),
        (dict(template="role", seed=1.5), "seed"),
        (dict(template="role", seed=0, honeypot="extreme"), "honeypot"),
        (dict(template="role", seed=0, total_blocks=4), "total_blocks"),
        (dict(template="expense", seed=0, total_blocks=12007), "total_blocks"),
    ],
)
def test_generate_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate(**kwargs)
