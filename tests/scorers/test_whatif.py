"""What-if re-scoring: stored runs replayed under changed contract thresholds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from labrecord.errors import LabrecordError
from labrecord.rundir import EVENTS_FILE, iter_events
from labrecord.scorers.audit import audit_run
from labrecord.scorers.whatif import label_of, parse_params, rescore_runs
from tests.sim.runs import reference_runs_fixture
from tests.support import require_module


def _run_weighing(*args, **kwargs):
    require_module("mujoco", "pip install 'labrecord[sim]'")
    from labrecord.sim import run_weighing

    return run_weighing(*args, **kwargs)


reference_runs = reference_runs_fixture(_run_weighing, cameras=False)


@pytest.fixture(scope="module")
def weighing_runs(reference_runs: list[Path]) -> Path:
    """Two basic reference weighing episodes, recorded once (tests/sim/runs.py)."""
    return reference_runs[0].parent


def test_parse_params_and_label():
    params = parse_params(["weighing.success_tol_g=0.5", "weighing.dwell_s=2", "rack.dwell_s=1.5"])
    assert params == {"weighing": {"success_tol_g": 0.5, "dwell_s": 2.0}, "rack": {"dwell_s": 1.5}}
    assert label_of(params) == "rack.dwell_s=1.5,weighing.dwell_s=2,weighing.success_tol_g=0.5"


@pytest.mark.parametrize("texts, match", [
    (["weighing.tau_f_s=0.5", "weighing.drop_height_m=0.1", "weighing.dwell_s=2"],
     r"cannot re-score weighing\.tau_f_s, weighing\.drop_height_m after the fact: .*what the policy saw"),
    (["centrifuge.max_axial_deg=20"], r"cannot re-score centrifuge\.max_axial_deg .*re-scorable: centrifuge: dwell_s"),
    (["weighing.nope=1"], r"contract weighing/1 has no threshold 'nope'"),
    (["kitchen.dwell_s=1"], r"no task family 'kitchen'"),
    (["weighing.success_tol_g"], r"expected FAMILY\.THRESHOLD=NUMBER"),
    (["weighing.success_tol_g=lots"], r"'lots' is not a number"),
])
def test_parse_params_refuses_in_one_line(texts, match):
    with pytest.raises(LabrecordError, match=match) as error:
        parse_params(texts)
    assert "\n" not in str(error.value)


def test_unchanged_thresholds_reproduce_the_recorded_events(weighing_runs, tmp_path):
    """Re-scoring under the registered value replays exactly what was recorded: the copy's
    events are byte-identical and it passes the replay audit (its contract hash is the
    registered one again)."""
    results = rescore_runs(weighing_runs, {"weighing": {"success_tol_g": 1.0}}, tmp_path / "same")
    assert len(results) == 2 and all(r["rescored"] for r in results)
    for result in results:
        copy = Path(result["run_dir"])
        original = weighing_runs / copy.name
        assert (copy / EVENTS_FILE).read_bytes() == (original / EVENTS_FILE).read_bytes()
        assert audit_run(copy).ok
        manifest = json.loads((copy / "run.json").read_text())
        assert manifest["task"]["version"] == "weighing/1 whatif(weighing.success_tol_g=1)"
        assert manifest["rescore"]["original_task_version"] == "weighing/1"
    assert (tmp_path / "same" / "populations").is_dir()


def test_a_stricter_tolerance_past_the_recording_is_unresolved(weighing_runs, tmp_path):
    """The recorder stopped each reference episode once its recorded success (within 1 g,
    held 3 s) completed.  Within 0.5 g the filtered reading settles a little later, so the
    3 s dwell starts later and would end after the recording: the outcome is undetermined,
    never a failure — reason ``beyond_recording``, the run unresolved."""
    results = rescore_runs(weighing_runs, {"weighing": {"success_tol_g": 0.5}}, tmp_path / "tight")
    for result in results:
        events = [e for _, e in iter_events(Path(result["run_dir"]) / EVENTS_FILE)]
        original = [e for _, e in iter_events(weighing_runs / Path(result["run_dir"]).name / EVENTS_FILE)]
        end = [e for e in events if e.__struct_config__.tag == "episode_end"][0]
        recorded_end = [e for e in original if e.__struct_config__.tag == "episode_end"][0]
        assert recorded_end.physical_complete and recorded_end.reason == "success"
        starts = [e.t for e in events if e.__struct_config__.tag == "dwell" and e.state == "start"]
        recorded_starts = [e.t for e in original if e.__struct_config__.tag == "dwell" and e.state == "start"]
        assert starts[-1] > recorded_starts[-1] and starts[-1] + 3.0 > end.t  # the dwell would end past the recording
        assert (end.physical_complete, end.valid_complete, end.reason) == (False, False, "beyond_recording")
        assert result["reason"].startswith("re-scored outcome beyond the recording: episode 0 was stopped at its "
                                           "recorded success")
        # the opportunities and choices the policy answered are unchanged
        kept = [(e.__struct_config__.tag, e.t) for e in events if e.__struct_config__.tag in ("opportunity", "choice")]
        assert kept == [(e.__struct_config__.tag, e.t) for e in original
                        if e.__struct_config__.tag in ("opportunity", "choice")]


def test_a_looser_tolerance_completes_sooner(weighing_runs, tmp_path):
    """Within 5 g the reading is inside the tolerance sooner: the dwell starts and completes
    earlier than recorded, and the episode stays complete (a determined outcome)."""
    for result in rescore_runs(weighing_runs, {"weighing": {"success_tol_g": 5.0}}, tmp_path / "loose"):
        assert result["reason"] is None
        events = [e for _, e in iter_events(Path(result["run_dir"]) / EVENTS_FILE)]
        original = [e for _, e in iter_events(weighing_runs / Path(result["run_dir"]).name / EVENTS_FILE)]

        def completed(stream: list) -> float:
            return [e.t for e in stream if e.__struct_config__.tag == "dwell" and e.state == "complete"][0]

        assert completed(events) < completed(original)
        end = [e for e in events if e.__struct_config__.tag == "episode_end"][0]
        assert (end.physical_complete, end.reason) == (True, "success")


def test_score_and_diff_compare_the_rescore_with_the_original(weighing_runs, tmp_path):
    from click.testing import CliRunner

    from labrecord.cli import cli

    runner = CliRunner()
    out = tmp_path / "whatif.json"
    result = runner.invoke(cli, ["score", str(weighing_runs), "--contract-param", "weighing.success_tol_g=0.5",
                                 "--json", "--resamples", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    group = json.loads(out.read_text())["groups"][0]
    assert group["identity"]["task_version"] == "weighing/1 whatif(weighing.success_tol_g=0.5)"
    physical = group["metrics"]["completion.physical"]
    assert physical["value"] is None  # both undetermined: bounds, never 0 %
    assert (group["metrics"]["completion.physical.lower"]["value"], group["metrics"]["completion.physical.upper"]["value"]) == (0.0, 1.0)
    assert [r["reason"].split(":")[0] for r in group["coverage"]["unresolved_runs"]] == ["replay audit"] * 2

    diff = runner.invoke(cli, ["diff", str(weighing_runs), str(weighing_runs), "--contract-param",
                               "weighing.success_tol_g=0.5", "--json", "--resamples", "0"])
    assert diff.exit_code == 0, diff.output
    report = json.loads(diff.output)
    assert report["compared"] == ["task_version", "contract_hash"]
    physical = report["binary"]["completion.physical"]
    assert (physical["n"], physical["unresolved"], physical["lower"], physical["upper"]) == (0, 2, -1.0, 0.0)
    assert report["explanation"]["verdict"] == "no_flips" and report["explanation"]["resolved_pairs"] == 0

    loose = runner.invoke(cli, ["diff", str(weighing_runs), str(weighing_runs), "--contract-param",
                                "weighing.success_tol_g=5", "--json", "--resamples", "0"])
    report = json.loads(loose.output)
    assert report["pairs"] == {"resolved": 2, "unresolved": 0}
    assert report["binary"]["completion.physical"]["difference"] == 0.0
    assert report["continuous"]["duration_s"]["difference"] == 0.0  # the recorded episode ends where it ended

    inside = next(p for p in weighing_runs.iterdir() if (p / "run.json").is_file()) / "whatif.json"
    clash = runner.invoke(cli, ["score", str(weighing_runs), "--contract-param", "weighing.success_tol_g=0.5",
                                "--out", str(inside)])
    assert clash.exit_code == 1 and "lies inside the input" in clash.output and not inside.exists()

    refused = runner.invoke(cli, ["score", str(weighing_runs), "--contract-param", "weighing.stable_range_g=2"])
    assert refused.exit_code == 1
    assert refused.output.startswith("Error: cannot re-score weighing.stable_range_g after the fact")


def test_runs_that_cannot_be_replayed_stay_unresolved_and_other_families_are_copied(tmp_path):
    """A weighing run the contract cannot replay (no task variant, no measurements) is not
    re-scored: its copy keeps the recorded events and counts as unresolved with the reason,
    naming the file; a rack run is copied unchanged."""
    from labrecord.examples import write_example_run
    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.whatif import open_rescored

    runs = tmp_path / "runs"
    write_example_run(runs, "w0")
    write_example_run(runs, "k0", family="rack", task_id="rack-basic")
    params = parse_params(["weighing.success_tol_g=0.5"])
    con, _ = open_rescored(runs, params, tmp_path / "work", audit=False)
    reasons = dict(con.execute("SELECT run_id, reason FROM audits").fetchall())
    assert list(reasons) == ["w0"]
    assert reasons["w0"] == f"cannot re-score: {runs / 'w0' / 'run.json'}: task.variant.target_g: expected a number, got None"
    assert (tmp_path / "work" / "k0" / EVENTS_FILE).read_bytes() == (runs / "k0" / EVENTS_FILE).read_bytes()
    groups = {g["identity"]["task_version"]: g for g in score_corpus(con, resamples=0)["groups"]}
    assert set(groups) == {"1 whatif(weighing.success_tol_g=0.5)", "1"}
    unresolved = groups["1 whatif(weighing.success_tol_g=0.5)"]["coverage"]["unresolved_runs"]
    assert unresolved[0]["run_id"] == "w0" and "cannot re-score" in unresolved[0]["reason"]
