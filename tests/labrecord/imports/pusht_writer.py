"""Record a small PushT dataset with gym-pusht and lerobot's own writer (run in the lerobot environment).

``python pusht_writer.py ROOT EPISODES STEPS``: EPISODES episodes of STEPS frames each of
``gym_pusht/PushT-v0`` with ``obs_type="environment_state_agent_pos"`` (the T's 16 keypoint
coordinates and the pusher's position; what ``lerobot-eval --env.type=pusht
--env.obs_type=environment_state_agent_pos`` gives a policy), episode ``i`` reset with
seed ``i``.  A scripted pusher moves towards the T's keypoint centroid, at most 20 px a
step.  The features are the names lerobot's PushT environment maps its observations to:
``observation.state`` (2), ``observation.environment_state`` (16), ``action`` (2), plus
``next.reward`` and ``next.success``, written through ``LeRobotDataset.create`` with no video.
"""
from __future__ import annotations

import sys

import numpy as np


def main(root: str, episodes: int, steps: int) -> None:
    import gymnasium as gym
    import gym_pusht  # noqa: F401  (registers gym_pusht/PushT-v0)
    from lerobot.datasets import LeRobotDataset

    features = {"observation.state": {"dtype": "float32", "shape": (2,), "names": ["x", "y"]},
                "observation.environment_state": {"dtype": "float32", "shape": (16,), "names": None},
                "action": {"dtype": "float32", "shape": (2,), "names": ["x", "y"]},
                "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
                "next.success": {"dtype": "bool", "shape": (1,), "names": None}}
    env = gym.make("gym_pusht/PushT-v0", obs_type="environment_state_agent_pos", max_episode_steps=steps)
    dataset = LeRobotDataset.create("local/pusht", fps=10, features=features, root=root, use_videos=False)
    try:
        for episode in range(episodes):
            observation, _ = env.reset(seed=episode)
            for _ in range(steps):
                agent = np.asarray(observation["agent_pos"], dtype=np.float64)
                target = np.asarray(observation["environment_state"], dtype=np.float64).reshape(-1, 2).mean(axis=0)
                action = (agent + np.clip(target - agent, -20.0, 20.0)).astype(np.float32)
                following, reward, terminated, truncated, info = env.step(action)
                dataset.add_frame({"observation.state": agent.astype(np.float32),
                                   "observation.environment_state": np.asarray(observation["environment_state"],
                                                                                dtype=np.float32),
                                   "action": action, "next.reward": np.array([reward], dtype=np.float32),
                                   "next.success": np.array([bool(info.get("is_success", False))]),
                                   "task": "Push the T-shaped block onto the T-shaped target."})
                observation = following
                if terminated or truncated:
                    break
            dataset.save_episode()
    finally:
        dataset.finalize()
        env.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
