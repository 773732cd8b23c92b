"""The simulator writes the same run files for the same seeds as the recorded reference.

``data/run-digests.json`` holds, per case, the digests (:func:`tests.sim.runs.run_digests`,
wall-clock fields left out) of episode 0 of a reference recording.  Recording the case
again must give the same digest for every file: a restructuring of the benches, the
policies or the episode pipeline that changes any recorded bit fails here.  Regenerate
the file only for a change that is meant to alter what is recorded.

The digests hold only where the file's ``environment`` (library versions and CPU, see
:func:`tests.sim.runs.digest_environment`) is this machine's: floating-point results of the
same code differ across MuJoCo releases and instruction sets.  Elsewhere the comparison is
skipped with the difference named; regenerate the file there to compare.
"""
import json
from pathlib import Path

import pytest

from labrecord.cli import main
from tests.sim.runs import digest_environment, run_digests

DIGESTS = json.loads((Path(__file__).parent / "data" / "run-digests.json").read_text())
#: case -> the ``labrecord sim`` arguments that record it (one episode, seed 0)
CASES = {
    "weighing/basic-clumsy": ("weighing", "--condition", "basic", "--policy", "clumsy", "--no-cameras"),
    "weighing/cam32": ("weighing", "--condition", "basic", "--policy", "reference", "--size", "32"),
    "centrifuge/basic-reference": ("centrifuge", "--condition", "basic", "--policy", "reference", "--no-cameras"),
    "rack/extended-reference": ("rack", "--condition", "extended", "--policy", "reference", "--no-cameras"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_seed_records_the_same_files(case, tmp_path):
    with pytest.raises(SystemExit) as done:
        main(["sim", *CASES[case], "--episodes", "1", "--seed", "0", "--out", str(tmp_path)])
    assert done.value.code == 0
    (run,) = [p for p in tmp_path.iterdir() if p.name != "populations"]
    recorded_on, here = DIGESTS["environment"], digest_environment()
    if recorded_on != here:
        pytest.skip(f"digests recorded on {recorded_on}, this machine is {here}")
    fresh, recorded = run_digests(run), DIGESTS[case]
    assert sorted(fresh) == sorted(recorded)
    assert [name for name in sorted(recorded) if fresh[name] != recorded[name]] == []


def test_digests_ignore_only_wall_clock_fields(tmp_path):
    """Changing a recorded value changes the digest; changing a wall-clock field does not."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "run.json").write_text('{"created_at": "2026-01-01", "seeds": {"policy": 1}}')
    (tmp_path / "b" / "run.json").write_text('{"created_at": "2027-05-05", "seeds": {"policy": 1}}')
    assert run_digests(tmp_path / "a") == run_digests(tmp_path / "b")
    (tmp_path / "b" / "run.json").write_text('{"created_at": "2027-05-05", "seeds": {"policy": 2}}')
    assert run_digests(tmp_path / "a") != run_digests(tmp_path / "b")
