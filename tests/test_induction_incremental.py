"""IncrementalInducer: block-by-block induction equals the batch functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast.induction import IncrementalInducer, induce_edges, induce_referents

_WORDS = [
    "TKT-1",
    "tkt-1s",
    "RT-22",
    "MAX_RETRIES = 4",
    "max_retries is now 5",
    "/etc/a.yaml",
    "Project Falcon",
    "team Falcon",
    "that project",
    "account 8841-C",
    "that account",
    "plain",
    "ticket RF-1",
    "created RF-2",
    "that ticket",
]
stores = st.lists(st.lists(st.sampled_from(_WORDS), max_size=4).map(" and ".join), max_size=16)


@given(texts=stores, max_fanout=st.integers(1, 4), window=st.integers(1, 6))
def test_incremental_equals_batch_after_every_block(texts, max_fanout, window):
    inducer = IncrementalInducer(max_fanout=max_fanout, window=window)
    edges: set[tuple[int, int]] = set()
    for k, text in enumerate(texts):
        update = inducer.add(text, timestamp=k // 2)
        assert update.index == k
        assert all(j == k and i < k for j, i in update.edges.tolist())
        edges |= {tuple(e) for e in update.edges.tolist()}
        edges -= {tuple(e) for e in update.retracted.tolist()}
        prefix = texts[: k + 1]
        batch = induce_edges(prefix, max_fanout=max_fanout)
        assert np.array_equal(inducer.edges, batch)
        assert edges == {tuple(e) for e in batch.tolist()}
        assert (inducer.binds, inducer.uses) == induce_referents(prefix, window=window)
        assert (update.binds, update.uses) == (inducer.binds[k], inducer.uses[k])


def test_hub_retraction_keeps_edges_other_keys_support():
    inducer = IncrementalInducer(max_fanout=2)
    inducer.add("Ticket PRJ-9 opens with node7.")
    assert inducer.add("PRJ-9 and node7 again.").edges.tolist() == [[1, 0]]
    assert inducer.add("PRJ-9 third.").edges.tolist() == [[2, 0]]
    update = inducer.add("PRJ-9 fourth.")  # PRJ-9 now has 3 dependents > 2: a hub
    assert update.edges.shape == (0, 2)
    assert update.retracted.tolist() == [[2, 0]]  # (1, 0) is still supported by node7
    assert inducer.edges.tolist() == [[1, 0]]
    assert inducer.add("PRJ-9 fifth.").retracted.shape == (0, 2)


def test_len_and_empty_state():
    inducer = IncrementalInducer()
    assert len(inducer) == 0 and inducer.edges.shape == (0, 2)
    inducer.add("")
    assert len(inducer) == 1 and inducer.binds == [None] and inducer.uses == [[]]


def test_argument_errors():
    inducer = IncrementalInducer()
    with pytest.raises(TypeError, match="text"):
        inducer.add(None)
    inducer.add("TKT-1", timestamp=5)
    with pytest.raises(ValueError, match="older"):
        inducer.add("TKT-1", timestamp=4)
    with pytest.raises(ValueError, match="timestamps"):
        inducer.add("TKT-1", timestamp=float("inf"))
    with pytest.raises(ValueError, match="max_fanout"):
        IncrementalInducer(max_fanout=0)
