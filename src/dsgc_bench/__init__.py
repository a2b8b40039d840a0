"""The dsgc benchmark: scenario generator, suites, trace diagnostics, report, ``dsgc-bench``.

Reproduces the DSGC paper's main experiment (arXiv 2608.20400, Tables 1-3) and its
robustness checks with our own templates; see ``cli.py`` for the command line.
"""
