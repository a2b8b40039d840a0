"""dsgc_fast: the dsgc retention engine, validated inputs -> Numba kernels -> results.

``retain`` decides which blocks of an agent's memory survive a token budget; it returns
exactly what ``dsgc_ref.retain`` (the pure-Python oracle) returns, bit for bit on float64.
"""

from dsgc_ref.contract import (
    POLICIES,
    SELECTIONS,
    BindingTable,
    Params,
    Reason,
    ReferentEvictionError,
    whitespace_cost,
)

from ._archive_access import ArchiveLockedError
from .batch import BatchRetention, retain_batch
from .embeddings import QuantizedEmbeddings, TiledEmbeddings
from .engine import retain
from .graph import DependencyGraph
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
    "MemoryStore",
    "Params",
    "QuantizedEmbeddings",
    "Reason",
    "ReferentEvictionError",
    "ReferentIndex",
    "Retention",
    "TiledEmbeddings",
    "orphans",
    "pin_closure",
    "retain",
    "retain_batch",
    "whitespace_cost",
]
