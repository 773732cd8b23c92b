import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
pytest.importorskip("mujoco")
