"""sim wing of labrecord: the embedded MuJoCo weighing, centrifuge and rack benches, executors and
baseline policies.

``run_weighing``, ``run_centrifuge`` and ``run_rack`` are importable without MuJoCo; the simulator
loads when they run.
"""
from labrecord.sim.centrifuge import run_centrifuge
from labrecord.sim.rack import run_rack
from labrecord.sim.weighing import run_weighing

__all__ = ["run_centrifuge", "run_rack", "run_weighing"]
