"""The check every adapter applies to the dsgc annotation a framework object carries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dsgc_ref.contract import DsgcTypeError, DsgcValueError


def checked_annotation(value: Any, fields: Sequence[str], what: str) -> Mapping[str, Any]:
    """``value`` itself, once it is a mapping whose keys are all in ``fields``.

    ``what`` names the value in the errors: a ``TypeError`` for anything but a mapping, a
    ``ValueError`` listing the unknown fields and the allowed ones.
    """
    if not isinstance(value, Mapping):
        raise DsgcTypeError(f"{what} must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise DsgcValueError(f"unknown dsgc annotation field(s) {unknown} in {what}; allowed: {list(fields)}")
    return value
