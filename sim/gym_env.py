"""Every registered family as a Gymnasium environment: ``labrecord/<Family>-v0``
(``labrecord/Weighing-v0``, ``labrecord/Centrifuge-v0``, ``labrecord/Rack-v0``).

::

    import gymnasium
    env = gymnasium.make("labrecord.sim:labrecord/Rack-v0", out_dir="runs", profile="libero")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Gymnasium imports ``labrecord.sim`` (the module before the colon), which registers the
id.  Each ``reset`` opens the next episode's run directory through the step owner
(:class:`labrecord.sim.pushed.PushedEpisodes`): physics stepping, timing, action checks
and every record stay with the recorder, so a Gymnasium agent's runs validate, audit and
score like any other.  The observation is the profile's native channels — the ``front``
and ``wrist`` images (``size``² RGB) and the proprioception fields of the ``robot``
channel; the instruction is in ``info["instruction"]``.  The action is one row of the
profile's convention (``libero``: 7-D end-effector delta, ``droid``: 7 joint velocities +
gripper).  ``reward`` is 1 on the step the contract confirms completion; ``terminated``
marks completion, ``truncated`` the time budget.  ``reset(seed=s)`` with a new seed
starts over at episode 0 of that seed; ``info["run_dir"]`` names the run each finished
episode was written to.
"""
from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from labrecord.sim.pushed import CAMERAS, PROPRIO, PushedEpisodes, profile_spec, proprio_vector


def env_id(family: str) -> str:
    """The Gymnasium id of a family: ``labrecord/<Family>-v0``."""
    return f"labrecord/{family.capitalize()}-v0"


class BenchGymEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, out_dir: str | os.PathLike[str] = "runs", *, family: str, condition: str = "basic",
                 profile: str = "libero", size: int = 224, max_time_s: float | None = None, videos: bool = False,
                 system: str = "gymnasium-agent", kind: str = "vla", render_mode: str | None = None) -> None:
        self.family = family
        self.out_dir, self.condition, self.profile, self.size = out_dir, condition, profile, size
        self.max_time_s, self.videos, self.system, self.kind = max_time_s, videos, system, kind
        self.render_mode = render_mode
        spec = profile_spec(profile)
        self.metadata = {**self.metadata, "render_fps": spec.control_hz}
        self.action_space = spaces.Box(np.asarray(spec.low, dtype=np.float32), np.asarray(spec.high, dtype=np.float32),
                                       dtype=np.float32)
        image = spaces.Box(0, 255, (size, size, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict({
            **{camera: image for camera in CAMERAS},
            "robot": spaces.Dict({name: spaces.Box(-np.inf, np.inf, (n,), dtype=np.float32) for name, n in PROPRIO.items()}),
        })
        self._runs: PushedEpisodes | None = None
        self._seed: int | None = None
        self._frame: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        info: dict[str, Any] = {}
        if self._runs is not None and (seed is None or seed == self._seed):
            finished = self._runs.finish()
        else:
            finished = self._runs.finish() if self._runs is not None else None
            self._seed = 0 if seed is None else int(seed)
            self._runs = PushedEpisodes(self.out_dir, family=self.family, condition=self.condition, seed=self._seed,
                                        profile=self.profile, size=self.size, max_time_s=self.max_time_s,
                                        videos=self.videos, system=self.system, kind=self.kind,
                                        label=f"gym-{self.profile}")
        if finished is not None:
            info["previous_run_dir"] = str(finished)
        observation = self._runs.start()
        info.update(instruction=self._runs.instruction, run_dir=str(self._runs.current.writer.dir), t=observation.t)
        return self._obs(observation), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        assert self._runs is not None, "call reset() first"
        observation, done = self._runs.act(np.asarray(action, dtype=np.float64).reshape(1, -1))
        success = self._runs.success
        info: dict[str, Any] = {"instruction": self._runs.instruction, "t": observation.t, "success": success}
        obs = self._obs(observation)
        if done:
            info["run_dir"] = str(self._runs.finish())
        return obs, float(done and success), bool(done and success), bool(done and not success), info

    def _obs(self, observation: Any) -> dict[str, Any]:
        self._frame = observation.images.get("front")
        return {**{camera: observation.images[camera] for camera in CAMERAS}, "robot": proprio_vector(observation.state)}

    def render(self) -> np.ndarray | None:
        return self._frame if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        if self._runs is not None:
            self._runs.close()
            self._runs = None


def register() -> None:
    """Register :func:`env_id` of every family in the registry (idempotent)."""
    from labrecord.families import FAMILIES

    for family in FAMILIES:
        if env_id(family) not in gymnasium.registry:
            gymnasium.register(id=env_id(family), entry_point="labrecord.sim.gym_env:BenchGymEnv",
                               kwargs={"family": family})
