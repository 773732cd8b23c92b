"""vla-eval's own SyncEpisodeRunner drives the benchmark of a family against a model server
built on vla-eval's PredictModelServer, served on 127.0.0.1 by vla-eval's serve_async."""
import asyncio
import json
from pathlib import Path

import numpy as np

from labrecord.rundir import read_manifest
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.validation import validate_run
from tests.support import require_module

require_module("vla_eval", 'pip install "labrecord[vla-eval]"')

from vla_eval.connection import Connection  # noqa: E402
from vla_eval.model_servers.predict import PredictModelServer  # noqa: E402
from vla_eval.model_servers.serve import serve_async  # noqa: E402
from vla_eval.registry import resolve_import_string  # noqa: E402
from vla_eval.runners.sync_runner import SyncEpisodeRunner  # noqa: E402
from vla_eval.specs import GRIPPER_CLOSE_POS, IMAGE_RGB, LANGUAGE, POSITION_DELTA, ROTATION_AA  # noqa: E402

IMPORT_STRING = "labrecord.sim.vla_eval_benchmark:BenchBenchmark"


class StillModel(PredictModelServer):
    """Answers every observation with 'stay, gripper open' and keeps what it received;
    the first ``bad`` answers have 3 columns instead of 7."""

    def __init__(self, bad: int = 0) -> None:
        super().__init__()
        self.seen: list[dict] = []
        self.bad = bad

    def predict(self, obs, ctx):
        self.seen.append(obs)
        if len(self.seen) <= self.bad:
            return {"actions": np.zeros(3, dtype=np.float32)}
        return {"actions": np.asarray([0, 0, 0, 0, 0, 0, -1], dtype=np.float32)}

    def get_action_spec(self):
        return {"position": POSITION_DELTA, "rotation": ROTATION_AA, "gripper": GRIPPER_CLOSE_POS}

    def get_observation_spec(self):
        return {"front": IMAGE_RGB, "language": LANGUAGE}


async def drive(out_dir: Path, model: StillModel, episodes: int, max_steps: int | None = None,
                family: str = "weighing") -> tuple[list, object]:
    import anyio

    benchmark_cls = resolve_import_string(IMPORT_STRING)
    assert benchmark_cls.render_backends == frozenset({"cpu"})
    benchmark = benchmark_cls(family=family, out_dir=str(out_dir), seed=1, size=32, max_time_s=0.5)
    results = []
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_async, model, "127.0.0.1", 0)
        conn = Connection(f"ws://127.0.0.1:{port}", timeout=30)
        await conn.connect(benchmark=IMPORT_STRING)
        (task,) = benchmark.get_tasks()
        for _ in range(episodes):
            results.append(await SyncEpisodeRunner().run_episode(benchmark, task, conn, max_steps=max_steps))
        await conn.close()
        tg.cancel_scope.cancel()
    benchmark.cleanup()
    return results, benchmark


def test_sync_runner_episodes_write_scored_runs(tmp_path) -> None:
    """0.5 s at 20 Hz: 1 settling period + 9 model steps per episode, so the runner counts
    9 steps; each episode is the next registered instance and its run validates and audits."""
    model = StillModel()
    results, benchmark = asyncio.run(drive(tmp_path, model, episodes=2, max_steps=None))
    assert [r["steps"] for r in results] == [9, 9]
    assert [r["metrics"]["success"] for r in results] == [False, False]
    runs = [Path(p) for p in benchmark.run_dirs]
    assert [p.name for p in runs] == ["weighing-basic-vla-eval-libero-s1-e000", "weighing-basic-vla-eval-libero-s1-e001"]
    for run in runs:
        report, _ = validate_run(run)
        assert report.ok, [str(f) for f in report.errors]
        assert audit_run(run).ok
        assert read_manifest(run).manifest.system.action_spec.control_hz == 20.0
        assert len((run / "observations.jsonl").read_text().splitlines()) == 9
    first = model.seen[0]
    assert sorted(first["images"]) == ["front", "wrist"] and first["images"]["front"].shape == (32, 32, 3)
    assert first["states"].shape == (8,) and first["task_description"].startswith("Bring the balance reading")
    assert "display_reading" not in json.dumps(sorted(first))
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["coverage"]["valid_runs"] == 2


def test_configure_render_selects_osmesa(monkeypatch) -> None:
    for name in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "LIBGL_ALWAYS_SOFTWARE"):
        monkeypatch.delenv(name, raising=False)
    cls = resolve_import_string(IMPORT_STRING)
    applied = cls.configure_render("cpu")
    assert applied["MUJOCO_GL"] == "osmesa"  # monkeypatch restores the renderer afterwards


def test_a_reply_of_the_wrong_shape_is_an_interface_failure(tmp_path) -> None:
    """The first answer has 3 columns: a failure event (reason interface), a receipt naming
    'actions'; the robot holds for that step and the episode goes on (still 9 steps)."""
    from labrecord.models import Failure
    from labrecord.rundir import read_events

    results, benchmark = asyncio.run(drive(tmp_path, StillModel(bad=1), episodes=1))
    assert results[0]["steps"] == 9 and benchmark.interface_failures == 1
    run = Path(benchmark.run_dirs[0])
    assert [e.reason for e in read_events(run) if isinstance(e, Failure)] == ["interface"]
    first = json.loads((run / "observations.jsonl").read_text().splitlines()[0])
    assert first["interface_field"] == "actions" and first["chunk_len"] == 0
    report, _ = validate_run(run)
    assert report.ok and audit_run(run).ok


def test_a_tube_bench_runs_through_the_same_benchmark(tmp_path) -> None:
    """The rack family through vla-eval: its task, its run ids, a validating run."""
    results, benchmark = asyncio.run(drive(tmp_path, StillModel(), episodes=1, family="rack"))
    assert benchmark.get_tasks() == [{"name": "rack-basic", "suite": "labrecord"}]
    assert [r["steps"] for r in results] == [9]
    (run,) = [Path(p) for p in benchmark.run_dirs]
    assert run.name == "rack-basic-vla-eval-libero-s1-e000"
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    assert read_manifest(run).manifest.task.family == "rack"
