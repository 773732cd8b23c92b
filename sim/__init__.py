"""sim wing of labrecord: the embedded MuJoCo weighing bench, executor and baseline policies.

``run_weighing`` is importable without MuJoCo; the simulator loads when it runs.  When
Gymnasium is installed, importing this package registers ``labrecord/Weighing-v0``
(:mod:`labrecord.sim.gym_env`), so ``gymnasium.make("labrecord.sim:labrecord/Weighing-v0")``
works.
"""
import importlib.util

from labrecord.sim.weighing import run_weighing

if importlib.util.find_spec("gymnasium") is not None:
    from labrecord.sim.gym_env import register as _register

    _register()

__all__ = ["run_weighing"]
