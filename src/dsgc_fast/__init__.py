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

Every public name is imported at its first use (PEP 562 ``__getattr__``): ``import dsgc_fast``
loads none of its modules, ``from dsgc_fast import retain`` imports ``dsgc_fast.engine`` then.
No module loads Numba or a kernel at import (``dsgc_fast._deferred``): the first call that
runs a kernel does.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

    from ._text_caches import forget_texts
    from ._warmup import warmup
    from .batch import BatchRetention, retain_batch
    from .digest_selection import FormSelection, select_forms
    from .embeddings import QuantizedEmbeddings, TiledEmbeddings
    from .engine import retain
    from .graph import DependencyGraph
    from .memory._access import ArchiveLockedError
    from .memory.digest import is_digest, render_digest
    from .memory.history import SelectCache, Selection, min_budget, select
    from .memory.messages import SessionError
    from .memory.store import MemoryStore
    from .pins import ReferentIndex, orphans, pin_closure
    from .result import Retention

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
    "forget_texts",
    "is_digest",
    "min_budget",
    "orphans",
    "pin_closure",
    "render_digest",
    "retain",
    "retain_batch",
    "select",
    "select_forms",
    "warmup",
    "whitespace_cost",
]

#: the module each public name is imported from, at its first use
_SOURCES = {
    "POLICIES": "dsgc_ref.contract",
    "SELECTIONS": "dsgc_ref.contract",
    "BindingTable": "dsgc_ref.contract",
    "DsgcError": "dsgc_ref.contract",
    "DsgcRuntimeError": "dsgc_ref.contract",
    "DsgcTypeError": "dsgc_ref.contract",
    "DsgcValueError": "dsgc_ref.contract",
    "Form": "dsgc_ref.contract",
    "Params": "dsgc_ref.contract",
    "Reason": "dsgc_ref.contract",
    "ReferentEvictionError": "dsgc_ref.contract",
    "whitespace_cost": "dsgc_ref.contract",
    "ArchiveLockedError": ".memory._access",
    "forget_texts": "._text_caches",
    "warmup": "._warmup",
    "BatchRetention": ".batch",
    "retain_batch": ".batch",
    "is_digest": ".memory.digest",
    "render_digest": ".memory.digest",
    "FormSelection": ".digest_selection",
    "select_forms": ".digest_selection",
    "QuantizedEmbeddings": ".embeddings",
    "TiledEmbeddings": ".embeddings",
    "retain": ".engine",
    "DependencyGraph": ".graph",
    "SelectCache": ".memory.history",
    "Selection": ".memory.history",
    "min_budget": ".memory.history",
    "select": ".memory.history",
    "SessionError": ".memory.messages",
    "ReferentIndex": ".pins",
    "orphans": ".pins",
    "pin_closure": ".pins",
    "Retention": ".result",
    "MemoryStore": ".memory.store",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first access and kept here."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
