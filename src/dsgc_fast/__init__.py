"""dsgc_fast: the dsgc retention engine, validated inputs -> Numba kernels -> results.

``retain`` decides which blocks of an agent's memory survive a token budget; it returns
exactly what ``dsgc_ref.retain`` (the pure-Python oracle) returns, bit for bit on float64.
``MemoryStore`` keeps an agent's memory with a lossless archive; ``select`` makes the store's
decision over a chat history the caller owns.

Errors: every error dsgc raises derives from ``DsgcError`` and keeps its builtin parent
(``DsgcValueError`` is a ``ValueError``, ``DsgcTypeError`` a ``TypeError``,
``DsgcRuntimeError`` a ``RuntimeError``), so ``except dsgc_fast.DsgcError`` catches every
refusal and older ``except ValueError`` clauses still work.

Logging: the stdlib ``dsgc`` logger; module ``dsgc_fast.x`` logs to ``dsgc.x`` (the
``dsgc.compaction`` logger writes one DEBUG record per compaction or selection and a WARNING
when the budget cannot hold the live blocks).  The package adds only a ``NullHandler``:
nothing is printed unless the application configures logging.
"""

import logging

from dsgc_ref.contract import (
    POLICIES,
    SELECTIONS,
    BindingTable,
    DsgcError,
    DsgcRuntimeError,
    DsgcTypeError,
    DsgcValueError,
    Form,
    Params,
    Reason,
    ReferentEvictionError,
    whitespace_cost,
)

from ._archive_access import ArchiveLockedError
from .batch import BatchRetention, retain_batch
from .digest import is_digest, render_digest
from .digest_selection import FormSelection, select_forms
from .embeddings import QuantizedEmbeddings, TiledEmbeddings
from .engine import retain
from .graph import DependencyGraph
from .history import SelectCache, Selection, min_budget, select
from .messages import SessionError
from .pins import ReferentIndex, orphans, pin_closure
from .result import Retention
from .store import MemoryStore

logging.getLogger("dsgc").addHandler(logging.NullHandler())

__all__ = [
    "POLICIES",
    "SELECTIONS",
    "ArchiveLockedError",
    "BatchRetention",
    "BindingTable",
    "DependencyGraph",
    "DsgcError",
    "DsgcRuntimeError",
    "DsgcTypeError",
    "DsgcValueError",
    "Form",
    "FormSelection",
    "MemoryStore",
    "Params",
    "QuantizedEmbeddings",
    "Reason",
    "ReferentEvictionError",
    "ReferentIndex",
    "Retention",
    "SelectCache",
    "Selection",
    "SessionError",
    "TiledEmbeddings",
    "is_digest",
    "min_budget",
    "orphans",
    "pin_closure",
    "render_digest",
    "retain",
    "retain_batch",
    "select",
    "select_forms",
    "whitespace_cost",
]
