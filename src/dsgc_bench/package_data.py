"""The benchmark's data files, shipped beside the modules that read them.

``templates.json``, ``referent_domains.json`` and ``longrange.json`` hold text (our own
sentences and value pools) that the generators compose; ``paper.json`` the paper's published
figures.  Keeping them out of the code makes each one table, edited in one place.  The files
are package data (``pyproject.toml``).
"""

from __future__ import annotations

import importlib.resources
import json
from typing import Any


def load(name: str) -> Any:
    """The parsed JSON of data file ``name`` of this package."""
    return json.loads(importlib.resources.files(__package__).joinpath(name).read_text("utf-8"))
