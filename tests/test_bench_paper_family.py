"""The paper scenario family: determinism, the generator's mechanisms, its ablation switches, texts."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from dsgc_bench import paper_family
from dsgc_bench.paper_family import generate
from dsgc_bench.paper_templates import FILLERS, SUFFIX, TEMPLATES
from dsgc_bench.templates import STRENGTHS
from dsgc_fast.encoders import tokenize

SEEDS = range(30)
FUNCTION_WORDS = {"the", "a", "to", "its", "of", "may", "can", "has", "answer", "yes", "or", "no"}


def filler_copies(sc) -> Counter:
    return Counter(t for t, k in zip(sc.texts, sc.kinds) if k == "filler")


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_generate_is_deterministic_and_seeds_differ(name):
    assert generate(name, 11, total_blocks=50) == generate(name, 11, total_blocks=50)
    assert len({tuple(generate(name, s).texts) for s in range(10)}) == 10
    assert len({generate(name, s).query for s in SEEDS}) > 3


def test_the_recipe_draws_from_random_random_in_order():
    # slot values first: one choice per slot in sorted order, from four values each
    t = TEMPLATES["role"]
    rng = random.Random(5)
    values = {slot: rng.choice(t.pools[slot]) for slot in sorted(t.pools)}
    assert generate("role", 5).query == t.query.render(**values) + SUFFIX


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_texts_follow_the_papers_generator(name):
    t = TEMPLATES[name]
    assert all(len(pool) == 4 for pool in t.pools.values())
    assert all(len(t.honeypots[s]) == 8 == len(set(t.honeypots[s])) for s in STRENGTHS)
    assert t.n_honeypots == (4 if t.regime == "control" else 2) and t.depth == (2 if t.regime == "control" else 3)
    assert len(FILLERS) == len(set(FILLERS)) == 16 and all(10 <= len(f.split()) <= 13 for f in FILLERS)


def test_fillers_carry_no_decisive_vocabulary():
    decisive = set()
    for t in TEMPLATES.values():
        words = set(tokenize(t.query.template.format(**{s: "" for s in t.query.slots})))
        decisive |= (words - FUNCTION_WORDS) | {tok for pool in t.pools.values() for v in pool for tok in tokenize(v)}
    for text in FILLERS:
        assert not decisive & set(tokenize(text)), text


def test_fillers_are_drawn_with_replacement_so_stores_hold_copies():
    for blocks, distinct in ((20, range(6, 14)), (50, range(11, 17))):
        copies = [filler_copies(generate("profile", s, total_blocks=blocks)) for s in SEEDS]
        assert all(len(c) in distinct for c in copies), blocks
        assert all(max(c.values()) >= 2 for c in copies)


def test_chain_blocks_take_random_positions_in_any_order():
    orders = {tuple(generate("role", s).chain) == tuple(sorted(generate("role", s).chain)) for s in SEEDS}
    assert orders == {True, False}  # c1 is sometimes, not always, the oldest chain block
    assert len({generate("role", s).chain[0] for s in SEEDS}) > 10


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_structure_and_answers(name):
    t = TEMPLATES[name]
    answers = set()
    for seed in SEEDS:
        sc = generate(name, seed)
        answers.add(sc.answer)
        assert sc.family == "paper" and sc.n_blocks == 20 and sc.query.endswith(SUFFIX)
        assert [sc.ids[i] for i in sc.chain] == [f"c{k + 1}" for k in range(t.depth)]
        assert sc.edges == [(sc.chain[k + 1], sc.chain[k]) for k in range(t.depth - 1)]
        assert sc.costs == [max(len(x.split()), 1) for x in sc.texts]
        assert sc.kinds.count("honeypot") == t.n_honeypots
        fill = [sc.ids[i] for i, k in enumerate(sc.kinds) if k == "filler"]
        assert fill == [f"f{k + 1}" for k in range(len(fill))]
        assert sc.read_answer(sc.chain) == sc.answer
        assert sc.read_answer(range(sc.n_blocks)) == sc.answer  # honeypots never confound
        for missing in sc.chain:
            assert sc.read_answer([i for i in range(sc.n_blocks) if i != missing]) is None
    assert answers == {"yes", "no"}


def test_profile_c1_is_short():
    sc = generate("profile", 0)
    assert sc.costs[sc.chain[0]] == 7 and all(sc.costs[i] > 7 for i in sc.chain[1:])


def test_ablation_switches_change_only_their_mechanism():
    for seed in range(10):
        full = generate("role", seed, total_blocks=50)
        bare = generate("role", seed, total_blocks=50, suffix=False)
        assert bare.query + SUFFIX == full.query and bare.texts == full.texts
        dedup = generate("role", seed, total_blocks=50, duplicates=False)
        assert max(filler_copies(dedup).values()) == 1 and set(dedup.texts) == set(full.texts)
        repeated = {i for i, k in enumerate(full.kinds) if k == "filler" and full.texts[i] in full.texts[:i]}
        assert dedup.texts == [t for i, t in enumerate(full.texts) if i not in repeated]  # oldest copies stay
        assert dedup.read_answer(dedup.chain) == dedup.answer == full.answer


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(template="nope", seed=0), "template must be one of"),
        (dict(template="role", seed=-1), "seed"),
        (dict(template="role", seed=True), "seed"),
        (dict(template="role", seed=0, honeypot="extreme"), "honeypot"),
        (dict(template="role", seed=0, total_blocks=4), "total_blocks"),
        (dict(template="role", seed=0, total_blocks=20.0), "total_blocks"),
    ],
)
def test_generate_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        paper_family.generate(**kwargs)
