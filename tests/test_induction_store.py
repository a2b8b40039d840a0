"""The incremental inducer feeding a MemoryStore block by block (no declared referents)."""

from __future__ import annotations

from dsgc_fast import MemoryStore
from dsgc_fast.induction import IncrementalInducer

from .test_referent_example import TURNS


def test_induced_referents_keep_the_account_block_through_compaction():
    store, inducer = MemoryStore(), IncrementalInducer()
    ids = []
    for k, text in enumerate(TURNS):
        update = inducer.add(text)
        ids.append(
            store.add(
                text,
                id=f"t{k}",
                depends_on=[ids[j] for j in update.edges[:, 1].tolist()],
                binds=update.binds,
                uses=update.uses,
                pinned=k == 0,
            )
        )
    report = store.compact(TURNS[-1], budget=40, policy="similarity", live=[ids[-1]])
    assert "t3" in report.kept  # the block that binds 8841-C, which "that account" resolves to
    plain = MemoryStore()
    for k, text in enumerate(TURNS):
        plain.add(text, id=f"t{k}", pinned=k == 0)
    assert "t3" in plain.compact(TURNS[-1], budget=40, policy="similarity", live=["t7"]).evicted
