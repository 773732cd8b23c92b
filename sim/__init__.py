"""sim wing of labrecord: the embedded MuJoCo weighing bench, executor and baseline policies.

``run_weighing`` is importable without MuJoCo; the simulator loads when it runs.
"""
from labrecord.sim.weighing import run_weighing

__all__ = ["run_weighing"]
