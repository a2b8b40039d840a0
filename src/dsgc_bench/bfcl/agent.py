"""Prototype agent policies, in NumPy on top of the harness (not the engine).

Each candidate is one ``AgentPolicy`` (a frozen parameter set).  On a point with block
embeddings ``e_i`` (the query is block ``q = n - 1``), turn ``T`` of the query and turn
``t_i`` of block i:

    a_i = <e_q, e_i>,  r = softmax(a / tau)                      (over every block, query included)
    pi_i = sum_{(j, i) in E} w_ji r_j                            (one hop)
    s_i = r_i + lambda * pi_i + beta * g(age_i)                  (block score; age >= 1 in the history)
    S_u = agg_{i in u} s_i / cost_u ** delta                     (unit score; agg = max or sum)

Edges ``E`` (weight 1 unless said): each tool result -> its call (what ``add_messages``
adds); with ``trace=True`` also ``trace_edges``' step -> result edges; with
``query_turns = h > 0`` *query -> history* edges from the query to every block of turns
at ages ``1 .. h``, weight ``query_decay ** (age_i - 1)``, where ``age_i`` counts turns
back (``age="turn"``: ``T - t_i``) or units back (``age="unit"``: 1 for the newest history
unit); such an edge carries the query's relevance ``r_q`` (``query_scale="query"``), the
largest relevance of a history block, ``max_{k < q} r_k`` (``"history"``: a lifted unit
outranks the most relevant old block only by its own relevance), ``kappa`` mean relevances
``kappa / n`` (``"mean"``: the engine's agent policy) or ``kappa`` median relevances
(``"median"``: the lower median of ``r``), with ``kappa = working_weight``.  Gates: with
``gate_z = z > 0`` the query edges are dropped when the best history match stands ``z``
standard deviations above the mean similarity of the history (an explicit query relies on
relevance alone); with ``outlier_z = z > 0`` every history block that is neither a call nor
a result and whose similarity stands ``z`` standard deviations above the mean over all
blocks gets a query edge of weight 1 (lifted like the newest unit).  With
``working_share = w > 0`` only the newest tool units that fit, newest first and first fit,
in ``w`` times the room left after the query receive query edges (a working set capped in
tokens).  ``g`` is ``"exp"``:
``2 ** -(age - 1)`` or ``"inv"``: ``1 / age``.

Selection: the query's unit is kept first.  With ``window = w > 0`` the newest units are
then kept, newest first, while they fit in ``w`` times the room left (a reserved working
window; a unit that does not fit ends the window).  The other units follow in descending
``S_u`` (ties: the newer unit first), each kept if it still fits (first fit).  Units are
whole, so no tool pair is ever broken.

``AgentPolicy()`` with defaults ranks like the store's default path (one hop over the
result -> call edges, a unit admitted at its best member's rank); ``ties="older"`` makes
the tie order the engine's (input order).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .points import Point
from .policies import Embeddings, Selection


@dataclass(frozen=True)
class AgentPolicy:
    """One candidate (module docstring for the symbols)."""

    tau: float = 0.25
    lam: float = 1.0
    trace: bool = False
    query_turns: int = 0
    query_decay: float = 0.5
    beta: float = 0.0
    g: str = "exp"
    agg: str = "max"
    delta: float = 0.0
    window: float = 0.0
    ties: str = "newer"
    age: str = "turn"
    query_targets: str = "all"
    query_scale: str = "query"
    working_share: float = 0.0
    working_weight: float = 1.0
    gate_z: float = 0.0
    outlier_z: float = 0.0

    def with_(self, **changes: object) -> AgentPolicy:
        return replace(self, **changes)

    def __call__(self, point: Point, emb: Embeddings, budget: int) -> Selection:
        return select(self, point, emb.blocks(point), budget)


def softmax(a: np.ndarray, tau: float) -> np.ndarray:
    z = (a - a.max()) / tau
    w = np.exp(z)
    return w / w.sum()


def ages(policy: AgentPolicy, point: Point) -> np.ndarray:
    """Age of every block: turns back from the query (``age="turn"``) or units back
    (``age="unit"``: 1 for the newest history unit); the query's own unit has age 0."""
    if policy.age == "turn":
        return point.turns[point.query] - np.asarray(point.turns, dtype=np.float64)
    unit_of = point.unit_of()
    return (unit_of[point.query] - unit_of).astype(np.float64)


def edges(
    policy: AgentPolicy, point: Point, emb: np.ndarray, targets: set[int] | None = None
) -> list[tuple[int, int, float]]:
    """Weighted ``(dependent, prerequisite, weight)`` edges of a point with block embeddings
    ``emb`` (module rule); query edges only to ``targets`` when given."""
    out: dict[tuple[int, int], float] = {}
    call_at: dict[str, int] = {}
    for i, message in enumerate(point.messages):
        for call in message.get("tool_calls") or ():
            call_at[call["id"]] = i
        if message.get("role") == "tool" and message.get("tool_call_id") in call_at:
            out[(i, call_at[message["tool_call_id"]])] = 1.0
    if policy.trace:
        from dsgc_fast.induction import trace_edges

        for j, i in trace_edges(list(point.messages)).tolist():
            out.setdefault((j, i), 1.0)
    if policy.query_turns > 0 and not gated(policy, point, emb):
        age = ages(policy, point)
        for i in range(point.query):
            if policy.query_targets == "tools" and point.kinds[i] not in ("call", "result"):
                continue
            if targets is not None and i not in targets:
                continue
            if 1 <= age[i] <= policy.query_turns:
                out[(point.query, i)] = policy.query_decay ** (age[i] - 1)
    if policy.outlier_z > 0:
        a = emb @ emb[point.query]
        z = (a - a.mean()) / a.std() if a.std() > 0 else np.zeros(point.n)
        for i in range(point.query):
            if point.kinds[i] not in ("call", "result") and z[i] >= policy.outlier_z:
                out[(point.query, i)] = 1.0
    return [(j, i, w) for (j, i), w in sorted(out.items())]


def gated(policy: AgentPolicy, point: Point, emb: np.ndarray) -> bool:
    """True when ``gate_z`` drops the query edges: the best history match's z-score is >= it."""
    if policy.gate_z <= 0 or point.query < 2:
        return False
    a = emb[: point.query] @ emb[point.query]
    return a.std() > 0 and (a.max() - a.mean()) / a.std() >= policy.gate_z


def query_carry(policy: AgentPolicy, r: np.ndarray, query: int) -> float:
    """What a query edge carries (``query_scale``, module docstring)."""
    if policy.query_scale == "history" and query > 0:
        return float(r[:query].max())
    if policy.query_scale == "mean":
        return policy.working_weight / r.shape[0]
    if policy.query_scale == "median":
        return policy.working_weight * float(np.sort(r)[(r.shape[0] - 1) // 2])
    return float(r[query])


def working_set(policy: AgentPolicy, point: Point, room: int) -> set[int] | None:
    """Blocks of the newest tool units fitting in ``working_share * room`` (None: no cap)."""
    if policy.working_share <= 0:
        return None
    left, out = int(policy.working_share * room), set()
    for unit in reversed(point.units):
        if point.query in unit or not any(point.kinds[i] in ("call", "result") for i in unit):
            continue
        cost = int(point.costs[list(unit)].sum())
        if cost <= left:
            out.update(unit)
            left -= cost
    return out


def block_scores(policy: AgentPolicy, point: Point, embs: np.ndarray, targets: set[int] | None = None) -> np.ndarray:
    """``s_i`` of every block (module docstring); query edges only to ``targets`` when given."""
    r = softmax(embs @ embs[point.query], policy.tau)
    carried = r.copy()
    carried[point.query] = query_carry(policy, r, point.query)
    pi = np.zeros(point.n)
    for j, i, w in edges(policy, point, embs, targets):
        pi[i] += w * carried[j]
    s = r + policy.lam * pi
    if policy.beta:
        age = np.maximum(ages(policy, point), 1.0)
        prior = 2.0 ** -(age - 1.0) if policy.g == "exp" else 1.0 / age
        s = s + policy.beta * prior
    return s


def select(policy: AgentPolicy, point: Point, embs: np.ndarray, budget: int) -> Selection:
    """The candidate's kept blocks (module docstring)."""
    room = budget - int(point.costs[point.query])
    s = block_scores(policy, point, embs, working_set(policy, point, room))
    units = [list(u) for u in point.units]
    cost = np.array([int(point.costs[u].sum()) for u in units], dtype=np.int64)
    agg = np.array([(s[u].max() if policy.agg == "max" else s[u].sum()) for u in units])
    score = agg / np.maximum(cost, 1) ** policy.delta if policy.delta else agg
    query_unit = next(k for k, u in enumerate(units) if point.query in u)
    room = budget - int(cost[query_unit])
    if room < 0:
        return Selection(np.array([point.query], dtype=np.int64), over_budget=True)
    kept = {query_unit}
    if policy.window > 0:
        reserve = int(policy.window * room)
        for k in range(len(units) - 1, -1, -1):
            if k in kept:
                continue
            if cost[k] > reserve:
                break
            kept.add(k)
            reserve -= int(cost[k])
            room -= int(cost[k])
    order = np.arange(len(units))
    tie = -order if policy.ties == "newer" else order
    for k in np.lexsort((tie, -score)).tolist():
        if k not in kept and cost[k] <= room:
            kept.add(k)
            room -= int(cost[k])
    return Selection(np.array(sorted(i for k in kept for i in units[k]), dtype=np.int64))


#: the candidates measured (names used in the tables)
BASE = AgentPolicy()
UNIT = BASE.with_(age="unit")
TOOLS = UNIT.with_(query_turns=1000, query_decay=0.85, query_targets="tools")
#: the previous agent policy: query -> tool-unit edges (decay 0.85 per unit back) carrying
#: the query's own relevance, the engine's tie order
PREVIOUS = TOOLS.with_(ties="older")
PREVIOUS_NAME = "(P) query->tool units d=0.85 carrying r_q, older ties (the previous default)"
#: the recommendation, the engine's agent policy: the same edges carrying kappa = 8 mean
#: relevances (kappa / n) instead of the query's own relevance
RECOMMENDED = PREVIOUS.with_(query_scale="mean", working_weight=8.0)
RECOMMENDED_NAME = "(R) query->tool units d=0.85 carrying 8/n (8 mean relevances), older ties"
CANDIDATES: dict[str, AgentPolicy] = {
    "unit-max (store-like)": BASE.with_(ties="older"),
    "unit-max, newer ties": BASE,
    "(a) prior exp b=0.01": BASE.with_(beta=0.01),
    "(a) prior exp b=0.03": BASE.with_(beta=0.03),
    "(a) prior exp b=0.1": BASE.with_(beta=0.1),
    "(a) prior exp b=0.3": BASE.with_(beta=0.3),
    "(a) prior inv b=0.03": BASE.with_(beta=0.03, g="inv"),
    "(a) prior inv b=0.1": BASE.with_(beta=0.1, g="inv"),
    "(b) window 0.25": BASE.with_(window=0.25),
    "(b) window 0.5": BASE.with_(window=0.5),
    "(b) window 0.75": BASE.with_(window=0.75),
    "(c) unit sum": BASE.with_(agg="sum"),
    "(c) unit max, density 0.5": BASE.with_(delta=0.5),
    "(c) unit sum, density 0.5": BASE.with_(agg="sum", delta=0.5),
    "(c) unit sum, density 1": BASE.with_(agg="sum", delta=1.0),
    "(d) query->prev turn": BASE.with_(query_turns=1),
    "(d) query->2 turns (0.5)": BASE.with_(query_turns=2),
    "(d) query->all turns (0.5)": BASE.with_(query_turns=1000),
    "(d)+trace edges": BASE.with_(query_turns=1, trace=True),
    "(e) (d)+(c) sum": BASE.with_(query_turns=1, agg="sum"),
    "(e) (d)+(c) sum, density 0.5": BASE.with_(query_turns=1, agg="sum", delta=0.5),
    "(e) (d)+(c) max, density 0.5": BASE.with_(query_turns=1, delta=0.5),
    "(e) (d)+(a) exp b=0.03": BASE.with_(query_turns=1, beta=0.03),
    "(e) (d)2+(c) sum, density 0.5": BASE.with_(query_turns=2, agg="sum", delta=0.5),
    "(e) (b) 0.5+(d)": BASE.with_(window=0.5, query_turns=1),
    "(a) unit prior exp b=0.1": UNIT.with_(beta=0.1),
    "(a) unit prior exp b=0.3": UNIT.with_(beta=0.3),
    "(a) unit prior inv b=0.1": UNIT.with_(beta=0.1, g="inv"),
    "(a) unit prior inv b=0.3": UNIT.with_(beta=0.3, g="inv"),
    "(d) query->units d=0.5": UNIT.with_(query_turns=1000, query_decay=0.5),
    "(d) query->units d=0.7": UNIT.with_(query_turns=1000, query_decay=0.7),
    "(d) query->units d=0.85": UNIT.with_(query_turns=1000, query_decay=0.85),
    "(e) query->units d=0.7 + sum": UNIT.with_(query_turns=1000, query_decay=0.7, agg="sum"),
    "(e) query->units d=0.85 + sum": UNIT.with_(query_turns=1000, query_decay=0.85, agg="sum"),
    "(e) query->units d=0.7, dens 0.5": UNIT.with_(query_turns=1000, query_decay=0.7, delta=0.5),
    "(d) query->tool units d=0.85": TOOLS,
    "(e) query->tool units d=0.85 + sum": TOOLS.with_(agg="sum"),
    "(e) query->tool units d=0.85 + sum, older ties": TOOLS.with_(agg="sum", ties="older"),
    "(e) query->tool units d=0.5, older ties": TOOLS.with_(query_decay=0.5, ties="older"),
    "(e) query->tool units d=0.7 + sum": TOOLS.with_(agg="sum", query_decay=0.7),
    "(e) query->tool units d=0.5 + sum": TOOLS.with_(agg="sum", query_decay=0.5),
    "(e) query->tool units d=0.95 + sum": TOOLS.with_(agg="sum", query_decay=0.95),
    "(e) query->tool units of prev turn + sum": BASE.with_(query_turns=1, query_targets="tools", agg="sum"),
    PREVIOUS_NAME: PREVIOUS,
    "(S) (P) scaled by the top history relevance": PREVIOUS.with_(query_scale="history"),
    "(S) (P) d=0.7 scaled by the top history relevance": PREVIOUS.with_(query_scale="history", query_decay=0.7),
    "(S) (P) d=0.95 scaled by the top history relevance": PREVIOUS.with_(query_scale="history", query_decay=0.95),
    "(W) (P), working set capped at 1/4 of the budget": PREVIOUS.with_(working_share=0.25),
    "(W) (P), working set capped at 1/2 of the budget": PREVIOUS.with_(working_share=0.5),
    "(W) (P), working set capped at 3/4 of the budget": PREVIOUS.with_(working_share=0.75),
    "(Z) (P) off when the best history match has z >= 2.5": PREVIOUS.with_(gate_z=2.5),
    "(Z) (P) off when the best history match has z >= 3": PREVIOUS.with_(gate_z=3.0),
    "(Z) (P) off when the best history match has z >= 3.5": PREVIOUS.with_(gate_z=3.5),
    "(O) (P) + outliers z >= 3 lifted like the newest unit": PREVIOUS.with_(outlier_z=3.0),
    "(Q) (P) carrying 8 median relevances": PREVIOUS.with_(query_scale="median", working_weight=8.0),
    "(Q) (P) carrying 16 median relevances": PREVIOUS.with_(query_scale="median", working_weight=16.0),
    "(M) (P) carrying 2/n": PREVIOUS.with_(query_scale="mean", working_weight=2.0),
    "(M) (P) carrying 4/n": PREVIOUS.with_(query_scale="mean", working_weight=4.0),
    "(M) (P) carrying 5/n": PREVIOUS.with_(query_scale="mean", working_weight=5.0),
    "(M) (P) carrying 12/n": PREVIOUS.with_(query_scale="mean", working_weight=12.0),
    "(M) (P) carrying 32/n": PREVIOUS.with_(query_scale="mean", working_weight=32.0),
    "(M) (R) d=0.7": RECOMMENDED.with_(query_decay=0.7),
    "(M) (R) d=0.95": RECOMMENDED.with_(query_decay=0.95),
    "(O) (R) + outliers z >= 3 lifted like the newest unit": RECOMMENDED.with_(outlier_z=3.0),
    RECOMMENDED_NAME: RECOMMENDED,
}
