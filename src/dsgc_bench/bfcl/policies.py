"""The policies compared on a scoring point, all through the public API.

Every policy keeps the query (the turn's user message) and spends at most the budget.

Message level (``dsgc_fast.retain`` over the blocks, the query a live root; tool calls
and results are separate blocks, so pairs can break):

- ``recency-prefix`` / ``recency-first-fit``: newest first, ``selection="prefix"`` /
  ``"first_fit"``;
- ``similarity``: raw similarity to the query;
- ``dsgc``: the paper's rule with ``trace_edges(messages)`` as edges.

Store level (``MemoryStore`` + ``dsgc_fast.memory.messages.add_messages`` +
``compact_messages``: tool units kept whole, the query a live root; whole messages only,
``digests=False``, since a ``Selection`` scores kept messages whole: the digests are measured
in the product-unit tables, ``anchors``):

- ``store-default``: ``add_messages`` and ``compact_messages`` with their defaults (the
  agent policy, induced edges and referents);
- ``store-no-induction``: the same with ``add_messages(..., induce=False)``;
- ``store-dsgc``: ``policy="dsgc"`` without induction, the paper's rule (the store's default
  before the agent policy);
- ``store-recency``: ``policy="recency"`` without induction;
- ``store-annotated``: the agent policy with every message annotated by hand (``"dsgc"``:
  ``id``, ``depends_on``, ``binds``, ``uses``) with what the batch functions ``trace_edges``
  and ``induce`` return on the blocks (so the store induces nothing itself).

When the live roots (and their referent closure) exceed the budget the engine raises
``ReferentEvictionError``; the point then keeps the query alone and counts as *over budget*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgc_fast import MemoryStore, ReferentEvictionError, retain
from dsgc_fast.memory.messages import add_messages, compact_messages

from .points import Point
from .values import View, normal_view


@dataclass(frozen=True)
class Selection:
    """What a policy kept: block indices (sorted), views and cost of extra kept text (a
    binding table the store added), and whether the engine refused the budget."""

    retained: np.ndarray
    extra: tuple[View, ...] = ()
    extra_cost: int = 0
    over_budget: bool = False


class Embeddings:
    """Block and query embeddings of points through one memoizing encoder."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder

    def blocks(self, point: Point) -> np.ndarray:
        return self.encoder.encode(list(point.texts))


def _query_only(point: Point) -> Selection:
    return Selection(np.array([point.query], dtype=np.int64), over_budget=True)


def _retain(point: Point, emb: Embeddings, budget: int, **options: Any) -> Selection:
    embs = emb.blocks(point)
    try:
        got = retain(embs[point.query], embs, point.costs, budget, live=[point.query], **options)
    except ReferentEvictionError:
        return _query_only(point)
    return Selection(np.asarray(got.retained, dtype=np.int64))


def recency_prefix(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _retain(point, emb, budget, policy="recency", selection="prefix")


def recency_first_fit(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _retain(point, emb, budget, policy="recency", selection="first_fit")


def similarity(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _retain(point, emb, budget, policy="similarity")


def dsgc_trace(point: Point, emb: Embeddings, budget: int) -> Selection:
    from dsgc_fast.induction import trace_edges

    return _retain(point, emb, budget, policy="dsgc", edges=trace_edges(list(point.messages)))


def _block_ids(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


def _compact(
    point: Point, emb: Embeddings, budget: int, messages: list[dict[str, Any]], *, induce: bool = True, **options: Any
) -> Selection:
    with MemoryStore(encoder=emb.encoder, tokenizer="whitespace") as store:
        ids = add_messages(store, messages, induce=induce)
        index = {block_id: i for i, block_id in enumerate(ids)}
        try:
            compact_messages(store, budget, digests=False, **options)
        except ReferentEvictionError:
            return _query_only(point)
        kept, extra, extra_cost = [], [], 0
        for block in store.blocks(embeddings=False):
            if block.id in index:
                kept.append(index[block.id])
            else:  # a binding table the escalation added
                extra.append(View(normal_view(block.text)))
                extra_cost += block.cost
    return Selection(np.array(sorted(kept), dtype=np.int64), tuple(extra), extra_cost)


def store_default(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _compact(point, emb, budget, [dict(m) for m in point.messages])


def store_no_induction(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _compact(point, emb, budget, [dict(m) for m in point.messages], induce=False)


def store_dsgc(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _compact(point, emb, budget, [dict(m) for m in point.messages], induce=False, policy="dsgc")


def store_recency(point: Point, emb: Embeddings, budget: int) -> Selection:
    return _compact(point, emb, budget, [dict(m) for m in point.messages], induce=False, policy="recency")


def annotations(point: Point) -> list[dict[str, Any]]:
    """The ``"dsgc"`` annotation of every block: ids, trace and induced edges, induced referents."""
    from dsgc_fast.induction import induce, trace_edges

    ids = _block_ids(point.n)
    found = induce(list(point.texts))
    edges = np.concatenate([trace_edges(list(point.messages)), found.edges]).astype(np.int64)
    depends: list[list[str]] = [[] for _ in ids]
    for j, i in sorted({(int(j), int(i)) for j, i in edges.tolist()}):
        depends[j].append(ids[i])
    return [
        {"id": ids[i], "depends_on": depends[i], "binds": dict(found.binds[i] or {}), "uses": list(found.uses[i])}
        for i in range(point.n)
    ]


def annotated_messages(point: Point) -> list[dict[str, Any]]:
    """The point's messages, each with its ``"dsgc"`` annotation."""
    return [{**m, "dsgc": note} for m, note in zip(point.messages, annotations(point))]


class AnnotatedStore:
    """``store-annotated``: the store default on the annotated messages.

    Induction depends on neither the encoder nor the budget, so each point's annotations are
    computed once per instance; points are told apart by session, split, turn and query text
    (unique within a run: make one instance per run).
    """

    def __init__(self) -> None:
        self._messages: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}

    def __call__(self, point: Point, emb: Embeddings, budget: int) -> Selection:
        key = (point.session, point.split, point.turn, point.texts[-1])
        if key not in self._messages:
            self._messages[key] = annotated_messages(point)
        return _compact(point, emb, budget, self._messages[key])


Policy = Callable[[Point, Embeddings, int], Selection]


def baselines() -> dict[str, Policy]:
    """Every policy of the module, by table name (a fresh ``AnnotatedStore`` each call)."""
    return {
        "recency-prefix": recency_prefix,
        "recency-first-fit": recency_first_fit,
        "similarity": similarity,
        "dsgc": dsgc_trace,
        "store-recency": store_recency,
        "store-dsgc": store_dsgc,
        "store-default": store_default,
        "store-no-induction": store_no_induction,
        "store-annotated": AnnotatedStore(),
    }
