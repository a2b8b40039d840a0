"""``select_forms``: the Numba greedy equals the ``dsgc_ref`` oracle bit for bit, and the
rule's guarantees hold (budget, floors, no upgrade left that fits, unit-cost monotonicity)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast.digest_selection import FormSelection, select_forms
from dsgc_fast.kernels import digest_selection as kernel
from dsgc_ref.contract import Form
from dsgc_ref.digest_selection import select_forms as ref_select_forms

VALUES = [0.0, 0.1, 0.25, 0.5, 1.0, 3.0]  # few distinct values: many tied ratios


@st.composite
def cases(draw, max_n=25, max_cost=12):
    """(c, d, v, w, budget, floor) with ties, zero costs, digests as dear as the whole,
    digests worth nothing or as much as the whole."""
    n = draw(st.integers(0, max_n))
    c = draw(st.lists(st.integers(0, max_cost), min_size=n, max_size=n))
    d = [draw(st.sampled_from([0, ci, ci // 2, ci // 3, max(ci - 1, 0)])) for ci in c]
    v = draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))
    w = [draw(st.sampled_from([0.0, vi, vi / 2, vi / 3, vi * 0.9])) for vi in v]
    floor = draw(st.none() | st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=n, max_size=n))
    total = sum(c)
    budget = draw(st.sampled_from([0, total, total // 2, total // 4, total + 5]) | st.integers(0, total + 1))
    return c, d, v, w, budget, floor


def both(c, d, v, w, budget, floor=None):
    got = select_forms(np.array(c, dtype=np.int64), np.array(d, dtype=np.int64), np.array(v), np.array(w), budget,
                       floor=floor)  # fmt: skip
    want = ref_select_forms(c, d, v, w, budget, floor=floor)
    return got, want


def assert_same(got: FormSelection, want) -> None:
    assert got.forms.tolist() == [int(f) for f in want.forms]
    assert got.used == want.used
    assert got.value.hex() == want.value.hex()
    assert got.budget == want.budget


@given(cases())
def test_kernel_equals_oracle(case):
    assert_same(*both(*case))


@given(cases(max_n=60, max_cost=3))
def test_kernel_equals_oracle_on_cheap_many_ties(case):
    assert_same(*both(*case))


@given(st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_kernel_equals_oracle_on_random_reals(n, seed):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 1000, size=n)
    d = (c * rng.random(n)).astype(np.int64)
    v = rng.random(n)
    w = v * rng.random(n)
    budget = int(rng.integers(0, c.sum() + 2))
    floor = rng.choice([0, 1, 2], size=n, p=[0.8, 0.1, 0.1])
    assert_same(*both(c.tolist(), d.tolist(), v.tolist(), w.tolist(), budget, floor.tolist()))


# ---------------------------------------------------------------- degenerate cases, both engines


def test_empty_input():
    got, want = both([], [], [], [], 10)
    assert_same(got, want)
    assert got.forms.shape == (0,) and got.used == 0 and got.value == 0.0


def test_zero_budget_keeps_only_what_costs_nothing():
    got, want = both([5, 0, 4, 3], [2, 0, 0, 3], [1.0, 0.5, 1.0, 1.0], [0.5, 0.5, 0.2, 1.0], 0)
    assert_same(got, want)
    assert got.forms.tolist() == [Form.EVICT, Form.WHOLE, Form.DIGEST, Form.EVICT]


def test_all_forced_whole_even_over_budget():
    got, want = both([5, 6], [1, 1], [1.0, 1.0], [0.5, 0.5], 4, floor=[2, 2])
    assert_same(got, want)
    assert got.forms.tolist() == [Form.WHOLE, Form.WHOLE] and got.used == 11


def test_forced_digest_upgrades_only_when_it_fits():
    got, want = both([10, 10], [2, 2], [1.0, 1.0], [0.5, 0.5], 12, floor=[1, 1])
    assert_same(got, want)
    assert got.forms.tolist() == [Form.WHOLE, Form.DIGEST] and got.used == 12


def test_a_digest_as_dear_and_as_valuable_as_the_whole_is_never_chosen():
    c = [4, 7, 3, 9]
    v = [1.0, 0.2, 0.7, 0.0]
    for budget in range(sum(c) + 1):
        got, want = both(c, c, v, v, budget)
        assert_same(got, want)
        assert Form.DIGEST not in got.forms.tolist()


def test_a_digest_as_dear_but_worth_less_is_only_a_fallback():
    got, want = both([5, 5], [5, 5], [1.0, 0.2], [0.4, 0.2], 5)
    assert_same(got, want)
    assert got.forms.tolist() == [Form.WHOLE, Form.EVICT]


def test_a_cheap_digest_comes_before_dear_wholes():
    """Block 0's digest earns 0.8 / 10 per token, its upgrade 0.2 / 90; block 1 whole 0.5 / 50."""
    got, want = both([100, 50], [10, 50], [1.0, 0.5], [0.8, 0.5], 60)
    assert_same(got, want)
    assert got.forms.tolist() == [Form.DIGEST, Form.WHOLE] and got.used == 60


def test_a_dominated_digest_lets_the_whole_go_first():
    """Digest 0.1 / 50 < whole 1.0 / 100: the whole is offered first; block 1 then no longer fits."""
    got, want = both([100, 20], [50, 20], [1.0, 0.1], [0.1, 0.1], 110)
    assert_same(got, want)
    assert got.forms.tolist() == [Form.WHOLE, Form.EVICT]


def test_ties_keep_input_order():
    got, want = both([4, 4, 4], [4, 4, 4], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], 8)
    assert_same(got, want)
    assert got.forms.tolist() == [Form.WHOLE, Form.WHOLE, Form.EVICT]


# ---------------------------------------------------------------- guarantees


def _cost(form: int, c: int, d: int) -> int:
    return (0, d, c)[form]


@given(cases())
def test_budget_floors_and_maximality(case):
    c, d, v, w, budget, floor = case
    got = select_forms(c, d, v, w, budget, floor=floor)
    forms = got.forms.tolist()
    floors = floor if floor is not None else [0] * len(c)
    assert all(f >= lo for f, lo in zip(forms, floors))
    assert got.used == sum(_cost(f, ci, di) for f, ci, di in zip(forms, c, d))
    floor_cost = sum(_cost(lo, ci, di) for lo, ci, di in zip(floors, c, d))
    if floor_cost > budget:
        assert forms == floors
        return
    assert got.used <= budget
    left = budget - got.used
    for f, ci, di in zip(forms, c, d):
        if f == Form.EVICT:
            assert di > left  # neither the digest nor the whole fits
        elif f == Form.DIGEST:
            assert ci - di > left


@given(cases(max_n=15, max_cost=1))
def test_value_is_monotone_in_the_budget_when_steps_cost_0_or_1(case):
    c, d, v, w, _, floor = case
    values = [select_forms(c, d, v, w, b, floor=floor).value for b in range(sum(c) + 2)]
    assert values == sorted(values)


def test_everything_fits_gives_everything_whole():
    c = [3, 0, 8, 2]
    got = select_forms(c, [1, 0, 2, 2], [0.0, 1.0, 0.3, 0.2], [0.0, 0.5, 0.1, 0.2], sum(c))
    assert got.forms.tolist() == [Form.WHOLE] * 4
    assert got.indices(Form.WHOLE).tolist() == [0, 1, 2, 3] and got.indices(Form.DIGEST).size == 0


# ---------------------------------------------------------------- the wrapper


def test_inputs_are_not_modified_and_forms_are_read_only():
    c = np.array([5, 3], dtype=np.int32)
    d = np.array([1, 3], dtype=np.int32)
    v = np.array([1.0, 0.5], dtype=np.float32)
    w = np.array([0.5, 0.5], dtype=np.float32)
    floor = np.array([0, 2])
    copies = [x.copy() for x in (c, d, v, w, floor)]
    got = select_forms(c, d, v, w, 4, floor=floor)
    for x, y in zip((c, d, v, w, floor), copies):
        assert np.array_equal(x, y) and x.dtype == y.dtype
    with pytest.raises(ValueError):
        got.forms[0] = 2


def test_one_compiled_specialization_whatever_the_input_dtypes():
    select_forms([1, 2], [1, 1], [1, 1], [0, 1], 2)
    select_forms(np.array([1, 2], dtype=np.uint8), np.array([0, 1], dtype=np.int16), [0.5, 1.0], [0.0, 0.5], 2.0,
                 floor=[1, 0])  # fmt: skip
    assert len(kernel.select_forms.signatures) == 1


BAD = [
    (dict(d=[6, 1]), ValueError, "digest_costs\\[0\\] = 6 exceeds"),
    (dict(w=[2.0, 0.0]), ValueError, "digest_values\\[0\\] = 2.0 exceeds"),
    (dict(c=[-1, 3]), ValueError, "whole_costs must be >= 0"),
    (dict(d=[-1, 1]), ValueError, "digest_costs must be >= 0"),
    (dict(v=[float("nan"), 1.0]), ValueError, "whole_values must be finite"),
    (dict(w=[-0.5, 0.0]), ValueError, "digest_values must be finite and >= 0"),
    (dict(v=[float("inf"), 1.0]), ValueError, "whole_values must be finite"),
    (dict(d=[1]), ValueError, "digest_costs has 1 entries"),
    (dict(v=[1.0, 1.0, 1.0]), ValueError, "whole_values has 3 entries"),
    (dict(floor=[0, 3]), ValueError, "floor\\[1\\]"),
    (dict(floor=[0]), ValueError, "floor has 1 entries"),
    (dict(budget=-1), ValueError, "budget"),
    (dict(budget=1.5), TypeError, "budget"),
    (dict(c=[5.5, 3]), TypeError, "whole_costs must hold integers"),
    (dict(v=["a", 1.0]), TypeError, "whole_values"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD)
def test_bad_inputs_raise_the_same_error_in_both(change, error, message):
    args = {"c": [5, 3], "d": [1, 3], "v": [1.0, 0.5], "w": [0.5, 0.5], "budget": 4, "floor": None, **change}
    for engine in (select_forms, ref_select_forms):
        with pytest.raises(error, match=message):
            engine(args["c"], args["d"], args["v"], args["w"], args["budget"], floor=args["floor"])


def test_two_dimensional_costs_are_refused():
    with pytest.raises(ValueError, match="1-D"):
        select_forms([[1, 2]], [[1, 1]], [1.0], [1.0], 3)
