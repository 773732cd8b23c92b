"""Render the front-camera frames of the simulator scenes shown in docs/simulator.md.

Each scene runs its reference policy without the recorder up to a chosen moment and
saves one PNG: ``python scripts/render-scene-frames.py docs/img`` (MUJOCO_GL=egl).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402


def drive(env, policy, instruction: str, until_s: float) -> None:
    """Step the policy's actions through the env (no recorder) until ``until_s``."""
    from labrecord.recorders.policy import Observation

    step = 0
    while env.time < until_s:
        observation = Observation(obs_id=f"o{step}", step=step, t=env.time, evidence_version=0, instruction=instruction,
                                  state=env.public_state())
        if getattr(env, "environment_in_control", lambda: False)():
            env.apply(env.hold_action(None))  # the environment's transition: no policy query
        else:
            env.apply(np.asarray(policy.act(observation).actions)[0])
        env.advance(int(round(env.physics_hz / env.control_hz)))
        env.end_block()
        step += 1


def view(env, lookat: tuple[float, float, float], distance: float, azimuth: float, elevation: float) -> np.ndarray:
    """A frame from a free camera aimed at ``lookat`` (a documentation view, not a registered camera)."""
    import mujoco

    camera = mujoco.MjvCamera()
    camera.lookat[:] = lookat
    camera.distance, camera.azimuth, camera.elevation = distance, azimuth, elevation
    scene = env.scene
    if scene._renderer is None:
        scene._renderer = scene._make_renderer()
    scene._renderer.update_scene(scene.data, camera=camera)
    return scene._renderer.render()


def centrifuge(size: int) -> np.ndarray:
    from labrecord.sim.centrifuge.task import SETTLE_STEPS, TASK, instances
    from labrecord.sim.centrifuge.policies import make_policy
    from labrecord.sim.centrifuge.env import CentrifugeEnv

    instance = instances("basic", 1, seed=0)[0][0]
    env = CentrifugeEnv(instance.calibration, cameras=("front",), size=size)
    env.reset(instance, settle_steps=SETTLE_STEPS)
    drive(env, make_policy("reference", calibration=instance.calibration), TASK.instruction(instance), 10.6)
    return view(env, (0.12, 0.0, 0.1), 0.55, 120.0, -35.0)


def rack(size: int) -> np.ndarray:
    from labrecord.sim.rack.task import TASK, instances
    from labrecord.sim.rack.policies import make_policy
    from labrecord.sim.rack.env import RackEnv

    instance = instances("extended", 1, seed=0)[0]
    env = RackEnv(len(instance.distractors), cameras=("front",), size=size)
    env.reset(instance)
    policy = make_policy("reference")
    drive(env, policy, TASK.instruction(instance), 19.2)
    return view(env, (0.2, 0.05, 0.05), 0.75, 150.0, -40.0)


def weighing(size: int) -> np.ndarray:
    from labrecord.sim.weighing.env import WeighingEnv
    from labrecord.sim.weighing.scene import Placement, random_layout
    from labrecord.sim.weighing.task import instances

    instance = instances("basic", 1, seed=0)[0]
    env = WeighingEnv(cameras=("front",), size=size)
    env.reset(Placement(instance.sample_g, instance.start, random_layout(instance.start, np.random.default_rng(instance.layout_seed))))
    return view(env, (0.1, 0.0, 0.06), 0.7, 150.0, -35.0)


SCENES = {"weighing": weighing, "centrifuge": centrifuge, "rack": rack}


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    out.mkdir(parents=True, exist_ok=True)
    from PIL import Image

    for name in sys.argv[2:] or list(SCENES):
        Image.fromarray(SCENES[name](320)).save(out / f"{name}.png", optimize=True)
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
