"""``labrecord import vla-eval`` against reading the same recording with vla-eval itself.

A vla-eval recording (``recording-<eval_id>.sqlite``) of ``--episodes`` episodes of
``--steps`` steps is written once through vla-eval's own writer, the way its orchestrator
does in a sharded run: ``RecordingStore`` with the entry's metadata and work queue, one
``EpisodeRecorder`` per work item (its steps recorded, then closed with the episode's
status and metrics), the item finished, the shard marked complete.  Then, in the same
process and run:

* baseline: ``vla_eval.results.export.export_db`` — vla-eval's reader of a recording (a
  snapshot of the file, every last episode row, its steps written to the per-episode
  ``.jsonl``, the aggregate per benchmark);
* import: :func:`labrecord.imports.import_source` of the recording into a fresh folder (a
  run directory per episode with ``source.json``, the population registered).

Prints both wall times and the ratio baseline / import of each ``--repeat``, then their
ranges and whether the ratio reaches the target, 0.5 (benchmarks/side_by_side.py).

Example:
    python benchmarks/bench_import_vla_eval.py --episodes 1000 --steps 20
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EVAL_ID = "bench"
TASKS = 10


def write(out: Path, episodes: int, steps: int) -> Path:
    """The recording of one shard that ran ``episodes`` work items over ``TASKS`` tasks."""
    from vla_eval import __version__
    from vla_eval.recording import (
        DEFAULT_FILENAME_STEM, EpisodeRecorder, RecordingStore, db_path_for_eval, recording_filename_context,
        serializable_task_kwargs,
    )

    per_task = max(1, episodes // TASKS)
    work = [(t, e) for t in range(TASKS) for e in range(per_task)][:episodes]
    db = db_path_for_eval(out, EVAL_ID)
    store = RecordingStore(db)
    entry, safe = f"{EVAL_ID}-BenchBenchmark", "BenchBenchmark"
    sid = str(uuid.uuid4())
    with store.transaction():  # one commit: vla-eval's per-episode fsyncs are not what is measured
        store.set_run_metadata(EVAL_ID, {})
        store.upsert_eval_metadata(entry, safe, {
            "benchmark": "bench:BenchBenchmark", "mode": "sync", "harness_version": __version__,
            "config": {"episodes_per_task": per_task, "max_steps": steps, "params": {"seed": 7}},
            "metric_keys": {"success": "mean"}, "server_info": {"name": "zero"}})
        store.seed_queue(entry, [t for t, _ in work])
        for item, (task_idx, episode) in enumerate(work):
            task = {"name": f"task-{task_idx}", "suite": "bench", "episode_idx": episode}
            recorder = EpisodeRecorder(
                store=store, sid=sid, eid=str(uuid.uuid4()), eval_id=entry, output_dir=out / "episodes",
                filename_stem=DEFAULT_FILENAME_STEM, context={**serializable_task_kwargs(task), "task_idx": task_idx},
                filename_context=recording_filename_context(benchmark_safe_name=safe, task_idx=task_idx,
                                                            episode_id=episode))
            for i in range(steps):
                recorder.record_step(action=[0.01 * i, -0.02 * i, 0.5], reward=0.0, t=i + 1)
            status = "error" if item % 97 == 5 else ("success" if item % 3 else "fail")
            recorder.close(status=status, metrics={"success": status == "success"}, task_name=task["name"],
                           episode_id=episode, steps=steps, elapsed_sec=0.25 + item * 1e-3,
                           failure_reason="env_step" if status == "error" else None,
                           failure_detail="simulator lost contact" if status == "error" else None)
            store.finish(entry, item)
        store.set_shard_complete(entry, 0, 1, complete=True)
    store.close()
    return db


def read_with_vla_eval(db: Path, out: Path) -> int:
    from vla_eval.results.export import export_db

    aggregates = export_db(db, out)
    return sum(int(a["num_episodes_total"]) for a in aggregates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.side_by_side import compare
    from labrecord.imports import import_source

    with tempfile.TemporaryDirectory() as tmp:
        db = write(Path(tmp) / "results", args.episodes, args.steps)

        def baseline(index: int) -> None:
            assert read_with_vla_eval(db, Path(tmp) / "results") == args.episodes

        def run_import(index: int) -> None:
            summary = import_source("vla-eval", db, Path(tmp) / f"runs{index}")
            assert summary.counts()["imported"] == args.episodes, summary.counts()
        compare({"vla_eval_export": baseline}, run_import, repeat=args.repeat, target="vla_eval_export",
                extra={"episodes": args.episodes, "steps": args.steps})


if __name__ == "__main__":
    main()
