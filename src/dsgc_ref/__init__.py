"""dsgc_ref: the pure-Python oracle of the dsgc retention engine.

Readable, slow and exact: lists and floats only.  ``dsgc_fast`` must reproduce every result
of this package bit for bit on float64 inputs.
"""

from .contract import POLICIES, SELECTIONS, BindingTable, Form, Params, Reason, ReferentEvictionError
from .digest_selection import FormSelection, select_forms
from .engine import QuantizedRows, Retention, retain
from .pins import orphans, pin_closure

__all__ = [
    "POLICIES",
    "SELECTIONS",
    "BindingTable",
    "Form",
    "FormSelection",
    "Params",
    "QuantizedRows",
    "Reason",
    "ReferentEvictionError",
    "Retention",
    "orphans",
    "pin_closure",
    "retain",
    "select_forms",
]
