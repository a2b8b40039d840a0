"""Optional test dependencies: skipped with a reason on a developer's machine, required in CI.

``make test`` (which CI runs) installs every extra and starts what the integration tests
need, so there a missing library or server is a failure, never a silent skip.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def in_ci() -> bool:
    """True when the ``CI`` environment variable is set to anything but empty/0/false/no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(module: str, extra: str) -> ModuleType:
    """``module``, imported; outside CI a missing one skips the calling test module."""
    if in_ci():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"needs the {extra!r} extra (pip install -e '.[{extra}]')")


def skip_or_fail(reason: str) -> None:
    """Skip the test with ``reason``; in CI fail it instead."""
    if in_ci():
        pytest.fail(f"{reason} (CI must provide it: a skip there would hide the test)")
    pytest.skip(reason)
