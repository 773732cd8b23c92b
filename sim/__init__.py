"""sim wing of labrecord: the embedded MuJoCo weighing and centrifuge benches, executors and
baseline policies.

``run_weighing`` and ``run_centrifuge`` are importable without MuJoCo; the simulator
loads when they run.
"""
from labrecord.sim.centrifuge import run_centrifuge
from labrecord.sim.weighing import run_weighing

__all__ = ["run_centrifuge", "run_weighing"]
