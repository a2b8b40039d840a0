"""The scoring stages of ``retain``, in order: similarity, relevance, support, scores, reasons.

Each stage is one function over validated arrays that picks its kernel (serial, parallel,
exact or fast) and returns plain arrays; ``score`` runs the list.  ``kernels.pipeline`` is
the same list fused into one nopython call for small stores, over the same serial kernels
(``rule_scores`` and ``rule_kept`` are shared by both), so either way gives the same bits.
The equations are those of ``dsgc_ref.equations``:

    a_i  = <q, e_i>                         (left to right over the dimension, float64)
    r    = sum_k w_k softmax(a_k / tau)     (one query: softmax(a / tau))
    pi_i = sum_{h=1..k} decay^(h-1) sum_{j in D_h(i)} r_j   (k = 1: the paper's one hop)
    rho_i = gamma^(u_i - 1) kappa / N      (the agent policy's working-set support, age u_i >= 1)
    I_i  = per policy: a_i, (r_i + lambda_pi pi_i) / max(c_i, 1)^p, the position in order, or
           (r_i + lambda_pi (pi_i + rho_i)) / max(c_i, 1)^p
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from dsgc_ref.contract import DsgcValueError, Params, Reason

from ._deferred import deferred
from .embeddings import QuantizedEmbeddings, TiledEmbeddings
from .graph import DependencyGraph

numba = deferred("numba")
_config = deferred("dsgc_fast._config")
checks = deferred("dsgc_fast.kernels.checks")
propagation = deferred("dsgc_fast.kernels.propagation")
quantized = deferred("dsgc_fast.kernels.quantized")
scoring = deferred("dsgc_fast.kernels.scoring")
selection_kernels = deferred("dsgc_fast.kernels.selection")

Floats = npt.NDArray[np.float64]
#: what ``similarity_rows`` scores: a plain (N, d) float16/float32/float64 array or a layout
Embeddings = np.ndarray | TiledEmbeddings | QuantizedEmbeddings

#: int8 reason codes the kernels write: kept by support, by relevance, by recency; skipped; cut
#: off; kept by working-set support
REASON_CODES = np.array(
    [
        Reason.KEPT_PROPAGATION,
        Reason.KEPT_RELEVANCE,
        Reason.KEPT_RECENCY,
        Reason.SKIPPED_NO_FIT,
        Reason.EVICTED_CUTOFF,
        Reason.KEPT_WORKING,
    ],
    dtype=np.int8,
)

#: ``Params.selection`` -> the code the walk kernels read (``kernels.selection.stops``): the
#: registry line of a selection rule, one per name of ``dsgc_ref.contract.SELECTIONS``
SELECTION_CODES: dict[str, int] = {"first_fit": 0, "prefix": 1}

#: ``retain(mode=...)``: "exact" (bit-identical to dsgc_ref) or "fast" (fast-math dot products)
MODES = ("exact", "fast")


def score_rule(policy: str, working: bool = False) -> int:
    """The ``kernels.scoring`` score rule of a policy.

    dsgc and no_graph are WEIGHTED; agent is AGENT with working ages (``working``), else
    WEIGHTED (without them it ranks exactly as dsgc).
    """
    if policy == "agent" and working:
        return scoring.AGENT
    return {"similarity": scoring.SIMILARITY, "recency": scoring.RECENCY}.get(policy, scoring.WEIGHTED)


#: what ``kernel_knobs`` gives: tau, lambda_pi (the effective one), density_exponent, hops, decay, score rule,
#: selection code
Knobs = tuple[float, float, float, int, float, int, int]
#: what ``small_knobs`` gives: the float64 knob vector of ``kernels.pipeline.retain_small`` and hops
SmallKnobs = tuple[npt.NDArray[np.float64], int]
#: the knobs of the Params objects seen, by id: (the Params, ``kernel_knobs``, ``small_knobs`` for the
#: exact and the fast mode); each entry holds its Params, so the id stays its own
_KNOBS: dict[int, tuple[Params, Knobs, tuple[SmallKnobs, SmallKnobs]]] = {}
#: entries kept before ``_KNOBS`` starts over (entry points reuse a few Params objects: ``Params.of``)
_KNOBS_LIMIT = 64


def _knobs_entry(p: Params) -> tuple[Params, Knobs, tuple[SmallKnobs, SmallKnobs]]:
    """The ``_KNOBS`` entry of ``p``, made at its first use (a ``Params`` is immutable)."""
    entry = _KNOBS.get(id(p))
    if entry is not None and entry[0] is p:
        return entry
    return _new_knobs_entry(p)


def _new_knobs_entry(p: Params) -> tuple[Params, Knobs, tuple[SmallKnobs, SmallKnobs]]:
    """Make and keep the ``_KNOBS`` entry of ``p``."""
    tau, lam, density, hops, decay, rule, selection = knobs = (
        p.tau, p.effective_lambda, p.density_exponent, p.hops, p.decay, score_rule(p.policy),
        SELECTION_CODES[p.selection],
    )  # fmt: skip
    small = []
    for fast in (0, 1):
        vector = np.array([tau, lam, density, decay, rule, selection, fast], dtype=np.float64)
        vector.flags.writeable = False
        small.append((vector, hops))
    if len(_KNOBS) >= _KNOBS_LIMIT:
        _KNOBS.clear()
    entry = _KNOBS[id(p)] = (p, knobs, (small[0], small[1]))
    return entry


def kernel_knobs(p: Params) -> Knobs:
    """The knobs of ``p`` in the order the fused kernels (``kernels.batch``) take them.

    ``(tau, lambda_pi, density_exponent, hops, decay, rule, selection)``, with lambda_pi as
    the score uses it (``Params.effective_lambda``), rule = ``score_rule(p.policy)`` and
    selection = ``SELECTION_CODES[p.selection]``.  A ``Params`` is immutable, so each
    object's tuple is made once and looked up by identity afterwards.
    """
    return _knobs_entry(p)[1]


def small_knobs(p: Params, mode: str) -> SmallKnobs:
    """The knobs of ``p`` and ``mode`` as ``kernels.pipeline.retain_small`` takes them: ``(knobs, hops)``.

    ``knobs`` is a read-only float64 vector (tau, lambda_pi, density_exponent, decay, rule,
    selection, fast) of the values of ``kernel_knobs`` (the rule and the selection code are
    small integers, and fast is 1 for ``mode="fast"``, else 0: exact in float64): one array
    argument where seven scalars cost the kernel's dispatcher more.  Made once per ``Params``.
    """
    entry = _KNOBS.get(id(p))  # ``_knobs_entry`` inline: this runs once per small call
    if entry is None or entry[0] is not p:
        entry = _new_knobs_entry(p)
    return entry[2][mode == "fast"]


def check_mode(mode: object) -> str:
    """``mode`` must be one of ``MODES``."""
    if not isinstance(mode, str) or mode not in MODES:
        raise DsgcValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def pick(n: int, serial, parallel):
    """The parallel twin of a kernel where ``_config.parallel(n)`` says so, else the serial one."""
    return parallel if _config.parallel(n) else serial


def row_parts(n: int) -> int:
    """Row ranges for the one-hop kernels and the walk's first pass: ``PARTS`` on threads, else 1."""
    return pick(n, 1, propagation.PARTS)


class Scored(NamedTuple):
    """Every block's score parts and the reason it gets if the ranking admits it."""

    similarity: Floats
    relevance: Floats
    support: Floats
    working: Floats
    scores: Floats
    keep_reason: npt.NDArray[np.int8]


_FLOAT16 = np.dtype(np.float16)


def kernel_array(embs: np.ndarray) -> np.ndarray:
    """The array the scoring kernels read: float16 as its bits (uint16), others unchanged."""
    return embs.view(np.uint16) if embs.dtype == _FLOAT16 else embs


def similarity_rows(queries: Floats, embs: Embeddings, mode: str = "exact") -> Floats:
    """(m, N) float64 matrix a_{k,i} = <q_k, e_i>; raises if any entry is not finite.

    Plain arrays and ``TiledEmbeddings``: ``mode="exact"`` sums each dot product left to
    right (``scoring.similarity``, ``scoring.similarity_tiles``), ``"fast"`` lets a plain
    array's sum reassociate (tiles are exact in both modes: they already stream at memory
    speed).  ``QuantizedEmbeddings``: the exact integer equation of its docstring, in both modes.
    """
    m, n = queries.shape[0], embs.shape[0]
    par = _config.parallel(n)
    a = np.empty((m, n), dtype=np.float64)
    # threads take row chunks as they go: one delayed thread does not hold the rest
    with numba.parallel_chunksize(1) if par else contextlib.nullcontext():
        if isinstance(embs, QuantizedEmbeddings):
            kernel = quantized.code_similarity_par if par else quantized.code_similarity
            for k in range(m):
                weights, unit, offset = embs.query_form(queries[k])
                kernel(embs.codes, weights, unit, embs.scale, offset, a[k])
        elif isinstance(embs, TiledEmbeddings):
            kernel = scoring.similarity_tiles_par if par else scoring.similarity_tiles
            for k in range(m):
                kernel(kernel_array(embs.tiles), queries[k], n, a[k])
        else:
            if mode == "fast":
                kernel = scoring.similarity_fast_par if par else scoring.similarity_fast
            else:
                kernel = scoring.similarity_par if par else scoring.similarity
            for k in range(m):
                kernel(kernel_array(embs), queries[k], a[k])
    check_finite(a, embs)
    return a


def check_finite(a: Floats, embs: Embeddings) -> None:
    """Raise ValueError unless every similarity in ``a`` ((N,) or (m, N)) is finite."""
    if not a.size:
        return
    n = embs.shape[0]
    rows = a.reshape(-1, n)
    if checks.all_finite_par(rows, row_parts(n)) if _config.parallel(n) else checks.all_finite(rows):
        return
    row = int(np.flatnonzero(~np.isfinite(rows).all(axis=0))[0])
    if not isinstance(embs, QuantizedEmbeddings):  # int8 codes are always finite
        values = embs.row(row) if isinstance(embs, TiledEmbeddings) else embs[row]
        if not np.isfinite(values).all():
            raise DsgcValueError(f"block_embs contains NaN or inf (row {row})")
    raise DsgcValueError("query_emb . block_embs overflows float64; rescale the embeddings")


def mixture(a: Floats, weights: Floats, tau: float | None) -> Floats:
    """sum_k w_k * f(a_k) with f = softmax(. / tau), or the identity when tau is None.

    With one query the result is f(a_0) itself (as in ``dsgc_ref.equations``).
    """
    m, n = a.shape
    softmax = pick(n, scoring.softmax, scoring.softmax_par)
    if m == 1:
        if tau is None:
            return a[0]
        out = np.empty(n, dtype=np.float64)
        softmax(a[0], tau, out)
        return out
    acc = np.zeros(n, dtype=np.float64)
    tmp = np.empty(n, dtype=np.float64)
    for k in range(m):
        if tau is None:
            scoring.accumulate(acc, weights[k], a[k])
        else:
            softmax(a[k], tau, tmp)
            scoring.accumulate(acc, weights[k], tmp)
    return acc


def propagate(graph: DependencyGraph, r: Floats, hops: int, decay: float) -> Floats:
    """pi by the one-hop rule (hops = 1) or distance-damped k-hop reachability."""
    n = r.shape[0]
    out = np.empty(n, dtype=np.float64)
    if hops == 1:
        kernel = pick(n, propagation.one_hop, propagation.one_hop_par)
        kernel(graph.dep_indptr, graph.dep_cols, graph.dep_rows, r, row_parts(n), out)
    else:
        par = _config.parallel(n)
        kernel = propagation.k_hop_par if par else propagation.k_hop
        n_chunks = max(1, min(n, numba.get_num_threads())) if par else 1
        kernel(graph.dep_indptr, graph.dep_indices, r, hops, decay, n_chunks, out)
    return out


def relevance_and_support(
    a: Floats, weights: Floats, params: Params, graph: DependencyGraph, seq: npt.NDArray[np.int64] | None
) -> tuple[Floats, Floats]:
    """r and pi with every sum over blocks taken in ``seq`` order (as ``dsgc_ref`` does).

    With an explicit order ``seq`` the (m, N) similarities are laid out in that sequence (an
    N-length gather, never the N x d matrix) and the graph relabelled by position, so the
    softmax denominator and each propagated sum add their terms in the same sequence for any
    permutation of the store: permuting the blocks and ``order`` alike permutes the result
    bit for bit.  With ``seq`` None the input order is the sequence and nothing is relabelled.
    """
    if seq is None:
        relevance = mixture(a, weights, params.tau)
        return relevance, propagate(graph, relevance, params.hops, params.decay)
    n = seq.shape[0]
    pos = np.empty(n, dtype=np.int64)
    pos[seq] = np.arange(n, dtype=np.int64)
    relevance_seq = mixture(np.ascontiguousarray(a[:, seq]), weights, params.tau)
    edges = graph.edge_array()
    graph_seq = DependencyGraph.from_edges(n, pos[edges]) if edges.size else graph
    support_seq = propagate(graph_seq, relevance_seq, params.hops, params.decay)
    return relevance_seq[pos], support_seq[pos]


def weighted_one_hop(
    relevance: Floats, graph: DependencyGraph, cost: npt.NDArray[np.int64], lambda_pi: float, density_exponent: float
) -> tuple[Floats, Floats, npt.NDArray[np.int8]]:
    """(pi, I, kept-reason codes) of a weighted policy with hops = 1, in one fused pass.

    The same bits as ``propagate``, ``rule_scores`` and ``rule_kept`` in sequence.
    """
    n = relevance.shape[0]
    support, scores = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64)
    kept = np.empty(n, dtype=np.int8)
    codes = REASON_CODES[0], REASON_CODES[1]
    pick(n, propagation.one_hop_scores, propagation.one_hop_scores_par)(
        graph.dep_indptr, graph.dep_cols, graph.dep_rows, relevance, cost, lambda_pi, density_exponent, *codes,
        row_parts(n), support, scores, kept,
    )  # fmt: skip
    return support, scores, kept


def score(
    queries: Floats,
    embs: Embeddings,
    cost: npt.NDArray[np.int64],
    graph: DependencyGraph,
    weights: Floats,
    seq: npt.NDArray[np.int64] | None,
    params: Params,
    mode: str,
    ages: npt.NDArray[np.int64] | None = None,
) -> Scored:
    """Run the stages over a non-empty store: similarity, relevance, support, scores, reasons.

    ``ages`` (the agent policy's working ages) add the working-set support rho.
    """
    n = embs.shape[0]
    a = similarity_rows(queries, embs, mode)
    similarity = mixture(a, weights, None)
    lam = params.effective_lambda
    rule = score_rule(params.policy, ages is not None)
    if seq is None and params.hops == 1 and rule == scoring.WEIGHTED:
        relevance = mixture(a, weights, params.tau)
        support, scores, keep_reason = weighted_one_hop(relevance, graph, cost, lam, params.density_exponent)
        return Scored(similarity, relevance, support, np.zeros(n), scores, keep_reason)
    relevance, support = relevance_and_support(a, weights, params, graph, seq)
    working = np.zeros(n)
    if rule == scoring.AGENT:
        scoring.working_support(ages, params.recency_decay, params.working_weight, working)
    scores = np.empty(n, dtype=np.float64)
    scoring.rule_scores(rule, similarity, relevance, support, working, cost, lam, params.density_exponent, seq, scores)
    keep_reason = np.empty(n, dtype=np.int8)
    selection_kernels.rule_kept(rule, relevance, support, working, lam, REASON_CODES, keep_reason)
    return Scored(similarity, relevance, support, working, scores, keep_reason)
