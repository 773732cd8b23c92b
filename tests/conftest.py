"""Shared test settings."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.support import in_ci

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if in_ci() else "dev")


#: set in the child process that runs the ``tensorflow`` tests (see below)
TENSORFLOW_CHILD = "LABRECORD_TENSORFLOW_CHILD"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``tensorflow`` (the DECIMER reader's real model) run in a pytest process
    of their own, started by ``test_decimer.py::test_the_real_model_in_a_process_of_its_own``.

    TensorFlow and the rest of the suite do not share a process well: once TensorFlow has
    run that model, creating a MuJoCo EGL renderer in the same process ends in a
    segmentation fault, and after torch has trained in a process the model's reads slow
    to minutes (both seen with tensorflow-cpu 2.20, torch 2.13 and Mesa's software EGL).
    """
    if os.environ.get(TENSORFLOW_CHILD) == "1":
        return
    moved = [item for item in items if item.get_closest_marker("tensorflow") is not None]
    if moved:
        config.hook.pytest_deselected(items=moved)
        items[:] = [item for item in items if item.get_closest_marker("tensorflow") is None]
