"""Placement-recall episodes in the embedded MuJoCo rack bench, one run directory per episode.

:func:`run_rack` is the library entry point behind ``labrecord sim rack``:

* ``basic`` — an empty rack, the sample in its stand, a stationary occluded interval;
* ``extended`` — three distractor tubes with the sample's cap (same appearance) in
  registered slots, and the rack moved and turned (any yaw) during the occlusion, so the
  sample's identity comes only from the placement history.

Instances are drawn per episode from ``default_rng([seed, 0, episode])`` (task state:
distractor slots) and ``[seed, 1, episode]`` (layout: rack poses).  The population
``rack-<condition>-s<seed>`` registers each instance with its retrieval checkpoint
(decision ``d2``: after the placement and the transition).  Environment-controlled
control periods are ``occluded`` in the measurements and ``control_mask`` false in
``demo.hdf5``.  A ``missed_region`` failure that a later success on the marked region
resolves gets a ``recovery`` event; a reported retrieval is also recorded as a state
report of the recalled slot, bound to the current opportunity.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.models import Operation, Recovery, StateReport
from labrecord.recorders.online import ContractScorer
from labrecord.sim.episodes import family_bench, policy_seed, record_episode, run_family
from labrecord.sim.fanout import check_request, headless_rendering
from labrecord.sim.weighing import EpisodeSpec, instance_records

FAMILY = "rack"
CONDITIONS = ("basic", "extended")
MAX_TIME_S = {"basic": 60.0, "extended": 60.0}
#: the retrieval decision: after the placement (d1) and the environment transition (d2)
RETRIEVAL_DECISION = "d2"


def draw(condition: str, seed: int, episode: int) -> Any:
    from labrecord.scorers.contracts.rack import SLOTS, RackInstance
    from labrecord.sim.rack_scene import DISTRACTORS, REGION

    rng_task, rng_layout = np.random.default_rng([seed, 0, episode]), np.random.default_rng([seed, 1, episode])
    start = (0.22 + float(rng_layout.uniform(-0.02, 0.02)), 0.20 + float(rng_layout.uniform(-0.02, 0.02)), 0.05,
             float(rng_layout.uniform(-0.3, 0.3)))
    task_seed, layout_seed = int(rng_task.integers(2**31 - 1)), int(rng_layout.integers(2**31 - 1))
    if condition == "basic":
        return RackInstance(table_region=REGION, condition="basic", rack_pose=start, task_seed=task_seed,
                            layout_seed=layout_seed)
    slots = [SLOTS[int(i)] for i in rng_task.choice(len(SLOTS), size=len(DISTRACTORS), replace=False)]
    moved = (0.22 + float(rng_layout.uniform(-0.04, 0.04)), 0.20 + float(rng_layout.uniform(-0.03, 0.03)), 0.05,
             float(rng_layout.uniform(-math.pi, math.pi)))
    return RackInstance(distractors=tuple(sorted(zip(DISTRACTORS, slots))), table_region=REGION, condition="extended",
                        rack_pose=start, moved_pose=moved, task_seed=task_seed, layout_seed=layout_seed)


def instances(condition: str, episodes: int, seed: int) -> list[Any]:
    check_request(condition, CONDITIONS, episodes)
    return [draw(condition, seed, i) for i in range(episodes)]


def population(condition: str, episodes: int, seed: int) -> tuple[list[Any], list[Any]]:
    """The drawn instances and their population records: ``Instance`` + ``Checkpoint(d2)`` each."""
    drawn = instances(condition, episodes, seed)
    return drawn, instance_records(f"{FAMILY}-{condition}", condition, drawn, RETRIEVAL_DECISION)


def run_rack(out_dir: str | os.PathLike[str], condition: str = "basic", policy: str = "reference", episodes: int = 8,
             seed: int = 0, workers: int = 1, *, cameras: bool = True, size: int = 224, max_time_s: float | None = None,
             progress: Callable[[int], None] | None = None, **policy_options: Any) -> list[Path]:
    """Run ``episodes`` placement-recall episodes; returns the run directories in order.

    Example::

        runs = run_rack("runs", "extended", "reference", episodes=4, seed=0)
    """
    from labrecord.sim.rack_policies import make_policy

    make_policy(policy, seed, **policy_options)  # fail fast on a bad name or option
    return run_family(out_dir, FAMILY, condition, policy, episodes, seed, workers, population=population, run=run_episode,
                      cameras=cameras, size=size, max_time_s=max_time_s, progress=progress, policy_options=policy_options)


def instruction_of(instance: Any) -> str:
    return ("Place the sample tube in a free hole of the rack and withdraw; after the pause, "
            "retrieve that same tube and set it on the green region, then stop.")


class RackScorer(ContractScorer):
    """The contract scorer plus the rack's separate records: a reported retrieval also
    writes a state report of the recalled slot (reference: the slot the sample actually
    settled in), and a ``missed_region`` failure resolved by a completed dwell gets a
    ``recovery`` event."""

    def start(self, emit: Callable[..., Any], t: float) -> None:
        super().start(emit, t)
        self.open_failures: list[int] = []

    def _advance(self, f: Any) -> None:
        for event in self.tracker.advance(f):
            self._count(event)
            written = event.emit(self._sink)
            if event.type == "failure":
                self.open_failures.append(written.seq)
            elif event.type == "dwell" and event.fields.get("state") == "complete":
                for seq in self.open_failures:
                    self.emit(Recovery, t=event.t, of_seq=seq, resolved=True)
                self.open_failures = []
        self.advanced = f

    def reported(self, op: Operation, t: float) -> None:
        from labrecord.scorers.contracts.rack import SLOTS

        super().reported(op, t)
        current, state = self.tracker.current, self.tracker.state
        if current is None or op.kind != "pick":
            return
        # through the step owner's ``fields`` mapping: a state report has a ``fields`` field of its own
        self.emit(StateReport, t=t, fields={
            "opp": current.opp, "fields": {"sample_slot": op.dest},
            "reference": {"sample_slot": SLOTS[state.bound] if state.bound >= 0 else None},
            "evidence_version": current.evidence_version})

    def display(self) -> dict[str, Any]:
        return {}


def run_episode(spec: EpisodeSpec) -> Path:
    """One episode, one run directory (``<out_dir>/<run_id>``); the bench is built for the
    instance's number of distractors."""
    headless_rendering()
    from labrecord.sim.rack_policies import make_policy
    from labrecord.sim.rack_scene import CAMERAS, DISTRACTORS, PITCH, REGION, STAND, RackEnv

    instance = spec.instance
    policy = make_policy(spec.policy, policy_seed(spec), **dict(spec.policy_options))
    env = family_bench(_BENCHES, spec, RackEnv, len(instance.distractors), policy.capabilities.action_spec, CAMERAS)
    env.reset(instance)
    return record_episode(spec, env, policy, RackScorer, family=FAMILY, instruction=instruction_of(instance),
                          max_time_s=spec.max_time_s or MAX_TIME_S[spec.condition], benches=_BENCHES,
                          layout_text=repr((FAMILY, STAND, REGION, PITCH, DISTRACTORS)),
                          scene="labrecord.sim.assets/rack.xml", memory="placement history (episode)")


_BENCHES: dict[Any, Any] = {}
