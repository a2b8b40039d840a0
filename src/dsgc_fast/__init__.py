"""dsgc_fast: the dsgc retention engine, validated inputs -> Numba kernels -> results.

``retain`` decides which blocks of an agent's memory survive a token budget; it returns
exactly what ``dsgc_ref.retain`` (the pure-Python oracle) returns, bit for bit on float64.
``MemoryStore`` keeps an agent's memory with a lossless archive; ``select`` makes the store's
decision over a chat history the caller owns.
"""

from dsgc_ref.contract import (
    POLICIES,
    SELECTIONS,
    BindingTable,
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
from .pins import ReferentIndex, orphans, pin_closure
from .result import Retention
from .store import MemoryStore

__all__ = [
    "POLICIES",
    "SELECTIONS",
    "ArchiveLockedError",
    "BatchRetention",
    "BindingTable",
    "DependencyGraph",
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
