"""Tests for labrecord.exporters.selection: attempts, acceptance rules, splits."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.exporters.examples import write_demo_runs
from labrecord.exporters.selection import AttemptRow, apply_rule, assign_splits, check_output, collect, select


def _row(run_id: str, episode: int, success: bool | None, n: int = 5) -> AttemptRow:
    return AttemptRow(run_id=run_id, episode=episode, demo=f"demo_{episode}" if n else None, num_samples=n,
                      success=success, reason=None, recovered=False, status="complete", family="weighing",
                      task_id="w", condition="basic", system="ref", system_kind="scripted", intervention="none",
                      branch=None)


def test_rules_by_hand() -> None:
    rows = [_row("a", 0, True), _row("a", 1, False), _row("b", 0, True, n=0), _row("b", 1, None)]
    apply_rule(rows, "success")
    assert [r.accepted for r in rows] == [True, False, False, False]
    assert [r.note for r in rows] == [None, "rejected by rule 'success'", "no steps recorded", "rejected by rule 'success'"]
    rows = [_row("a", 0, True), _row("a", 1, False), _row("b", 0, True, n=0)]
    apply_rule(rows, "all")
    assert [r.accepted for r in rows] == [True, True, False]  # no steps, nothing to train on
    rows = [_row("a", 0, True), _row("a", 1, False), _row("b", 1, False)]
    apply_rule(rows, "run_id = 'a' OR episode = 1 AND NOT success")
    assert [r.accepted for r in rows] == [True, True, True]
    with pytest.raises(LabrecordError, match=r"acceptance rule 'bogus\(' is not a valid WHERE clause"):
        apply_rule(rows, "bogus(")


def test_runs_without_demo_are_listed(tmp_path: Path) -> None:
    write_demo_runs(tmp_path, runs=1, episodes=2, steps=3, cameras=())
    write_example_run(tmp_path, "bare-run")
    runs, rows = collect(tmp_path)
    assert sorted(runs) == ["bare-run", "demo-run-0000"]
    bare = [r for r in rows if r.run_id == "bare-run"]
    assert len(bare) == 1 and bare[0].note == "no demo.hdf5" and bare[0].demo is None
    selection = select(tmp_path, "all")
    assert len(selection.attempts) == 3 and len(selection.accepted) == 2


def test_empty_selection_says_why(tmp_path: Path) -> None:
    write_example_run(tmp_path, "bare-run")
    with pytest.raises(LabrecordError, match=r"1 attempt\(s\) in 1 run\(s\), none accepted by rule 'all' "
                                             r"\(0 unsuccessful, 0 without steps, 1 run\(s\) without demo.hdf5\)"):
        select(tmp_path, "all")
    with pytest.raises(LabrecordError, match="no such directory"):
        select(tmp_path / "missing")


@given(successes=st.lists(st.booleans(), max_size=30), ratio=st.floats(0, 0.9), seed=st.integers(0, 100))
def test_split_assignment_property(successes: list[bool], ratio: float, seed: int) -> None:
    rows = [_row("r", i, s) for i, s in enumerate(successes)]
    apply_rule(rows, "success")
    assign_splits(rows, ratio, seed)
    accepted = [r for r in rows if r.accepted]
    assert all(r.split in ("train", "valid") for r in accepted)
    assert all(r.split is None for r in rows if not r.accepted)
    if accepted:
        assert any(r.split == "train" for r in accepted)


def test_output_folders_are_made_but_an_unwritable_output_is_refused(demo_runs: Path, tmp_path: Path) -> None:
    """``--out datasets/weighing`` in a fresh folder makes ``datasets``; a file in the way is one error."""
    from labrecord.exporters.parquet import export_parquet

    summary = export_parquet(demo_runs, tmp_path / "datasets" / "flat")
    assert (summary.out / "steps.parquet").is_file()
    (tmp_path / "taken").write_text("")
    with pytest.raises(LabrecordError, match="taken is a file, not a folder"):
        export_parquet(demo_runs, tmp_path / "taken" / "deeper" / "flat")
    assert check_output(tmp_path / "new" / "deeper" / "flat", overwrite=False, runs_dir=demo_runs) == tmp_path / "new" / "deeper" / "flat"
    assert not (tmp_path / "new").exists()  # checking makes nothing
