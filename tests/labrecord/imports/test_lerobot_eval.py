"""Tests for labrecord.imports.lerobot_eval: the output folder of a ``lerobot-eval`` run.

The unit tests run on the core's Python (3.11, no lerobot) on ``eval_info.json`` files of
the shape lerobot 0.6.1 writes (``per_task`` / ``per_group`` / ``overall``, copied from the
real run of the end-to-end test below) and of the older ``per_episode`` shape.

The end-to-end test drives lerobot itself in its Python 3.12 environment (see
tests/exporters/test_lerobot.py's ``lerobot_python``): gym-pusht's PushT environment and a
scripted policy record a small dataset through ``LeRobotDataset`` (pusht_writer.py),
``lerobot-train`` trains a toy ACT policy for two steps on it (no hub, no pretrained
backbone), ``lerobot-eval`` evaluates that checkpoint on PushT for two episodes, and the
import of its output folder is checked against the ``eval_info.json`` lerobot wrote.
"""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.imports import KINDS, import_source
from labrecord.imports.runs import ImportOptions
from labrecord.rundir import read_events, read_manifest
from labrecord.validation import validate_run
from tests.labrecord.imports.layouts import lerobot_eval_info as eval_info

WRITER = Path(__file__).with_name("pusht_writer.py")


def write_info(folder: Path, info: dict[str, Any] | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # json.dump as lerobot does: NaN written bare
    (folder / "eval_info.json").write_text(info if isinstance(info, str) else json.dumps(info, indent=2))
    return folder


def members(out: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "populations" / f"{name}.jsonl").read_text().splitlines()]


def test_the_kind_is_offered_by_the_command() -> None:
    from labrecord.cli.import_ import KIND_NAMES

    assert "lerobot-eval" in KINDS and sorted(KIND_NAMES) == sorted(KINDS)


def test_one_run_per_episode_with_outcome_rewards_seed_and_video(tmp_path: Path) -> None:
    """PushT, two episodes: episode 0 succeeds (sum 12.5, max 1.0), episode 1 fails (sum
    3.25, max 0.5).  Evaluated with --seed 1000, episode k ran with seed 1000 + k: 1000,
    1001.  Each run keeps its episode's video, byte for byte."""
    folder = write_info(tmp_path / "12-00-00_pusht_act", {})
    info = eval_info({("pusht", 0): [(12.5, 1.0, True), (3.25, 0.5, False)]}, folder)
    write_info(folder, info)
    out = tmp_path / "runs"
    summary = import_source("lerobot-eval", folder, out, options=ImportOptions(start_seed=1000))
    assert [(r.record, r.run_id, r.status, r.outcome) for r in summary.rows] == [
        ("pusht_0/episode_0", "lerobot-eval-12-00-00_pusht_act-pusht_0-ep0000", "imported", "success"),
        ("pusht_0/episode_1", "lerobot-eval-12-00-00_pusht_act-pusht_0-ep0001", "imported", "failure")]
    for k, (run_id, sum_reward, max_reward, success) in enumerate(
            (("lerobot-eval-12-00-00_pusht_act-pusht_0-ep0000", 12.5, 1.0, True),
             ("lerobot-eval-12-00-00_pusht_act-pusht_0-ep0001", 3.25, 0.5, False))):
        run = out / run_id
        report, _ = validate_run(run)
        assert report.ok and not report.warnings, [str(f) for f in report.errors + report.warnings]
        manifest = read_manifest(run).manifest
        assert manifest.source is not None and manifest.source.kind == "lerobot-eval"
        assert manifest.source.path == str((folder / "eval_info.json").resolve())
        assert manifest.source.format_version is None  # eval_info.json names no lerobot version
        assert manifest.source.content_hash.startswith("sha256:")
        attrs = manifest.source.attrs
        assert (attrs["sum_reward"], attrs["max_reward"], attrs["success"], attrs["seed"]) == (
            sum_reward, max_reward, success, 1000 + k)
        assert manifest.seeds.task_state == 1000 + k
        assert manifest.task.task_id == "pusht_0" and manifest.evaluation.measurements == "none"
        assert manifest.system.name == "unknown" and manifest.system.action_spec.control_hz is None
        assert (run / "videos" / "episode.mp4").read_bytes() == (folder / "videos" / "pusht_0" / f"eval_episode_{k}.mp4").read_bytes()
        events = read_events(run)
        assert events[-1].reason == ("success" if success else "failure")
    assert [(m["instance_id"], m["task_id"], m["fields"]) for m in members(out, "lerobot-eval-12-00-00_pusht_act")] == [
        ("pusht_0-ep0000", "pusht_0", {"task_group": "pusht", "task_id": 0, "episode": 0, "seed": 1000}),
        ("pusht_0-ep0001", "pusht_0", {"task_group": "pusht", "task_id": 0, "episode": 1, "seed": 1001})]


def test_without_the_start_seed_the_seeds_stay_unknown(tmp_path: Path) -> None:
    folder = write_info(tmp_path / "ev", eval_info({("pusht", 0): [(1.0, 1.0, True)]}))
    import_source("lerobot-eval", folder / "eval_info.json", tmp_path / "runs")
    manifest = read_manifest(tmp_path / "runs" / "lerobot-eval-ev-pusht_0-ep0000").manifest
    assert manifest.seeds.task_state is None and manifest.source.attrs["seed"] is None
    assert not (tmp_path / "runs" / "lerobot-eval-ev-pusht_0-ep0000" / "videos").exists()  # listed, not in the folder
    assert manifest.source.attrs["video_path"].endswith("videos/pusht_0/eval_episode_0.mp4")


def test_reimport_is_idempotent_and_other_content_is_refused(tmp_path: Path) -> None:
    folder = write_info(tmp_path / "ev", eval_info({("pusht", 0): [(1.0, 1.0, True), (0.0, 0.0, False)]}))
    out = tmp_path / "runs"
    assert import_source("lerobot-eval", folder, out).counts()["imported"] == 2
    assert import_source("lerobot-eval", folder, out).counts() == {"imported": 0, "unchanged": 2, "error": 0,
                                                                    "missing": 0}
    write_info(folder, eval_info({("pusht", 0): [(1.0, 1.0, True), (0.5, 0.5, True)]}))
    again = import_source("lerobot-eval", folder, out)
    assert again.counts() == {"imported": 0, "unchanged": 1, "error": 1, "missing": 0}
    assert "already holds other content" in again.errors[0] and "pusht_0/episode_1" in again.errors[0]


def test_malformed_entries_are_one_error_each_and_the_rest_imports(tmp_path: Path) -> None:
    """Task pusht_0 lists three rewards but two successes: episode 2 has no success;
    episode 1's success is the string "yes"; task pusht_1's episode 0 has a reward "high".
    Of the six declared members (two tasks x three), three import, three are errors, none
    is written as a failure."""
    info = eval_info({("pusht", 0): [(1.0, 1.0, True), (2.0, 1.0, False), (3.0, 1.0, False)],
                      ("pusht", 1): [(1.0, 1.0, True), (0.0, 0.0, False), (0.5, 0.5, True)]})
    info["per_task"][0]["metrics"]["successes"] = [True, "yes"]
    info["per_task"][1]["metrics"]["sum_rewards"][0] = "high"
    folder = write_info(tmp_path / "ev", info)
    summary = import_source("lerobot-eval", folder, tmp_path / "runs")
    where = str(folder / "eval_info.json")
    assert summary.errors == [
        f"{where}: pusht_0/episode_1: success is 'yes' (per_task[0].metrics.successes[1]), expected true or false",
        f"{where}: pusht_0/episode_2: no success (per_task[0].metrics.successes[2])",
        f"{where}: pusht_1/episode_0: sum_reward is 'high' (per_task[1].metrics.sum_rewards[0]), expected a number"]
    assert [(r.record, r.outcome) for r in summary.rows if r.status == "imported"] == [
        ("pusht_0/episode_0", "success"), ("pusht_1/episode_1", "failure"), ("pusht_1/episode_2", "success")]
    assert len(members(tmp_path / "runs", "lerobot-eval-ev")) == 6
    from labrecord.scorers.corpus import score_corpus

    (group,) = [g for g in score_corpus(tmp_path / "runs", resamples=0)["groups"] if g["identity"]["task_id"] == "pusht_0"]
    assert group["coverage"]["completion.physical"] == {"resolved": 1, "registered": 3}


@pytest.mark.parametrize("text, message", [
    ("{\"per_task\": [", "not JSON"),
    ("[1, 2]", "holds a JSON list"),
    ("{\"overall\": {}}", "neither a per_task nor a per_episode list"),
])
def test_an_unreadable_file_is_one_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    folder = write_info(tmp_path / "ev", text)
    with pytest.raises(LabrecordError, match=message) as error:
        import_source("lerobot-eval", folder, tmp_path / "runs")
    assert str(folder / "eval_info.json") in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(LabrecordError, match="no eval_info.json"):
        import_source("lerobot-eval", tmp_path, tmp_path / "runs")


def test_a_broken_task_entry_is_one_error_and_the_other_task_imports(tmp_path: Path) -> None:
    info = eval_info({("pusht", 0): [(1.0, 1.0, True)], ("pusht", 1): [(1.0, 1.0, False)]})
    info["per_task"][0]["metrics"] = "lost"
    summary = import_source("lerobot-eval", write_info(tmp_path / "ev", info), tmp_path / "runs")
    assert summary.errors == [f"{tmp_path / 'ev' / 'eval_info.json'}: per_task[0] metrics is str, expected an object"]
    assert [(r.record, r.status) for r in summary.rows if r.status != "error"] == [
        ("pusht_1/episode_0", "imported"), ("pusht_0-ep0000", "missing")]


def test_episodes_counted_but_not_listed_stay_missing(tmp_path: Path) -> None:
    """The group declares n_episodes 4 for its one task, whose lists hold 2: episodes 2 and
    3 are missing members, never failures.  Scored: 1 success, 1 failure of 4 members, so
    the success rate lies between 1/4 and 3/4."""
    info = eval_info({("pusht", 0): [(1.0, 1.0, True), (0.0, 0.0, False)]})
    info["per_group"]["pusht"]["n_episodes"] = 4
    summary = import_source("lerobot-eval", write_info(tmp_path / "ev", info), tmp_path / "runs")
    assert summary.counts() == {"imported": 2, "unchanged": 0, "error": 0, "missing": 2}
    assert [r.record for r in summary.rows if r.status == "missing"] == ["pusht_0-ep0002", "pusht_0-ep0003"]
    from labrecord.scorers.corpus import score_corpus

    (group,) = score_corpus(tmp_path / "runs", resamples=0)["groups"]
    assert [m["instance_id"] for m in group["coverage"]["missing"]] == ["pusht_0-ep0002", "pusht_0-ep0003"]
    metrics = group["metrics"]
    assert (metrics["completion.physical.lower"]["value"], metrics["completion.physical.upper"]["value"]) == (0.25, 0.75)


def test_a_task_shorter_than_the_others_has_missing_episodes(tmp_path: Path) -> None:
    """lerobot-eval runs n_episodes on every task: task 1 lists one of the three."""
    info = eval_info({("libero_spatial", 0): [(1.0, 1.0, True)] * 3, ("libero_spatial", 1): [(0.0, 0.0, False)]})
    summary = import_source("lerobot-eval", write_info(tmp_path / "ev", info), tmp_path / "runs")
    assert summary.counts() == {"imported": 4, "unchanged": 0, "error": 0, "missing": 2}
    assert [r.record for r in summary.rows if r.status == "missing"] == ["libero_spatial_1-ep0001",
                                                                          "libero_spatial_1-ep0002"]


def test_a_nan_reward_is_kept_as_null(tmp_path: Path) -> None:
    info = eval_info({("pusht", 0): [(math.nan, math.nan, False)]})
    import_source("lerobot-eval", write_info(tmp_path / "ev", info), tmp_path / "runs")
    attrs = read_manifest(tmp_path / "runs" / "lerobot-eval-ev-pusht_0-ep0000").manifest.source.attrs
    assert (attrs["sum_reward"], attrs["max_reward"], attrs["success"]) == (None, None, False)


def test_the_older_per_episode_layout_keeps_its_seeds(tmp_path: Path) -> None:
    """lerobot <= 0.3 wrote eval_policy's own result: per_episode entries with their seed,
    and videos/eval_episode_<k>.mp4.  Episode 2 is absent (a gap in episode_ix): missing.
    Stating --start-seed 100 agrees with episodes 0 and 3 (seeds 100, 103) and disagrees
    with episode 1, whose entry says 7: an error for that episode."""
    folder = tmp_path / "old"
    (folder / "videos").mkdir(parents=True)
    (folder / "videos" / "eval_episode_0.mp4").write_bytes(b"video 0")
    info = {"per_episode": [
        {"episode_ix": 0, "sum_reward": 10.0, "max_reward": 1.0, "success": True, "seed": 100},
        {"episode_ix": 1, "sum_reward": 1.0, "max_reward": 0.2, "success": False, "seed": 7},
        {"episode_ix": 3, "sum_reward": 2.0, "max_reward": 0.4, "success": False, "seed": 103}],
        "aggregated": {"avg_sum_reward": 4.33, "avg_max_reward": 0.53, "pc_success": 33.3, "eval_s": 3.0,
                       "eval_ep_s": 1.0},
        "video_paths": ["outputs/eval/old/videos/eval_episode_0.mp4"]}
    write_info(folder, info)
    plain = import_source("lerobot-eval", folder, tmp_path / "runs")
    assert [(r.record, r.status, r.outcome) for r in plain.rows] == [
        ("episode_0", "imported", "success"), ("episode_1", "imported", "failure"),
        ("episode_3", "imported", "failure"), ("ep0002", "missing", None)]
    run = tmp_path / "runs" / "lerobot-eval-old-ep0000"
    assert read_manifest(run).manifest.seeds.task_state == 100
    assert (run / "videos" / "episode.mp4").read_bytes() == b"video 0"
    assert read_manifest(tmp_path / "runs" / "lerobot-eval-old-ep0001").manifest.seeds.task_state == 7
    stated = import_source("lerobot-eval", folder, tmp_path / "stated", options=ImportOptions(start_seed=100))
    assert stated.errors == [f"{folder / 'eval_info.json'}: episode_1: the file gives seed 7, --start-seed 100 gives 101"]
    assert [m["fields"]["seed"] for m in members(tmp_path / "stated", "lerobot-eval-old")] == [100, 101, 102, 103]


@settings(max_examples=25, deadline=None)
@given(tasks=st.lists(st.lists(st.booleans(), min_size=0, max_size=4), min_size=1, max_size=3),
       declared=st.integers(min_value=0, max_value=6))
def test_every_declared_episode_is_a_run_or_missing(tmp_path_factory: pytest.TempPathFactory, tasks: list[list[bool]],
                                                    declared: int) -> None:
    """For any tasks' success lists and a group count: the declared set per task is the
    longest list or the group count shared among the tasks, whichever is larger; each
    listed episode is one run with its outcome, and the rest of the set is missing."""
    folder = tmp_path_factory.mktemp("ev")
    info = eval_info({("g", i): [(float(s), float(s), s) for s in successes] for i, successes in enumerate(tasks)})
    count = declared * len(tasks)
    info["per_group"]["g"]["n_episodes"] = count
    summary = import_source("lerobot-eval", write_info(folder, info), folder / "runs", options=ImportOptions(threads=1))
    per_task = max(max(len(t) for t in tasks), declared)
    outcomes = {r.record: r.outcome for r in summary.rows if r.status == "imported"}
    assert outcomes == {f"g_{i}/episode_{k}": "success" if s else "failure"
                        for i, successes in enumerate(tasks) for k, s in enumerate(successes)}
    assert summary.counts()["missing"] == per_task * len(tasks) - sum(len(t) for t in tasks)
    assert not summary.errors
    if per_task:
        assert len(members(folder / "runs", "lerobot-eval-" + folder.name)) == per_task * len(tasks)


#: toy ACT on PushT's state-only observations: every option a documented ACTConfig field
TINY_ACT = ["--policy.dim_model=32", "--policy.n_heads=2", "--policy.dim_feedforward=64",
            "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1", "--policy.n_vae_encoder_layers=1",
            "--policy.latent_dim=8", "--policy.chunk_size=10", "--policy.n_action_steps=10"]
#: what every lerobot-eval below is given: PushT with the observations the dataset has,
#: 20-step episodes rendered at 96x96
PUSHT = ["--env.type=pusht", "--env.obs_type=environment_state_agent_pos", "--env.episode_length=20",
         "--env.visualization_width=96", "--env.visualization_height=96"]
SEED = 1000


def lerobot_program(python: str, name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    from tests.exporters.conftest import require_reader

    program = Path(python).parent / name
    require_reader(program.exists(), f"{program} (lerobot[training])", "bash scripts/install-lerobot-venv.sh")
    done = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of ``lerobot-eval`` run on a toy ACT that ``lerobot-train`` trained
    for two steps on a PushT dataset recorded here: two episodes, seeds 1000 and 1001."""
    from tests.exporters.conftest import require_reader
    from tests.exporters.test_lerobot import lerobot_python

    python = lerobot_python(checkout=False)
    has_pusht = subprocess.run([python, "-c", "import gym_pusht"], capture_output=True, timeout=120)
    require_reader(has_pusht.returncode == 0, f"gym-pusht in {python}", "bash scripts/install-lerobot-venv.sh")
    root = tmp_path_factory.mktemp("lerobot-eval")
    written = subprocess.run([python, str(WRITER), str(root / "pusht"), "2", "20"], capture_output=True, text=True,
                             timeout=600, cwd=root)
    assert written.returncode == 0, written.stderr[-3000:]
    lerobot_program(python, "lerobot-train", "--dataset.repo_id=local/pusht", f"--dataset.root={root / 'pusht'}",
                    "--dataset.video_backend=pyav", "--policy.type=act", "--policy.device=cpu",
                    "--policy.push_to_hub=false", "--policy.pretrained_backbone_weights=null", *TINY_ACT, "--steps=2",
                    "--batch_size=2", "--num_workers=0", "--save_freq=2", "--wandb.enable=false",
                    f"--output_dir={root / 'train'}", cwd=root)
    checkpoint = root / "train" / "checkpoints" / "000002" / "pretrained_model"
    out = root / "eval"
    lerobot_program(python, "lerobot-eval", f"--policy.path={checkpoint}", *PUSHT, "--eval.n_episodes=2",
                    "--eval.batch_size=2", "--eval.use_async_envs=false", "--policy.device=cpu", f"--seed={SEED}",
                    f"--output_dir={out}", cwd=root)
    return out


@pytest.mark.slow
def test_import_of_a_real_lerobot_eval_run(evaluated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder lerobot-eval wrote, imported from the core's Python: one run per episode
    with the outcome and rewards of eval_info.json, seeds 1000 + k, the episode's video,
    the source named; the runs validate, score (2 episodes of 2 registered) and report."""
    from labrecord.cli import main

    info = json.loads((evaluated / "eval_info.json").read_text())
    (task,) = info["per_task"]
    assert (task["task_group"], task["task_id"]) == ("pusht", 0)
    out = tmp_path / "runs"
    with pytest.raises(SystemExit) as done:
        main(["import", "lerobot-eval", str(evaluated), "--out", str(out), "--start-seed", str(SEED), "--json"])
    assert done.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == {"imported": 2, "unchanged": 0, "error": 0, "missing": 0}
    metrics = task["metrics"]
    for k, row in enumerate(summary["runs"]):
        assert row["record"] == f"pusht_0/episode_{k}"
        assert row["outcome"] == ("success" if metrics["successes"][k] else "failure")
        run = out / row["run_id"]
        report, _ = validate_run(run)
        assert report.ok and not report.warnings, [str(f) for f in report.errors + report.warnings]
        manifest = read_manifest(run).manifest
        source = manifest.source
        assert source is not None and source.kind == "lerobot-eval" and source.format_version is None
        assert source.path == str((evaluated / "eval_info.json").resolve()) and source.record == row["record"]
        assert (source.attrs["sum_reward"], source.attrs["max_reward"]) == (metrics["sum_rewards"][k],
                                                                             metrics["max_rewards"][k])
        assert manifest.seeds.task_state == SEED + k and manifest.task.task_id == "pusht_0"
        video = Path(metrics["video_paths"][k])
        assert video.name == f"eval_episode_{k}.mp4"
        assert (run / "videos" / "episode.mp4").read_bytes() == (evaluated / "videos" / "pusht_0" / video.name).read_bytes()
    with pytest.raises(SystemExit) as done:
        main(["import", "lerobot-eval", str(evaluated), "--out", str(out), "--start-seed", str(SEED), "--json"])
    assert json.loads(capsys.readouterr().out)["counts"] == {"imported": 0, "unchanged": 2, "error": 0, "missing": 0}
    with pytest.raises(SystemExit) as done:
        main(["score", str(out), "--json"])
    assert done.value.code == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    successes = sum(metrics["successes"])
    assert group["coverage"]["completion.physical"] == {"resolved": 2, "registered": 2}
    assert group["metrics"]["completion.physical"]["num"] == successes and group["coverage"]["missing"] == []
    assert group["coverage"]["audited"] == {"audited": 0, "runs": 2}
    with pytest.raises(SystemExit) as done:
        main(["report", str(out), "--out", str(tmp_path / "report.html")])
    assert done.value.code == 0 and "pusht_0" in (tmp_path / "report.html").read_text()
