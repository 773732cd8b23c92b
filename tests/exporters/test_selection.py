"""Tests for labrecord.exporters.selection: attempts, acceptance rules, splits."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.exporters.examples import write_demo_runs
from labrecord.exporters.selection import AttemptRow, apply_rule, assign_splits, check_output, check_rule, collect, select


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
    with pytest.raises(LabrecordError, match=r"--accept 'bogus\(': not an expression"):
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


HOSTILE_RULES = [
    ("true); COPY (SELECT 42) TO '{out}'; SELECT (1", "more than one statement"),
    ("true) OR (SELECT count(*) FROM read_text('/etc/passwd')) > 0 OR (false", "subquery not allowed"),
    ("length((SELECT content FROM read_text('/etc/passwd'))) > 0", "subquery not allowed"),
    ("read_text('/etc/passwd') IS NULL", "function 'read_text' not allowed"),
    ("getenv('HOME') = 'x'", "function 'getenv' not allowed"),
    ("family IN (SELECT family FROM attempts)", "subquery not allowed"),
    ("success = ?", "parameter not allowed"),
    ("attempts._row > 0", "unknown column 'attempts._row'"),
    ("_row > 0", "unknown column '_row'"),
    ("secret_column", "unknown column 'secret_column'"),
    ("main.lower(family) = 'x'", "function 'lower' not allowed"),
    ("count(*) > 0", "function 'count_star' not allowed"),
    ("true) GROUP BY (_row", "not a single expression"),
    ("true) ORDER BY (_row", "not a single expression"),
    ("true) UNION SELECT (1", "not a single expression"),
    ("", "empty rule"),
    ("num_samples", "a BIGINT expression, not a boolean one"),
    ("NOT " * 995 + "success", "nested too deeply"),
    ("lower(" * 600 + "family" + ")" * 600 + " = 'x'", "nested too deeply"),
]


@pytest.mark.parametrize("rule, refusal", HOSTILE_RULES)
def test_an_acceptance_rule_is_one_boolean_expression_over_the_columns(tmp_path: Path, rule: str, refusal: str) -> None:
    """``true); COPY … TO 'x.csv'; …`` once ran any SQL through --accept; each of these is
    refused with one line before anything runs, and no file appears."""
    rows = [_row("a", 0, True), _row("a", 1, False)]
    out = tmp_path / "x.csv"
    with pytest.raises(LabrecordError, match=refusal) as caught:
        apply_rule(rows, rule.format(out=out))
    assert len(str(caught.value).splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("rule, chosen", [
    ("success", [True, False, False]),
    ("reason IS NULL AND episode BETWEEN 0 AND 1", [True, True, False]),
    ("status IN ('complete', 'aborted') AND NOT recovered", [True, True, True]),
    ("lower(system) LIKE 'r%' AND num_samples * 2 >= 10", [True, True, True]),
    ("CASE WHEN episode = 2 THEN true ELSE false END", [False, False, True]),
    ("coalesce(branch, 'base') = 'base' AND run_id ~ '^a$'", [True, True, True]),
    ("episode::DOUBLE / 2 > 0.4", [False, True, True]),
])
def test_rules_by_hand_expressions(rule: str, chosen: list[bool]) -> None:
    """Three attempts (episodes 0, 1, 2; success True, False, False; five samples each)."""
    rows = [_row("a", 0, True), _row("a", 1, False), _row("a", 2, False)]
    apply_rule(rows, rule)
    assert [r.accepted for r in rows] == chosen


@given(st.text(max_size=60))
def test_any_text_is_a_checked_rule_or_one_refusal(text: str) -> None:
    """Whatever the text, it is accepted only as an expression over the named columns:
    then it selects a subset; otherwise it is one LabrecordError line."""
    rows = [_row("a", 0, True), _row("b", 1, False)]
    try:
        apply_rule(rows, text)
    except LabrecordError as error:
        assert "\n" not in str(error)
        return
    assert all(r.accepted in (True, False) for r in rows)


def test_a_bad_rule_is_refused_before_the_runs_are_read(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="more than one statement"):
        select(tmp_path / "no-such-runs", "true); SELECT (1")
    assert check_rule("success AND num_samples > 0").startswith("SELECT _row FROM attempts WHERE (")
