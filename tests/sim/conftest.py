import os


from tests.support import require_module

os.environ.setdefault("MUJOCO_GL", "egl")
require_module("mujoco", 'pip install "labrecord[sim]"')
