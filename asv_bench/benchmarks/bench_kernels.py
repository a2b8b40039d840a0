"""Per-kernel timings over N: scoring, softmax, propagation (one hop, k hops), ranking,
budgeted selection and pin closure, each through the helper ``retain`` itself calls; and
each stage of a large store at 1 and 2 threads (``StageThreads``)."""

from __future__ import annotations

import numba
import numpy as np

import dsgc_fast
from dsgc_bench.synthetic import make_referents
from dsgc_fast.kernels import checks
from dsgc_fast.kernels import selection as selection_kernels
from dsgc_fast.kernels.scoring import WEIGHTED
from dsgc_fast.pins import closure
from dsgc_fast.stages import (
    REASON_CODES,
    SELECTION_CODES,
    check_finite,
    mixture,
    pick,
    propagate,
    row_parts,
    similarity_rows,
    weighted_one_hop,
)
from dsgc_ref.contract import Reason

from .common import SIZES, skip_above, store


class _Scored:
    """Setup shared by the kernel benchmarks: validated arrays and every intermediate."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        s = store(n)
        self.n = n
        self.queries = s.query[None, :].astype(np.float64)
        self.embs = s.embs
        self.costs = s.costs
        self.budget = s.budget
        self.graph = dsgc_fast.DependencyGraph.from_edges(n, s.edges)
        self.weights = np.ones(1)
        self.a = similarity_rows(self.queries, self.embs)
        self.r = mixture(self.a, self.weights, 0.25)
        self.pi = propagate(self.graph, self.r, 1, 0.5)
        self.scores = self.r + self.pi
        self.order = np.arange(n, dtype=np.int64)
        self.ranking = selection_kernels.rank(self.scores, self.order)
        self.kept = np.empty(self.n, dtype=np.int8)
        selection_kernels.rule_kept(WEIGHTED, self.r, self.pi, self.pi, 1.0, REASON_CODES, self.kept)


class Scoring(_Scored):
    def time_similarity(self, n):
        similarity_rows(self.queries, self.embs)


class Softmax(_Scored):
    def time_softmax(self, n):
        mixture(self.a, self.weights, 0.25)


class Propagation(_Scored):
    def time_one_hop(self, n):
        propagate(self.graph, self.r, 1, 0.5)

    def time_three_hops(self, n):
        propagate(self.graph, self.r, 3, 0.5)

    def time_one_hop_scores(self, n):
        """The fused pass ``retain`` runs for dsgc: support, scores and kept-reason codes."""
        weighted_one_hop(self.r, self.graph, self.costs, 1.0, 0.0)


class GraphBuild(_Scored):
    def time_from_edges(self, n):
        dsgc_fast.DependencyGraph.from_edges(n, store(n).edges)


class Selection(_Scored):
    def time_rank(self, n):
        selection_kernels.rank(self.scores, self.order)

    def time_select_budgeted(self, n):
        """The walk ``retain`` uses: no full ranking."""
        selection_kernels.select_budgeted(
            self.scores,
            None,
            self.costs,
            self.budget,
            SELECTION_CODES["first_fit"],
            self.kept,
            np.int8(Reason.SKIPPED_NO_FIT),
            np.int8(Reason.EVICTED_CUTOFF),
            row_parts(self.n),
            np.zeros(self.n, dtype=np.bool_),
            np.empty(self.n, dtype=np.int8),
        )

    def time_select_first_fit(self, n):
        mask = np.zeros(self.n, dtype=np.bool_)
        reasons = np.empty(self.n, dtype=np.int8)
        selection_kernels.select(
            self.ranking,
            self.costs,
            self.budget,
            SELECTION_CODES["first_fit"],
            self.kept,
            np.int8(Reason.SKIPPED_NO_FIT),
            np.int8(Reason.EVICTED_CUTOFF),
            mask,
            reasons,
        )


class PinClosure:
    """Closure of the 8 newest blocks over n blocks with 4n use links (a random DAG)."""

    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        skip_above(n)
        r = make_referents(n, 4.0, seed=0)
        self.roots = r.roots
        self.index = dsgc_fast.ReferentIndex.from_arrays(n, r.use_indptr, r.use_ids, r.bind_blocks, r.bind_ids)
        closure(self.index, self.roots)

    def time_pin_closure(self, n):
        closure(self.index, self.roots)


class StageThreads(_Scored):
    """Each stage ``retain`` runs on a large store at 1 and 2 Numba threads (the per-stage
    thread scaling of ``tools/thread_scaling.py``); a thread count above ``NUMBA_NUM_THREADS``
    is skipped."""

    params = [[50_000, 1_000_000], [1, 2]]
    param_names = ["n", "threads"]

    def setup(self, n, threads):
        if threads > numba.config.NUMBA_NUM_THREADS:
            raise NotImplementedError(f"{threads} threads: NUMBA_NUM_THREADS is {numba.config.NUMBA_NUM_THREADS}")
        super().setup(n)
        self.before = numba.get_num_threads()
        numba.set_num_threads(threads)
        self.support, self.one_hop_scores, self.one_hop_kept = weighted_one_hop(
            self.r, self.graph, self.costs, 1.0, 0.0
        )
        self.mask = np.zeros(n, dtype=np.bool_)
        self.mask[::20] = True

    def teardown(self, n, threads):
        numba.set_num_threads(self.before)

    def time_input_checks(self, n, threads):
        """The value checks of the costs and the similarities (``checks.cost_bounds``, ``check_finite``)."""
        pick(n, checks.cost_bounds, checks.cost_bounds_par)(self.costs, row_parts(n))
        check_finite(self.a, self.embs)

    def time_similarity(self, n, threads):
        similarity_rows(self.queries, self.embs)

    def time_softmax(self, n, threads):
        mixture(self.a, self.weights, 0.25)

    def time_one_hop_scores(self, n, threads):
        weighted_one_hop(self.r, self.graph, self.costs, 1.0, 0.0)

    def time_select_budgeted(self, n, threads):
        selection_kernels.select_budgeted(
            self.one_hop_scores, None, self.costs, self.budget, SELECTION_CODES["first_fit"], self.one_hop_kept,
            np.int8(Reason.SKIPPED_NO_FIT), np.int8(Reason.EVICTED_CUTOFF), row_parts(n),
            np.zeros(n, dtype=np.bool_), np.empty(n, dtype=np.int8),
        )  # fmt: skip

    def time_retained_indices(self, n, threads):
        """The kept indices from the mask (the result's ``retained``)."""
        selection_kernels.retained_par(self.mask, row_parts(n))

    def time_retain(self, n, threads):
        dsgc_fast.retain(self.queries[0], self.embs, self.costs, self.budget, edges=self.graph)
