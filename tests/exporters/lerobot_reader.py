"""Read a LeRobot export with lerobot itself and print what the test compares (JSON on stdout).

Run by tests/exporters/test_lerobot.py with the Python 3.12 interpreter that has lerobot
installed: ``python lerobot_reader.py REPO_ID ROOT``.  Every frame of every episode is read
through ``LeRobotDataset.__getitem__`` (video frames decoded by lerobot).
"""
from __future__ import annotations

import json
import sys

import numpy as np


def main(repo_id: str, root: str) -> None:
    from lerobot.datasets import LeRobotDataset

    dataset = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    episodes: dict[int, dict] = {}
    for index in range(len(dataset)):
        item = dataset[index]
        episode = episodes.setdefault(int(item["episode_index"]), {"frame_index": [], "state": [], "action": [],
                                                                     "images": {}, "task": item["task"], "control": []})
        episode["frame_index"].append(int(item["frame_index"]))
        episode["state"].append(item["observation.state"].numpy().tolist())
        episode["action"].append(item["action"].numpy().tolist())
        if "observation.environment_state" in item:
            episode.setdefault("env", []).append(item["observation.environment_state"].numpy().tolist())
        if "policy_in_control" in item:
            episode["control"].append(bool(item["policy_in_control"].item()))
        for key in dataset.meta.video_keys:
            # (C, H, W) float in [0, 1] -> (H, W, C) uint8 for comparison with the source frames
            frame = (item[key].numpy().transpose(1, 2, 0) * 255.0).round().astype(np.uint8)
            episode["images"].setdefault(key, []).append(frame.tolist())
    print(json.dumps({"num_episodes": dataset.num_episodes, "num_frames": dataset.num_frames, "fps": dataset.fps,
                      "features": sorted(dataset.features), "splits": dataset.meta.info.splits,
                      "episodes": [episodes[k] for k in sorted(episodes)]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
