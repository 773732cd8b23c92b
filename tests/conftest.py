"""Shared test settings."""
from __future__ import annotations

from hypothesis import HealthCheck, settings

from tests.support import in_ci

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if in_ci() else "dev")
