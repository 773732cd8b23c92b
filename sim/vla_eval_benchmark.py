"""Every registered family as a VLA Evaluation Harness benchmark (``vla-eval`` 0.8.0).

Load it by import string as vla-eval does, naming the family among its params::

    benchmark: "labrecord.sim.vla_eval_benchmark:BenchBenchmark"
    params: {out_dir: runs, family: centrifuge, condition: basic, seed: 0}

vla-eval's runner queries the model server itself and pushes each action in through
:meth:`BenchBenchmark.step`; the episode still runs through labrecord's step owner
(:class:`labrecord.sim.pushed.PushedEpisodes`), which steps physics, keeps time, checks
each action against the declared ActionSpec and writes the run directory — so any model
server vla-eval supports can be scored by labrecord.

The interface is LIBERO's, as vla-eval's LIBERO benchmark declares it: images ``front``
(third person) and ``wrist``, rotated 180° as LIBERO renders them; an 8-D state (tool
position, axis-angle orientation, two finger positions); the natural-language
instruction as ``task_description``; actions of 7 = position delta and axis-angle
rotation in [-1, 1] (scaled to ±0.05 m and ±0.5 rad per step as robosuite's OSC_POSE
does) and a gripper command −1 open … +1 closed.  One action per control step (20 Hz).
"""
from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np
from vla_eval.benchmarks.base import StepBenchmark, StepResult
from vla_eval.specs import GRIPPER_CLOSE_POS, IMAGE_RGB, LANGUAGE, POSITION_DELTA, ROTATION_AA, STATE_EEF_POS_AA_GRIP, DimSpec

from labrecord.recorders.adapters.faults import InterfaceViolation
from labrecord.sim.pushed import PushedEpisodes


class BenchBenchmark(StepBenchmark):
    """One task (``<family>-<condition>``); every episode is the next registered instance."""

    render_backends: ClassVar[frozenset[str]] = frozenset({"cpu"})

    @classmethod
    def configure_render(cls, mode: str) -> dict[str, str]:
        """MuJoCo renders offscreen in software (OSMesa) on ``cpu``."""
        if mode != "cpu":
            raise NotImplementedError(f"{cls.__name__} renders on cpu only, not {mode}")
        from vla_eval.render import configure_mujoco_render

        return configure_mujoco_render(mode)

    def __init__(self, family: str, out_dir: str = "runs", condition: str = "basic", seed: int = 0, size: int = 256,
                 max_time_s: float | None = None, videos: bool = False, system: str = "vla-eval-model") -> None:
        super().__init__()
        from labrecord.recorders.adapters.openpi import PROFILES

        self.family, self.condition = family, condition
        self.profile = PROFILES["libero"]
        self.runs = PushedEpisodes(os.fspath(out_dir), family=family, condition=condition, seed=seed, profile="libero",
                                   size=size, max_time_s=max_time_s, videos=videos, system=system, kind="vla",
                                   label="vla-eval-libero")
        self.run_dirs: list[str] = []
        self.interface_failures = 0

    # -- data ------------------------------------------------------------------------
    def get_tasks(self) -> list[dict[str, Any]]:
        return [{"name": f"{self.family}-{self.condition}", "suite": "labrecord"}]

    def get_action_spec(self) -> dict[str, DimSpec]:
        return {"position": POSITION_DELTA, "rotation": ROTATION_AA, "gripper": GRIPPER_CLOSE_POS}

    def get_observation_spec(self) -> dict[str, DimSpec]:
        return {"front": IMAGE_RGB, "wrist": IMAGE_RGB, "language": LANGUAGE, "state": STATE_EEF_POS_AA_GRIP}

    def get_metadata(self) -> dict[str, Any]:
        return {"control_hz": self.runs.action_spec.control_hz, "recorder": "labrecord"}

    def get_hold_action(self, last_action: dict[str, Any] | None) -> dict[str, Any]:
        """Deltas: the null action stays put (gripper as last commanded)."""
        grip = float(np.asarray(last_action["actions"]).reshape(-1)[-1]) if last_action else -1.0
        return {"actions": np.asarray([0, 0, 0, 0, 0, 0, grip], dtype=np.float32)}

    # -- episode ---------------------------------------------------------------------
    def reset(self, task: dict[str, Any]) -> Any:
        self._finish()
        return self.runs.start()

    def step(self, action: dict[str, Any]) -> StepResult:
        """One action (the first row of a chunk) for one control period."""
        info: dict[str, Any] = {}
        try:
            rows = self.profile.executed_rows(action if isinstance(action, dict) else {"actions": action})
        except InterfaceViolation as violation:
            # a reply that breaks the declared interface: the model's own failure, recorded;
            # the robot holds still for this step
            self.interface_failures += 1
            info["interface_failure"] = str(violation)
            obs, done = self.runs.reject(violation)
        else:
            obs, done = self.runs.act(rows[:1])
        success = done and self.runs.success
        info["success"] = success
        if done:
            self.run_dirs.append(str(self.runs.finish()))
            info["run_dir"] = self.run_dirs[-1]
        return StepResult(obs=obs, reward=float(success), done=done, info=info)

    def make_obs(self, raw_obs: Any, task: dict[str, Any]) -> dict[str, Any]:
        images = {camera: np.ascontiguousarray(raw_obs.images[camera][::-1, ::-1]) for camera in ("front", "wrist")}
        state = self.profile.state_fields(raw_obs)["observation/state"]
        return {"images": images, "task_description": raw_obs.instruction, "states": state}

    def get_step_result(self, step_result: StepResult) -> dict[str, Any]:
        return {"success": bool(step_result.info.get("success", False)),
                **({"run_dir": step_result.info["run_dir"]} if "run_dir" in step_result.info else {})}

    def _finish(self) -> None:
        path = self.runs.finish()
        if path is not None and str(path) not in self.run_dirs:
            self.run_dirs.append(str(path))

    def cleanup(self) -> None:
        self._finish()
