"""sim wing of labrecord: the embedded MuJoCo benches of every registered family
(``sim/<family>/``: scene, env, policies, task) over one shared bench base
(``sim/bench/``), one episode pipeline (:mod:`labrecord.sim.episodes`), its policy front
ends (served, pushed, Gymnasium, vla-eval) and the studies.

``run_episodes(family, out_dir, …)`` is importable without MuJoCo; the simulator loads
when it runs.  When Gymnasium is installed, importing this package registers
``labrecord/<Family>-v0`` for every family (:mod:`labrecord.sim.gym_env`), so
``gymnasium.make("labrecord.sim:labrecord/Centrifuge-v0", out_dir="runs")`` works.
"""
import importlib.util

from labrecord.sim.episodes import run_episodes

if importlib.util.find_spec("gymnasium") is not None:
    from labrecord.sim.gym_env import register as _register

    _register()

__all__ = ["run_episodes"]
