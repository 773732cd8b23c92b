"""Write a small LeRobot v3 dataset with lerobot's own writer (run in the lerobot environment).

``python lerobot_writer.py ROOT``: two episodes of 3 and 2 frames, task texts "reach" and
"push", an ``observation.state`` named ``x, y`` (not ``key[i]``), ``next.success`` false on
every frame but the last of episode 0, and ``next.reward`` 0.5 per frame.
"""
from __future__ import annotations

import sys

import numpy as np


def main(root: str) -> None:
    from lerobot.datasets import LeRobotDataset

    features = {"action": {"dtype": "float32", "shape": (2,), "names": None},
                "observation.state": {"dtype": "float32", "shape": (2,), "names": ["x", "y"]},
                "next.success": {"dtype": "bool", "shape": (1,), "names": None},
                "next.reward": {"dtype": "float32", "shape": (1,), "names": None}}
    dataset = LeRobotDataset.create("local/plain", fps=5, features=features, root=root, use_videos=False)
    try:
        for length, task, succeeds in ((3, "reach", True), (2, "push", False)):
            for i in range(length):
                dataset.add_frame({"action": np.full(2, i, dtype=np.float32),
                                   "observation.state": np.array([i, -i], dtype=np.float32),
                                   "next.success": np.array([succeeds and i == length - 1]),
                                   "next.reward": np.array([0.5], dtype=np.float32), "task": task})
            dataset.save_episode()
    finally:
        dataset.finalize()


if __name__ == "__main__":
    main(sys.argv[1])
