"""dsgc_bench: the benchmark harness of dsgc, built on the public API of dsgc_fast and dsgc_ref.

The paper's suites reproduce the DSGC paper's main experiment (arXiv 2608.20400, Tables 1-3)
and its robustness checks with our own scenario generator; the referent-session and
induction suites measure referent pinning and edge induction. Every suite implements
``suite.Suite`` and is listed in ``registry.SUITES``; ``dsgc-bench`` (``cli.py``) runs them.
``synthetic``, ``peer`` and ``timing`` serve the speed measurements (asv, ``tools/``).
"""
