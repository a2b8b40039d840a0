"""The selection rules are named once (``dsgc_ref.contract.SELECTIONS``) and coded once
(``dsgc_fast.stages.SELECTION_CODES``): the names cannot drift between the oracle and the engine.

A maintainer adding or changing a rule edits the contract, ``dsgc_ref/selection.py``,
``dsgc_fast/kernels/selection.py`` and the registry line in ``dsgc_fast/stages.py``
(``docs/architecture.md``); these tests fail when one of the four is forgotten.
"""

from __future__ import annotations

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref
from dsgc_fast.kernels.selection import select, stops
from dsgc_fast.stages import SELECTION_CODES
from dsgc_ref.contract import SELECTIONS, Params, Reason
from dsgc_ref.selection import select as ref_select

#: a ranking whose second block does not fit: first_fit skips it and keeps the third,
#: prefix stops there and cuts the third off
RANKING, COSTS, BUDGET = [0, 1, 2], [1, 5, 1], 2


def test_every_contract_name_has_one_distinct_kernel_code():
    assert list(SELECTION_CODES) == list(SELECTIONS)
    codes = list(SELECTION_CODES.values())
    assert len(set(codes)) == len(codes)
    assert [bool(stops(c)) for c in codes] == [name == "prefix" for name in SELECTION_CODES]


@pytest.mark.parametrize("name", SELECTIONS)
def test_the_kernel_walk_and_the_oracle_walk_agree_on_each_rule(name):
    n = len(COSTS)
    kept_reason = [Reason.KEPT_RELEVANCE] * n
    ref_mask, ref_reasons, ref_used = ref_select(RANKING, COSTS, BUDGET, name, kept_reason)
    mask = np.zeros(n, dtype=np.bool_)
    reasons = np.empty(n, dtype=np.int8)
    used = select(
        np.array(RANKING), np.array(COSTS), BUDGET, SELECTION_CODES[name], np.full(n, Reason.KEPT_RELEVANCE, np.int8),
        np.int8(Reason.SKIPPED_NO_FIT), np.int8(Reason.EVICTED_CUTOFF), mask, reasons,
    )  # fmt: skip
    assert (mask.tolist(), reasons.tolist(), used) == (ref_mask, [int(r) for r in ref_reasons], ref_used)


def test_the_rules_differ_and_both_packages_honour_the_name():
    embs = np.eye(3)
    q = np.ones(3)
    kept = {}
    for name in SELECTIONS:
        p = Params(policy="similarity", selection=name)  # equal similarities: ranked in input order
        fast = dsgc_fast.retain(q, embs, np.array(COSTS), BUDGET, params=p)
        ref = dsgc_ref.retain(q.tolist(), embs.tolist(), COSTS, BUDGET, params=p)
        assert fast.retained.tolist() == list(ref.retained)
        kept[name] = fast.retained.tolist()
    assert len({tuple(k) for k in kept.values()}) == len(SELECTIONS)
