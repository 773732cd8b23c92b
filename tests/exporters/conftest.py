"""Shared fixtures for the export tests: small runs with demonstrations."""
from __future__ import annotations

from pathlib import Path

import pytest

from labrecord.exporters.examples import write_demo_runs
from tests.support import require


require_reader = require


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs, three episodes each (success, failure, success), 64x64 frames of camera
    ``front`` kept in demo.hdf5 and of camera ``wrist`` in videos/wrist.mp4, one
    environment-controlled stretch per episode."""
    root = tmp_path_factory.mktemp("runs")
    write_demo_runs(root, runs=2, episodes=3, steps=12, successes=(True, False, True), image_size=64,
                    env_control=True, video_cameras=("wrist",))
    return root
