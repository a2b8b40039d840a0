"""Shared test configuration: deterministic hypothesis profiles and explicit seeds.

DSGC_HYPOTHESIS_PROFILE=ci (default) derandomizes hypothesis (reproducible, no database);
DSGC_HYPOTHESIS_PROFILE=long runs a larger random campaign.  DSGC_TEST_SEEDS=a-b sweeps the
``seed`` fixture over a range (default: seed 0 only).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

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
