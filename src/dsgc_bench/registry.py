"""Every suite ``dsgc-bench`` runs, by name; ``reproduce`` runs them all in this order.

A new suite is one module with a class implementing ``suite.Suite`` and one entry here.
Suites with scenario families (``families``) run their default family; ``reproduce`` also
runs the neutral scaling suite (its stores go beyond the paper's sizes), and the report shows
every suite in every family found in the output folder.
"""

from __future__ import annotations

from .bfcl.suite import BfclSuite
from .boundaries import BoundariesSuite
from .families import FAMILIES, NEUTRAL
from .induction_suite import InductionSuite
from .longrange_suite import LongRangeSuite
from .paper_suites import BUDGET, GRAPH_NOISE, HONEYPOT, KHOP, LAMBDA, MAIN, SCALING
from .referents import ReferentSuite
from .suite import Suite, SuiteSequence


def _every_family(suites: tuple[Suite, ...]) -> tuple[Suite, ...]:
    """Each suite once per scenario family it has (suites without families once)."""
    variants = ([s.with_scenarios(f) for f in FAMILIES] if hasattr(s, "with_scenarios") else [s] for s in suites)
    return tuple(dict.fromkeys(v for group in variants for v in group))


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
    BoundariesSuite(),
)
REPRODUCE = SuiteSequence("reproduce", "Every suite", (*ALL, SCALING.with_scenarios(NEUTRAL)))
#: what REPORT.md shows when a folder holds it: every suite, in each of its scenario families
REPORTED = SuiteSequence("report", "Every suite in every scenario family", _every_family(ALL))

#: name -> suite, every name the command line accepts besides ``report``
SUITES: dict[str, Suite] = {s.name: s for s in (*ALL, REPRODUCE)}
