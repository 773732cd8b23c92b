"""Shared test settings."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.support import in_ci

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if in_ci() else "dev")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``tensorflow`` (the DECIMER reader's real model) run after all others.

    Once TensorFlow has loaded and run that model in a process, creating a MuJoCo EGL
    renderer in the same process ends in a segmentation fault (seen with tensorflow-cpu
    2.20 and Mesa's software EGL), so no simulator test may come after them.
    """
    late = [item for item in items if item.get_closest_marker("tensorflow") is not None]
    if late:
        items[:] = [item for item in items if item.get_closest_marker("tensorflow") is None] + late
