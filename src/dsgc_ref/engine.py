"""``retain``: the retention contract in pure Python (the oracle for ``dsgc_fast.retain``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from . import equations as eq
from .contract import (
    BindingTable,
    DsgcTypeError,
    DsgcValueError,
    ParamOverrides,
    Params,
    Reason,
    check_budget,
    check_indices,
    check_referent_lists,
    is_integer_scalar,
    whitespace_cost,
)
from .pins import closure_from, escalate, live_binders
from .selection import select


@dataclass(frozen=True)
class QuantizedRows:
    """int8 codes with their scale map, the oracle's form of ``dsgc_fast.QuantizedEmbeddings``.

    ``codes[i][t]`` integers in [-128, 127]; ``scale`` one value per row or one for all
    (finite, > 0); ``step`` (finite, > 0) and ``offset`` (finite) one per dimension or None.
    Scored by ``equations.quantized_similarities``.
    """

    codes: Sequence[Sequence[int]]
    scale: Sequence[float] = (1.0,)
    step: Sequence[float] | None = None
    offset: Sequence[float] | None = None


@dataclass
class Retention:
    """What ``retain`` decided, with every intermediate quantity (plain lists).

    ``retained``   sorted indices kept;            ``mask``       keep flag per block
    ``rank``       all indices, best first;        ``scores``     the ranking score I_i
    ``relevance``  softmax relevance r_i;          ``propagated`` support pi_i
    ``similarity`` raw a_i = <q, e_i>;             ``reasons``    a ``Reason`` per block
    ``used``       total cost kept;                ``budget``     the budget given
    ``pinned``     sorted indices pinned;          ``binding_table`` None unless escalated
    ``working``    the agent policy's working-set support rho_i (0.0 elsewhere)
    """

    retained: list[int]
    mask: list[bool]
    rank: list[int]
    scores: list[float]
    relevance: list[float]
    propagated: list[float]
    similarity: list[float]
    reasons: list[Reason]
    used: int
    budget: int
    policy: str
    selection: str
    pinned: list[int]
    working: list[float]
    binding_table: BindingTable | None = None


def _as_float_rows(name: str, rows: Any, width: int | None) -> list[list[float]]:
    out = []
    for k, row in enumerate(rows):
        if not hasattr(row, "__iter__") or isinstance(row, (str, bytes)):
            raise DsgcValueError(f"{name} must be 2-D (N, d): row {k} is not a sequence")
        vals = []
        for x in row:
            if isinstance(x, (bool, str, bytes, complex)) or not hasattr(x, "__float__"):
                raise DsgcTypeError(f"{name} must hold real numbers, got {x!r} (row {k})")
            vals.append(float(x))
        if width is not None and len(vals) != width:
            raise DsgcValueError(f"{name} row {k} has {len(vals)} values, expected {width}")
        if not all(math.isfinite(v) for v in vals):
            raise DsgcValueError(f"{name} contains NaN or inf (row {k})")
        out.append(vals)
    return out


def _check_quantized(rows: QuantizedRows, width: int) -> list[list[int]]:
    """The codes as lists of ints in [-128, 127] of ``width`` each; the scale map checked."""
    codes = [[int(c) for c in row] for row in rows.codes]
    for k, row in enumerate(codes):
        if len(row) != width:
            raise DsgcValueError(f"block_embs row {k} has {len(row)} codes, expected {width}")
        if any(not -128 <= c <= 127 for c in row):
            raise DsgcValueError(f"block_embs row {k} has a code outside int8")
    if len(rows.scale) not in (1, len(codes)) or not all(math.isfinite(x) and x > 0 for x in rows.scale):
        raise DsgcValueError("scale must hold one value or one per row, finite and > 0")
    for name, vec, positive in (("step", rows.step, True), ("offset", rows.offset, False)):
        if vec is not None and (
            len(vec) != width or not all(math.isfinite(x) and (x > 0 or not positive) for x in vec)
        ):
            raise DsgcValueError(f"{name} must hold {width} finite values" + (" > 0" if positive else ""))
    return codes


def _query_rows(query_emb: Any) -> list[list[float]]:
    rows = list(query_emb)
    if rows and not hasattr(rows[0], "__len__"):
        rows = [rows]
    if not rows:
        raise DsgcValueError("query_emb has an empty embedding dimension")
    q = _as_float_rows("query_emb", rows, None)
    if len(q[0]) == 0:
        raise DsgcValueError("query_emb has an empty embedding dimension")
    if any(len(r) != len(q[0]) for r in q):
        raise DsgcValueError("query_emb rows differ in length")
    return q


def _check_weights(query_weights: Any, m: int) -> list[float]:
    if query_weights is None:
        return [1.0 / m] * m if m > 1 else [1.0]
    w = [float(x) for x in query_weights]
    if len(w) != m:
        raise DsgcValueError(f"query_weights has {len(w)} entries, expected {m} (one per query)")
    if not all(math.isfinite(x) and x >= 0 for x in w):
        raise DsgcValueError("query_weights must be finite and >= 0")
    if sum(w) <= 0:
        raise DsgcValueError("query_weights must not all be zero")
    return eq.normalize_weights(w)


def _check_costs(costs: Any, n: int) -> list[int]:
    c = list(costs)
    if len(c) != n:
        raise DsgcValueError(f"costs has {len(c)} entries, expected {n} (one per block)")
    for k, x in enumerate(c):
        if not is_integer_scalar(x):
            raise DsgcTypeError(f"costs[{k}] must be a non-negative integer, got {x!r}")
        if int(x) < 0:
            raise DsgcValueError(f"costs[{k}] must be >= 0, got {x}")
    return [int(x) for x in c]


def _check_edges(edges: Any, n: int) -> list[tuple[int, int]]:
    if edges is None:
        return []
    out = []
    for k, pair in enumerate(edges):
        pair = list(pair)
        if len(pair) != 2:
            raise DsgcValueError(f"edges[{k}] must be a (dependent, prerequisite) pair")
        if not all(is_integer_scalar(x) for x in pair):
            raise DsgcTypeError(f"edges[{k}] must hold integers, got {pair!r}")
        j, i = int(pair[0]), int(pair[1])
        if not (0 <= j < n and 0 <= i < n):
            raise DsgcValueError(f"edges[{k}] = ({j}, {i}) is out of range for {n} blocks")
        out.append((j, i))
    return out


def _check_order(order: Any, n: int) -> list[int]:
    if order is None:
        return list(range(n))
    o = list(order)
    if not all(is_integer_scalar(x) for x in o):
        raise DsgcTypeError("order must hold integers")
    o = [int(x) for x in o]
    if sorted(o) != list(range(n)):
        raise DsgcValueError(f"order must be a permutation of range({n})")
    return o


def kept_reasons(
    policy: str, relevance: Sequence[float], support: Sequence[float], working: Sequence[float], lambda_pi: float
) -> list[Reason]:
    """The reason a block gets if the ranking admits it.

    Recency for the recency policy; otherwise support if lambda_pi * (pi_i + rho_i) > r_i
    (working-set support if rho_i > pi_i, else propagation), else relevance.
    """
    if policy == "recency":
        return [Reason.KEPT_RECENCY] * len(relevance)
    out = []
    for r, p, w in zip(relevance, support, working):
        if lambda_pi * (p + w) > r:
            out.append(Reason.KEPT_WORKING if w > p else Reason.KEPT_PROPAGATION)
        else:
            out.append(Reason.KEPT_RELEVANCE)
    return out


def _check_ages(ages: Any, n: int, policy: str) -> list[int]:
    if ages is None:
        return [0] * n
    if policy != "agent":
        raise DsgcValueError(f"ages (working-set ages) are read by policy 'agent' only, not {policy!r}")
    a = list(ages)
    if len(a) != n:
        raise DsgcValueError(f"ages has {len(a)} entries, expected {n} (one per block)")
    for k, x in enumerate(a):
        if not is_integer_scalar(x) or not 0 <= int(x) <= n:
            raise DsgcValueError(f"ages[{k}] must be an integer in [0, {n}] (0: no working-set support), got {x!r}")
    return [int(x) for x in a]


def retain(
    query_emb: Any,
    block_embs: Any,
    costs: Any,
    budget: Any,
    *,
    params: Params | None = None,
    edges: Any = None,
    order: Any = None,
    query_weights: Any = None,
    live: Any = None,
    uses: Any = None,
    binds: Any = None,
    binders: Any = None,
    cost_fn: Any = None,
    ages: Any = None,
    **overrides: Unpack[ParamOverrides],
) -> Retention:
    """Decide which blocks survive a token budget (see DESIGN.md, "The retention contract").

    Relevance r = softmax(<q, e_i> / tau) (a weighted mixture of softmaxes for an (m, d)
    query), support pi by ``hops``-hop propagation along prerequisite edges, score
    I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent.  Policies:
    ``similarity`` ranks by raw <q, e_i>; ``no_graph`` is DSGC with lambda_pi = 0;
    ``dsgc``; ``recency`` keeps the newest (last in ``order``) first.  Ties keep ``order``.
    The knobs come from ``params`` (a ``Params``) with keyword ``overrides``.

    Referent pinning (any of ``live``, ``uses``, ``binds`` given): the live roots and their
    referent closure are pinned and charged first; the rest is walked in rank order and
    each admitted block brings the unkept part of its closure, all or nothing.  If the
    pinned set exceeds the budget, the pinned non-roots are replaced by a binding table
    (cost ``cost_fn(table.text)``); if roots plus table still exceed it,
    ``ReferentEvictionError``.  ``binders`` (referent -> block) overrides the
    newest-binder rule.  ``recency`` with pins is the recency-plus-pin fallback.

    Policy ``agent`` reads ``ages``, each block's working age u_i (0: none; 1: the newest
    working unit): rho_i = recency_decay^(u_i - 1) * working_weight / N (1/N: the mean
    relevance) and I_i = (r_i + lambda_pi * (pi_i + rho_i)) / max(c_i, 1) ** density_exponent;
    without ages it ranks exactly as ``dsgc``.
    """
    p = Params.of(params, **overrides)
    budget = check_budget(budget)
    q = _query_rows(query_emb)
    d = len(q[0])
    codes = _check_quantized(block_embs, d) if isinstance(block_embs, QuantizedRows) else None
    embs = codes if codes is not None else _as_float_rows("block_embs", block_embs, d)
    n = len(embs)
    weights = _check_weights(query_weights, len(q))
    cost = _check_costs(costs, n)
    pairs = _check_edges(edges, n)
    seq = _check_order(order, n)
    age = _check_ages(ages, n, p.policy)

    pinning = live is not None or uses is not None or binds is not None
    if pinning:
        use_lists, bind_maps = check_referent_lists(uses, binds, n)
        live_map = live_binders(bind_maps, seq, binders)
        roots = sorted(set(check_indices("live", live, n)))

    if codes is not None:
        a_k = [eq.quantized_similarities(qk, codes, block_embs.scale, block_embs.step, block_embs.offset) for qk in q]
    else:
        a_k = [eq.similarities(qk, embs) for qk in q]
    if any(not math.isfinite(x) for row in a_k for x in row):
        raise DsgcValueError("query_emb . block_embs overflows float64; rescale the embeddings")
    if n == 0:
        return Retention([], [], [], [], [], [], [], [], 0, budget, p.policy, p.selection, [], [])
    similarity = eq.mixture_similarity(a_k, weights)
    relevance = eq.mixture_relevance(a_k, weights, p.tau, seq)
    deps = eq.dependents_lists(n, pairs, seq)
    if p.hops == 1:
        support = eq.propagate_one_hop(relevance, deps)
    else:
        support = eq.propagate_k_hop(relevance, deps, p.hops, p.decay, seq)

    lam = p.effective_lambda
    working = eq.working_support(age, p.recency_decay, p.working_weight) if ages is not None else [0.0] * n
    if p.policy == "similarity":
        scores = similarity
    elif p.policy == "recency":
        scores = eq.recency_scores(seq)
    elif ages is not None:
        scores = eq.combine_agent(relevance, support, working, cost, lam, p.density_exponent)
    else:
        scores = eq.combine(relevance, support, cost, lam, p.density_exponent)

    ranking = eq.rank(scores, seq)
    keep_reason = kept_reasons(p.policy, relevance, support, working, lam)
    if not pinning:
        mask, reasons, used = select(ranking, cost, budget, p.selection, keep_reason)
        pinned: list[int] = []
        table = None
    else:
        mask, reasons, used, pinned, table = _select_with_pins(
            ranking, cost, budget, p.selection, keep_reason, roots, use_lists, bind_maps, live_map, cost_fn
        )
    return Retention(
        retained=[i for i in range(n) if mask[i]],
        mask=mask,
        rank=ranking,
        scores=scores,
        relevance=relevance,
        propagated=support,
        working=working,
        similarity=similarity,
        reasons=reasons,  # type: ignore[arg-type]
        used=used,
        budget=budget,
        policy=p.policy,
        selection=p.selection,
        pinned=pinned,
        binding_table=table,
    )


def _select_with_pins(ranking, cost, budget, selection, keep_reason, roots, use_lists, bind_maps, live_map, cost_fn):
    """Pinned-set subtraction, escalation to a binding table, closure-aware selection."""
    pinned = sorted(closure_from(roots, use_lists, live_map))
    preset, excluded, table = escalate(pinned, roots, cost, budget, bind_maps, live_map, cost_fn or whitespace_cost)

    def unit_of(i, mask):
        binders_of_i = [b for x in use_lists[i] if (b := live_map.get(x)) is not None]
        return closure_from(binders_of_i, use_lists, live_map, lambda b: b == i or mask[b] or excluded[b])

    mask, reasons, used = select(
        ranking,
        cost,
        budget,
        selection,
        keep_reason,
        preset=preset,
        excluded=excluded,
        reserved=table.cost if table else 0,
        unit_of=unit_of,
    )
    for i in pinned:
        reasons[i] = Reason.KEPT_PINNED if mask[i] else Reason.TABLED
    return mask, reasons, used, pinned, table
