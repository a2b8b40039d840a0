"""The DSGC equations, one function each, in plain Python (lists and floats).

This module is the oracle: every function spells out its arithmetic in the exact order the
Numba kernels of ``dsgc_fast`` must follow, so the two agree bit for bit on float64 inputs.

Notation (arXiv 2608.20400, Section 3): ``q`` the query embedding, ``e_i`` block embeddings,
``a_i = <q, e_i>`` raw similarity, ``r`` softmax relevance at temperature ``tau``,
``pi`` propagated support, ``I`` the retention score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .contract import EXP_FLOOR, EXP_INV_LN2, EXP_LN2_HI, EXP_LN2_LO, EXP_SPLIT, EXP_TAYLOR


def dot(q: Sequence[float], e: Sequence[float]) -> float:
    """a = sum_t q_t * e_t, accumulated left to right over t from 0.0 in float64."""
    s = 0.0
    for qt, et in zip(q, e):
        s += qt * et
    return s


def similarities(q: Sequence[float], embs: Sequence[Sequence[float]]) -> list[float]:
    """a_i = <q, e_i> for every block i."""
    return [dot(q, e) for e in embs]


def integer_weights(w: Sequence[float]) -> tuple[list[int], float]:
    """(Q, 2**-k): the weights w as integers Q_t = round_half_even(w_t * 2**k), |Q_t| <= 2**14.

    k = 14 - E where max_t |w_t| = m * 2**E with 0.5 <= m < 1 (``math.frexp``); k = 0 when
    every w_t is 0.
    """
    top = max((abs(x) for x in w), default=0.0)
    k = 14 - math.frexp(top)[1] if top > 0 else 0
    return [round(math.ldexp(x, k)) for x in w], math.ldexp(1.0, -k)


def quantized_similarities(
    q: Sequence[float],
    codes: Sequence[Sequence[int]],
    scale: Sequence[float],
    step: Sequence[float] | None = None,
    offset: Sequence[float] | None = None,
) -> list[float]:
    """a_i of int8 codes standing for e_{i,t} ~ s_i * h_t * c_{i,t} + o_t (h = 1, o = 0 if None).

    w_t = q_t * h_t; (Q, u) = ``integer_weights(w)``; S_i = sum_t Q_t * c_{i,t} (an exact
    integer); a_i = (S_i * u) * s_i, plus b = ``dot(q, o)`` when an offset is given.  ``scale``
    holds one value per row, or one for every row.
    """
    w = list(q) if step is None else [qt * ht for qt, ht in zip(q, step)]
    weights, unit = integer_weights(w)
    b = None if offset is None else dot(q, offset)
    out = []
    for i, row in enumerate(codes):
        total = sum(wt * c for wt, c in zip(weights, row))
        a = (float(total) * unit) * scale[i if len(scale) > 1 else 0]
        out.append(a if b is None else a + b)
    return out


def exp_nonpositive(x: float) -> float:
    """exp~(x) for x <= 0: the contract's exponential (``dsgc_ref.contract``, EXP_*), in its order.

    y = max(x, EXP_FLOOR); k = floor(y / ln 2 + 1/2); r = (y - k ln2_hi) - k ln2_lo;
    p = sum_{j=0..13} r^j / j! by Horner's rule; exp~(x) = (p * 2^k1) * 2^(k - k1), k1 = max(k, -1000).
    """
    y = max(x, EXP_FLOOR)
    k = math.floor(y * EXP_INV_LN2 + 0.5)
    kf = float(k)
    r = (y - kf * EXP_LN2_HI) - kf * EXP_LN2_LO
    p = EXP_TAYLOR[-1]
    for c in reversed(EXP_TAYLOR[:-1]):
        p = p * r + c
    k1 = max(k, EXP_SPLIT)
    return (p * math.ldexp(1.0, k1)) * math.ldexp(1.0, k - k1)


def softmax(a: Sequence[float], tau: float, order: Sequence[int] | None = None) -> list[float]:
    """r_i = exp~((a_i - max_k a_k) / tau) / sum_k exp~((a_k - max_k a_k) / tau).

    Max-shifted so no exponent overflows (every exponent is <= 0; ``exp_nonpositive``); the
    denominator is summed over the blocks in ``order`` sequence (default: index order), so it
    does not depend on how the store is laid out.  An empty input gives an empty output.
    """
    if not a:
        return []
    m = max(a)
    ex = [exp_nonpositive((x - m) / tau) for x in a]
    s = 0.0
    for i in range(len(ex)) if order is None else order:
        s += ex[i]
    return [v / s for v in ex]


def normalize_weights(weights: Sequence[float]) -> list[float]:
    """w_k / sum_k w_k, the sum accumulated left to right (weights are >= 0, not all 0).

    The weights are first scaled by the power of two 2**-e that brings the largest into
    [0.5, 1) (``math.frexp``).  That scaling is exact for every weight above 2**-1021 times
    the largest, so wherever the plain sum is finite the quotients are the same bits as
    without it, and where the plain sum would overflow (``[1e308, 1e308]``) the result is
    still the normalized weights (``[0.5, 0.5]``).
    """
    e = math.frexp(max(weights))[1]
    scaled = [math.ldexp(w, -e) for w in weights]
    s = 0.0
    for w in scaled:
        s += w
    return [w / s for w in scaled]


def mixture_relevance(
    a_per_query: Sequence[Sequence[float]], weights: Sequence[float], tau: float, order: Sequence[int] | None = None
) -> list[float]:
    """r_i = sum_k w_k * softmax(a_k / tau)_i over the m queries, k ascending, from 0.0.

    ``weights`` are already normalized.  With one query the result is that query's softmax.
    """
    if len(a_per_query) == 1:
        return softmax(a_per_query[0], tau, order)
    n = len(a_per_query[0])
    r = [0.0] * n
    for a_k, w_k in zip(a_per_query, weights):
        r_k = softmax(a_k, tau, order)
        for i in range(n):
            r[i] += w_k * r_k[i]
    return r


def mixture_similarity(a_per_query: Sequence[Sequence[float]], weights: Sequence[float]) -> list[float]:
    """a_i = sum_k w_k * a_{k,i}, k ascending, from 0.0 (the similarity policy's score).

    With one query the result is that query's similarities.
    """
    if len(a_per_query) == 1:
        return list(a_per_query[0])
    n = len(a_per_query[0])
    a = [0.0] * n
    for a_k, w_k in zip(a_per_query, weights):
        for i in range(n):
            a[i] += w_k * a_k[i]
    return a


def dependents_lists(n: int, edges: Sequence[tuple[int, int]], order: Sequence[int] | None = None) -> list[list[int]]:
    """deps[i] = distinct j != i with (j, i) in E (j depends on i), in ``order`` sequence.

    The edge list is read as a set: duplicate edges count once and self-loops are dropped
    (a block is not its own prerequisite).  Listing the dependents in ``order`` sequence
    (default: ascending index) makes every propagated sum independent of the layout.
    """
    pos = positions(range(n) if order is None else order)
    sets: list[set[int]] = [set() for _ in range(n)]
    for j, i in edges:
        if j != i:
            sets[i].add(j)
    return [sorted(s, key=pos.__getitem__) for s in sets]


def positions(order: Sequence[int]) -> list[int]:
    """pos[i] = the position of block i in ``order``."""
    pos = [0] * len(order)
    for p, i in enumerate(order):
        pos[i] = p
    return pos


def propagate_one_hop(r: Sequence[float], deps: Sequence[Sequence[int]]) -> list[float]:
    """pi_i = sum_{j : (j, i) in E} r_j, over j as listed (``order`` sequence), from 0.0 (the paper's rule)."""
    out = []
    for js in deps:
        s = 0.0
        for j in js:
            s += r[j]
        out.append(s)
    return out


def propagate_k_hop(
    r: Sequence[float], deps: Sequence[Sequence[int]], hops: int, decay: float, order: Sequence[int] | None = None
) -> list[float]:
    """Distance-damped reachability support.

    pi_i = sum_{h=1..k} decay^(h-1) * S_h(i),  S_h(i) = sum_{j in D_h(i)} r_j,

    where D_h(i) is the set of blocks whose shortest dependency path to i has exactly h
    edges (j -> ... -> i following "depends on").  Each downstream block contributes once,
    at its shortest distance, so diamonds are not double counted, cycles terminate (a
    block is visited once) and hubs are bounded: pi_i <= sum_{j != i} r_j <= 1 - r_i.
    S_h is summed over j in ``order`` sequence (default: ascending) from 0.0; pi accumulates
    h = 1..k in order with the weight updated as w <- w * decay.  For k = 1 this is exactly
    ``propagate_one_hop`` over ``dependents_lists(n, E, order)``.
    """
    pos = positions(range(len(deps)) if order is None else order)
    out = []
    for i in range(len(deps)):
        seen = {i}
        frontier = [i]
        w = 1.0
        pi = 0.0
        for _ in range(hops):
            nxt: set[int] = set()
            for u in frontier:
                for j in deps[u]:
                    if j not in seen:
                        nxt.add(j)
            if not nxt:
                break
            level = sorted(nxt, key=pos.__getitem__)
            s = 0.0
            for j in level:
                s += r[j]
            pi += w * s
            w *= decay
            seen.update(level)
            frontier = level
        out.append(pi)
    return out


def density_weight(cost: int, density_exponent: float) -> float:
    """max(cost, 1) ** density_exponent (zero-cost blocks are treated as cost 1)."""
    return float(max(cost, 1)) ** density_exponent


def combine(
    r: Sequence[float], pi: Sequence[float], costs: Sequence[int], lambda_pi: float, density_exponent: float
) -> list[float]:
    """I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent.

    With density_exponent == 0 the division is by exactly 1.0 and is skipped (same bits).
    """
    base = [ri + lambda_pi * pii for ri, pii in zip(r, pi)]
    if density_exponent == 0.0:
        return base
    return [b / density_weight(c, density_exponent) for b, c in zip(base, costs)]


def working_support(ages: Sequence[int], gamma: float, kappa: float) -> list[float]:
    """rho_i = gamma^(u_i - 1) * kappa / N for working age u_i >= 1, else 0.0 (the agent policy).

    N = len(ages) is the number of blocks, so 1/N is the mean relevance (the softmax sums to
    1, and so does a mixture of softmaxes): the newest working unit gets kappa mean
    relevances of support and each older one a factor gamma less.  With lambda_pi = 1 and no
    density weight, a block outranks a working block of age u exactly when its r + pi exceeds
    the working block's by more than kappa * gamma^(u-1) / N, which a block the query asks
    for explicitly can have.  (Scaled by max_k r_k instead, the query's own relevance when
    the query is a block of the store, the working set would outrank every other block.)
    The scale s = kappa / N is one division; the weights follow w_1 = 1.0,
    w_(u+1) = w_u * gamma (one multiplication per unit back), so the bits do not depend on
    how a power is computed; rho_i = w_(u_i) * s.
    """
    if not ages:
        return []
    scale = kappa / len(ages)
    weights = [1.0]
    for _ in range(max(ages) - 1):
        weights.append(weights[-1] * gamma)
    return [weights[u - 1] * scale if u >= 1 else 0.0 for u in ages]


def combine_agent(
    r: Sequence[float],
    pi: Sequence[float],
    rho: Sequence[float],
    costs: Sequence[int],
    lambda_pi: float,
    density_exponent: float,
) -> list[float]:
    """I_i = (r_i + lambda_pi * (pi_i + rho_i)) / max(c_i, 1) ** density_exponent.

    A block without working-set support (rho_i = 0.0) scores exactly as in ``combine``.
    """
    return combine(r, [p + w for p, w in zip(pi, rho)], costs, lambda_pi, density_exponent)


def rank(scores: Sequence[float], order: Sequence[int]) -> list[int]:
    """All indices by descending score; ties keep their position in ``order`` (stable)."""
    pos = positions(order)
    return sorted(range(len(scores)), key=lambda i: (-scores[i], pos[i]))


def recency_scores(order: Sequence[int]) -> list[float]:
    """score_i = position of i in ``order`` (the last block in ``order`` is the newest)."""
    return [float(p) for p in positions(order)]
