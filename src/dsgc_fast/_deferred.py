"""Modules imported at their first attribute read, so that importing dsgc_fast loads no Numba.

``checks = deferred("dsgc_fast.kernels.checks")`` stands where ``from .kernels import checks``
stood: the first ``checks.name`` imports the module (under the import system's lock, so two
threads wait for one complete import) and keeps each name read, so later reads cost what an
attribute read costs.  The kernels, ``_config`` (which chooses Numba's threading layer) and
Numba itself then load at the first call that needs them, not with the modules that call them.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class _Deferred(types.ModuleType):
    """A stand-in for the module of its name; each name read is the module's own object."""

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)
        return value


def deferred(name: str) -> Any:
    """A stand-in for module ``name`` (absolute), imported at the first read of one of its names."""
    return _Deferred(name)
