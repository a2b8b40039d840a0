"""Shared test configuration: deterministic hypothesis profiles and explicit seeds.

DSGC_HYPOTHESIS_PROFILE=ci (default) derandomizes hypothesis (reproducible, no database);
DSGC_HYPOTHESIS_PROFILE=long runs a larger random campaign.  DSGC_TEST_SEEDS=a-b sweeps the
``seed`` fixture over a range (default: seed 0 only).

The Numba compile cache of a test run lives in ``.numba-cache/<hash>``, the hash taken over
the kernel sources (``src/dsgc_fast/kernels/`` and ``_config.py``).  Numba's own cache key
does not notice an edit to a helper kernel defined in another file, so a stale entry could
otherwise run old code; a new hash starts a fresh cache.  A ``NUMBA_CACHE_DIR`` already set
in the environment wins.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings


def _kernel_cache_dir() -> Path:
    root = Path(__file__).resolve().parents[1]
    engine = root / "src" / "dsgc_fast"
    digest = hashlib.sha256()
    for path in sorted([*engine.joinpath("kernels").glob("*.py"), engine / "_config.py"]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return root / ".numba-cache" / digest.hexdigest()[:16]


os.environ.setdefault("NUMBA_CACHE_DIR", str(_kernel_cache_dir()))

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    derandomize=False,
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("DSGC_HYPOTHESIS_PROFILE", "ci"))


def _seeds() -> list[int]:
    spec = os.environ.get("DSGC_TEST_SEEDS", "0")
    if "-" in spec:
        lo, hi = spec.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(spec)]


@pytest.fixture(params=_seeds())
def seed(request) -> int:
    """An explicit RNG seed; sweep with DSGC_TEST_SEEDS=0-99."""
    return request.param
