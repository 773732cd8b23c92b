"""``labrecord import lerobot`` against reading the same dataset with lerobot itself.

A LeRobot v3 dataset of ``--episodes`` episodes of ``--steps`` frames (action, a named
state, ``next.success``, ``next.reward``; no video) is written once with lerobot's writer;
then, in the same process and run:

* baseline: ``LeRobotDataset`` opened and every frame of every episode read as arrays
  (``hf_dataset`` columns per episode, the episode index from ``meta.episodes``);
* import: :func:`labrecord.imports.import_source` of the dataset into a fresh folder (a run
  directory and a ``demo.hdf5`` per episode, the population registered).

Prints both wall times and the ratio baseline / import of each ``--repeat``, then their
ranges and whether the ratio reaches the target, 0.5 (benchmarks/side_by_side.py).
Needs the lerobot environment (Python 3.12, scripts/install-lerobot-venv.sh).

Example:
    $LABRECORD_LEROBOT_PYTHON benchmarks/bench_import_lerobot.py --episodes 1000 --steps 20
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def write(root: Path, episodes: int, steps: int) -> None:
    from lerobot.datasets import LeRobotDataset

    features = {"action": {"dtype": "float32", "shape": (7,), "names": None},
                "observation.state": {"dtype": "float32", "shape": (4,),
                                      "names": ["robot0_eef_pos[0]", "robot0_eef_pos[1]", "robot0_eef_pos[2]",
                                                "robot0_gripper_qpos"]},
                "next.success": {"dtype": "bool", "shape": (1,), "names": None},
                "next.reward": {"dtype": "float32", "shape": (1,), "names": None}}
    dataset = LeRobotDataset.create("local/bench", fps=10, features=features, root=root, use_videos=False)
    rng = np.random.default_rng(0)
    try:
        for episode in range(episodes):
            for i in range(steps):
                dataset.add_frame({"action": rng.normal(size=7).astype(np.float32),
                                   "observation.state": rng.normal(size=4).astype(np.float32),
                                   "next.success": np.array([episode % 2 == 0 and i == steps - 1]),
                                   "next.reward": np.zeros(1, dtype=np.float32), "task": f"task {episode % 5}"})
            dataset.save_episode()
    finally:
        dataset.finalize()


def read_with_lerobot(root: Path) -> int:
    from lerobot.datasets import LeRobotDataset

    dataset = LeRobotDataset("local/bench", root=root)
    frames = 0
    for row in range(len(dataset.meta.episodes)):
        episode = dataset.meta.episodes[row]
        rows = dataset.hf_dataset.select(range(int(episode["dataset_from_index"]), int(episode["dataset_to_index"])))
        columns = {name: np.stack([np.asarray(v) for v in rows[name]])
                   for name in ("action", "observation.state", "next.success", "next.reward")}
        frames += len(columns["action"])
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.side_by_side import compare
    from labrecord.imports import import_source

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench"
        write(root, args.episodes, args.steps)

        def baseline(index: int) -> None:
            assert read_with_lerobot(root) == args.episodes * args.steps

        def run_import(index: int) -> None:
            summary = import_source("lerobot", root, Path(tmp) / f"runs{index}")
            assert summary.counts()["imported"] == args.episodes, summary.errors[:3]
        compare({"lerobot": baseline}, run_import, repeat=args.repeat, target="lerobot",
                extra={"episodes": args.episodes, "steps": args.steps})


if __name__ == "__main__":
    main()
