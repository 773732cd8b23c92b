"""``labrecord import lerobot-eval`` of a lerobot-eval output folder against reading it as lerobot leaves it.

One output folder is written once in lerobot 0.6.1's layout (tests/labrecord/imports/
layouts.py's ``lerobot_eval_info``): ``--tasks`` tasks of one group x ``--episodes``
episodes each in ``eval_info.json``, and the first ten episodes of each task rendered as
``videos/<group>_<task>/eval_episode_<k>.mp4`` (``--video-kb`` bytes each).  lerobot has
no reader of its own for this folder, so two baselines are timed, in the same process and
run, alternately with the import, ``--repeat`` times:

* ``json_lookup``: the bare minimum — ``eval_info.json`` read with the standard library,
  every episode's success and rewards taken, every listed video file looked up (``stat``);
* ``json_and_videos``: what a user who keeps the evaluation would otherwise run — the same,
  with every listed video file's bytes read;
* import: :func:`labrecord.imports.import_source` of the folder into a fresh folder (a run
  directory per episode, the videos copied, the population registered).

The 0.5 target is printed against ``json_and_videos``; ``json_lookup`` is printed beside it
for scale (it writes nothing and reads no video, so no writer comes near it).

Example:
    python benchmarks/bench_import_lerobot_eval.py --tasks 10 --episodes 100
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def read_as_lerobot_leaves_it(folder: Path, *, video_bytes: bool = False) -> tuple[int, int]:
    """Episodes and successes, every listed video looked up where lerobot writes it (its
    bytes read when ``video_bytes``)."""
    info: dict[str, Any] = json.loads((folder / "eval_info.json").read_text())
    episodes = successes = 0
    for task in info["per_task"]:
        metrics = task["metrics"]
        name = f"{task['task_group']}_{task['task_id']}"
        for k, (success, _, _) in enumerate(zip(metrics["successes"], metrics["sum_rewards"], metrics["max_rewards"])):
            episodes += 1
            successes += bool(success)
            if k < len(metrics["video_paths"]):
                video = folder / "videos" / name / Path(metrics["video_paths"][k]).name
                if video_bytes:
                    video.read_bytes()
                else:
                    video.stat()
    return episodes, successes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=100, help="episodes per task")
    parser.add_argument("--video-kb", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import os

    from labrecord.imports import import_source
    from tests.labrecord.imports.layouts import lerobot_eval_info as eval_info

    from benchmarks.side_by_side import compare

    total = args.tasks * args.episodes
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "eval"
        folder.mkdir()
        tasks = {("libero_spatial", t): [(float(k % 7), 1.0 if k % 3 else 0.5, k % 3 != 0) for k in range(args.episodes)]
                 for t in range(args.tasks)}
        info = eval_info(tasks, folder, video_bytes=os.urandom(args.video_kb * 1024))
        (folder / "eval_info.json").write_text(json.dumps(info, indent=2))
        successes: list[int] = []

        def lookup(index: int) -> None:
            episodes, success = read_as_lerobot_leaves_it(folder)
            assert episodes == total
            successes.append(success)

        def with_videos(index: int) -> None:
            assert read_as_lerobot_leaves_it(folder, video_bytes=True)[0] == total

        def run_import(index: int) -> None:
            summary = import_source("lerobot-eval", folder, Path(tmp) / f"runs{index}")
            assert summary.counts()["imported"] == total
            assert successes[-1] == sum(row.outcome == "success" for row in summary.rows)
        compare({"json_lookup": lookup, "json_and_videos": with_videos}, run_import, repeat=args.repeat,
                target="json_and_videos", extra={"episodes": total, "videos": min(10, args.episodes) * args.tasks})


if __name__ == "__main__":
    main()
