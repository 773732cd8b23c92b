"""Feedback weighing in the embedded MuJoCo bench: the family's :class:`BenchTask`.

Instances come from the weighing contract's generator (task-state and layout seeds kept
apart, :func:`instances`); each is registered with a ``d0`` checkpoint (the first decision:
which standard to add or remove).  The bench is calibrated once (the empty-pan force) and
the instance's standards are laid out by its layout seed; the balance display shows the
readout the contract's display chain gives the scorer.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from labrecord.sim.episodes import BenchTask, instance_records
from labrecord.sim.fanout import check_request

CONDITIONS = ("basic", "extended")
#: simulated-time budget per episode (s): reading, transfers, settling and the 3 s dwell
MAX_TIME_S = {"basic": 20.0, "extended": 45.0}
#: extra simulated time for a policy that fails on purpose and recovers (s)
EXTRA_TIME_S = {"clumsy": 15.0}
#: the first registered decision of every weighing episode (which standard to add or remove)
CHECKPOINT_DECISION = "d0"


def instances(condition: str, episodes: int, seed: int) -> list[Any]:
    """The contract's balanced instances; task-state and layout draws use separate streams.

    Drawn in blocks of one full stratum cycle (basic: 3 targets x 4 answers = 12,
    extended: 3 targets x 10 goal subsets = 30), each block from its own
    ``(seed, stream, block)`` generators, so episode ``i`` of a seed is the same instance
    whatever ``episodes`` is: runs of different policies or lengths on one seed share
    their registered instances.  Every full block is exactly balanced, the last one at
    every prefix.
    """
    from labrecord.scorers.contracts.weighing import (
        BASIC_TARGETS_G, EXTENDED_TARGETS_G, STANDARDS, generate_basic, generate_extended, goal_subsets,
    )

    check_request(condition, CONDITIONS, episodes)
    if condition == "basic":
        generate, block = generate_basic, len(BASIC_TARGETS_G) * len(STANDARDS)
    else:
        generate, block = generate_extended, len(EXTENDED_TARGETS_G) * len(goal_subsets())
    out: list[Any] = []
    for b in range(-(-episodes // block)):
        out += generate(block, np.random.default_rng([seed, 0, b]), np.random.default_rng([seed, 1, b]))
    return out[:episodes]


def population_records(condition: str, seed: int, drawn: list[Any]) -> list[Any]:
    """``Instance`` + ``Checkpoint(decision="d0")`` per episode.

    ``Instance.fields`` holds the drawn task state and seeds (the bench's empty-pan force
    is calibrated per run and left out), so a registry can tell whether a run folder is
    being mixed with differently drawn instances.  No ``FixedStart``: E_fixed needs starts
    whose correct operation is given to the system, while these episodes leave the choice
    to the policy.
    """
    return instance_records(f"weighing-{condition}", condition, drawn, CHECKPOINT_DECISION,
                            fields=lambda inst: {k: v for k, v in inst.variant().items() if k != "f_empty_n"})


def layout_of(instance: Any) -> Any:
    """Where the instance's standards start (drawn from its layout seed)."""
    from labrecord.sim.weighing.scene import random_layout

    return random_layout(instance.start, np.random.default_rng(instance.layout_seed))


class WeighingTask(BenchTask):
    name = "weighing"
    cameras = ("front", "wrist", "display")
    checkpoint_decision = CHECKPOINT_DECISION

    def population(self, condition: str, episodes: int, seed: int) -> tuple[list[Any], list[Any]]:
        drawn = instances(condition, episodes, seed)
        return drawn, population_records(condition, seed, drawn)

    def max_time_s(self, condition: str, policy: str) -> float:
        return MAX_TIME_S[condition] + EXTRA_TIME_S.get(policy, 0.0)

    def make_policy(self, name: str, seed: int, instance: Any = None, **options: Any) -> Any:
        from labrecord.sim.weighing.policies import make_policy

        return make_policy(name, seed, **options)

    def make_bench(self, instance: Any, action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
        from labrecord.sim.weighing.env import WeighingEnv

        env = WeighingEnv(action_spec, cameras=cameras, size=size)
        env.calibrate_empty()
        return env

    def bench_key(self, instance: Any) -> Hashable:
        return None

    def prepare(self, env: Any, instance: Any) -> Any:
        from labrecord.sim.weighing.scene import Placement

        instance = dataclasses.replace(instance, f_empty_n=env.f_empty_n)
        env.reset(Placement(sample_g=instance.sample_g, initially_on_pan=instance.start, layout=layout_of(instance)))
        return instance

    def instruction(self, instance: Any) -> str:
        return f"Bring the balance reading to {instance.target_g:.0f} g using the labeled standards, then stop."

    def layout_description(self) -> str:
        from labrecord.sim.weighing.scene import PAN_SPOTS, TABLE_SPOTS

        return repr((self.name, TABLE_SPOTS, PAN_SPOTS))

    def columns(self) -> tuple[str, ...]:
        """The columns the weighing contract reads: ``step``, ``t``, the family's registered
        columns and the optional ``{w}_over_pan``, ``{w}_on_table``, ``{w}_z``, ``arm_speed``
        and ``robot_balance_force_n`` this bench writes (the audit reads them too)."""
        from labrecord.families import WEIGHING_STANDARDS

        return (*super().columns(),
                *(f"{w}_{name}" for w in WEIGHING_STANDARDS for name in ("over_pan", "on_table", "z")), "arm_speed",
                "robot_balance_force_n")

    def reference_executor(self) -> Callable[[Any, dict[str, Any]], Any] | None:
        """The weighing reference executor: a pick-and-place of a standard onto or off the pan."""
        from labrecord.sim.weighing.executor import SkillRun

        return SkillRun


TASK = WeighingTask()
