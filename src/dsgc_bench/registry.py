"""Every suite ``dsgc-bench`` runs, by name; ``reproduce`` runs them all in this order.

A new suite is one module with a class implementing ``suite.Suite`` and one entry here.
"""

from __future__ import annotations

from .bfcl.suite import BfclSuite
from .induction_suite import InductionSuite
from .longrange_suite import LongRangeSuite
from .paper_suites import BUDGET, GRAPH_NOISE, HONEYPOT, KHOP, LAMBDA, MAIN, SCALING
from .referents import ReferentSuite
from .suite import Suite, SuiteSequence

#: the suites ``reproduce`` runs, in order (the report shows them in this order too)
ALL: tuple[Suite, ...] = (
    MAIN,
    LAMBDA,
    BUDGET,
    SCALING,
    KHOP,
    GRAPH_NOISE,
    HONEYPOT,
    ReferentSuite(),
    InductionSuite(),
    BfclSuite(),
    LongRangeSuite(),
)
REPRODUCE = SuiteSequence("reproduce", "Every suite", ALL)

#: name -> suite, every name the command line accepts besides ``report``
SUITES: dict[str, Suite] = {s.name: s for s in (*ALL, REPRODUCE)}
