"""Numba kernels: plain arrays and scalars in, arrays or scalars out.

Nothing here validates: callers (``dsgc_fast._validate`` and the orchestration modules)
guarantee shapes, dtypes, finiteness and index ranges before a kernel runs, because Numba
does not bounds-check.  Each kernel has a pure-Python twin in ``dsgc_ref``, except the
input checks of ``checks``, which only look at values and leave the raising to ``_validate``,
a store's gathers of its active blocks (``graph_kernels.active_csr``, ``referents``, ``chat``),
whose twins are the from-scratch builds of ``tests/test_store_gathers.py``, and a value table's
candidate lines (``value_lines``), whose twin is the walk over texts in ``tests/test_value_table.py``.
"""
