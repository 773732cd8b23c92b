"""Episodes of any family whose actions are pushed in from outside (Gymnasium, vla-eval).

:class:`PushedEpisodes` opens one run directory per episode through the same episode
pipeline and step owner as ``labrecord sim <family>``: the owner still steps physics,
keeps time, checks every chunk against the declared ActionSpec and writes events,
receipts, measurements, scores and ``demo.hdf5``.  The caller only supplies action rows
at the control boundaries the owner offers.  Episode ``i`` of a seed runs the family's
instance ``i`` (the same one ``labrecord sim`` would draw) and is registered in the
population ``<family>-<condition>-s<seed>`` before it starts.

A profile fixes the observation and action interface: ``libero`` (end-effector deltas at
20 Hz) or ``droid`` (joint velocities + gripper at 15 Hz), both with the ``front`` and
``wrist`` cameras and proprioception, one row per step.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.recorders.policy import ActionChunk, Capabilities, Observation, PushedPolicy

#: profile -> (action convention, control rate); images from ``front`` and ``wrist``
PROFILES = {"libero": ("eef_delta", 20.0), "droid": ("joint_vel", 15.0)}
CAMERAS = ("front", "wrist")
#: proprioception fields of the ``robot`` channel and their sizes
PROPRIO = {"joint_pos": 7, "joint_vel": 7, "gripper_qpos": 2, "eef_pos": 3, "eef_quat": 4}


def profile_spec(profile: str) -> Any:
    from labrecord.sim.bench.control import action_spec

    if profile not in PROFILES:
        raise LabrecordError(f"profile {profile!r}: expected one of {', '.join(PROFILES)}")
    convention, hz = PROFILES[profile]
    return action_spec(convention, hz, max_chunk=1)


class PushedEpisodes:
    """Episodes of ``family`` by one system (``system``, ``kind``) into ``out_dir``; see
    the module docstring."""

    def __init__(self, out_dir: str | os.PathLike[str], *, family: str, condition: str = "basic",
                 seed: int = 0, profile: str = "libero", size: int = 224, max_time_s: float | None = None,
                 videos: bool = False, system: str = "pushed", kind: str = "vla", label: str | None = None) -> None:
        from labrecord.families import family as entry
        from labrecord.sim.fanout import check_choice

        check_choice("condition", condition, entry(family).conditions)
        self.family = family
        self.out_dir, self.condition, self.seed, self.size = Path(out_dir), condition, seed, size
        self.max_time_s, self.videos, self.profile = max_time_s, videos, profile
        self.action_spec = profile_spec(profile)
        self.label = label or system
        self.policy = PushedPolicy(Capabilities(name=system, kind=kind, action_spec=self.action_spec,
                                                channels=(*CAMERAS, "robot")))
        self.episodes = 0
        self.current: Any = None
        self.observation: Observation | None = None
        self.done = False
        self.paths: list[Path] = []

    # -- episodes --------------------------------------------------------------------
    def start(self) -> Observation:
        """Close any open episode, open the next one, let the scene settle for one control
        period and return the first observation."""
        from labrecord.registry import register_population
        from labrecord.sim.episodes import EpisodeSpec, bench_task, open_episode, population_name, run_id_of

        self.finish()
        index = self.episodes
        drawn, records = bench_task(self.family).population(self.condition, index + 1, self.seed)
        spec = EpisodeSpec(str(self.out_dir), self.condition, self.label, index, self.seed, drawn[index], self.videos,
                           self.size, self.max_time_s, family=self.family)
        if (self.out_dir / run_id_of(spec)).exists():
            raise LabrecordError(f"{self.out_dir / run_id_of(spec)}: run directory already exists; "
                                 "choose another out_dir or seed")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # the records of earlier episodes are registered already (and kept as they are)
        register_population(self.out_dir, population_name(self.family, self.condition, self.seed), records)
        self.current = open_episode(spec, self.policy)
        self.episodes += 1
        owner = self.current.owner
        owner.begin(0)
        owner.observe()
        self.done = owner.step()  # the settling period: the policy is not in control yet
        self.observation = owner.observe() if not self.done else None
        return self._last_observation()

    def act(self, actions: Any) -> tuple[Observation, bool]:
        """Push ``actions`` ((dim,) or (k, dim) rows answering the last observation) and run
        until the owner wants the next action or the episode ends; returns the observation
        then and whether the episode is over."""
        observation = self._answering()
        self.current.owner.push(observation, ActionChunk(np.asarray(actions, dtype=float)))
        return self._advance()

    def reject(self, violation: Any) -> tuple[Observation, bool]:
        """The caller's reply broke the declared interface: recorded as the system's
        interface failure; the robot holds still for one control period."""
        observation = self._answering()
        self.current.owner.push_violation(observation, violation)
        return self._advance()

    def _answering(self) -> Observation:
        if self.current is None or self.observation is None or self.done:
            raise LabrecordError("no episode is running: call start() first")
        return self.observation

    def _advance(self) -> tuple[Observation, bool]:
        owner = self.current.owner
        while True:
            self.done = owner.step()
            if self.done:
                break
            observation = owner.observe()
            assert observation is not None
            self.observation = observation
            if owner.wants_action:
                break
        return self._last_observation(), self.done

    def _last_observation(self) -> Observation:
        if self.done or self.observation is None:
            # the final state (after the last period): no delivery, the episode is over
            return self.current.owner.present()
        return self.observation

    @property
    def success(self) -> bool:
        return self.current is not None and self.current.owner.scorer.finished() == "success"

    @property
    def instruction(self) -> str:
        return self.current.owner.instruction if self.current is not None else ""

    def finish(self) -> Path | None:
        """Close the open episode's run directory (None when none is open)."""
        if self.current is None:
            return None
        episode, self.current = self.current, None
        episode.owner.end()
        path = episode.close()
        self.paths.append(path)
        return path

    def close(self) -> None:
        self.finish()


def proprio_vector(state: dict[str, Any]) -> dict[str, np.ndarray]:
    robot = state.get("robot", {})
    return {name: np.asarray(robot.get(name, np.zeros(n)), dtype=np.float32).reshape(n) for name, n in PROPRIO.items()}
