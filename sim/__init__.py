"""sim wing of labrecord: the embedded MuJoCo weighing, centrifuge and rack benches, executors and
baseline policies.

``run_weighing``, ``run_centrifuge`` and ``run_rack`` are importable without MuJoCo; the simulator
loads when they run.  When Gymnasium is installed, importing this package registers
``labrecord/Weighing-v0`` (:mod:`labrecord.sim.gym_env`), so
``gymnasium.make("labrecord.sim:labrecord/Weighing-v0")`` works.
"""
import importlib.util

from labrecord.sim.centrifuge import run_centrifuge
from labrecord.sim.rack import run_rack
from labrecord.sim.weighing import run_weighing

if importlib.util.find_spec("gymnasium") is not None:
    from labrecord.sim.gym_env import register as _register

    _register()

__all__ = ["run_centrifuge", "run_rack", "run_weighing"]
