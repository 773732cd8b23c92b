"""validate findings for J and delivery timing (labrecord/validation/checkpoints.py)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout
from labrecord.validation.checkpoints import check_checkpoint_registrations, check_delivery_timing
from labrecord.validation.findings import Report


def test_a_wait_stop_only_checkpoint_registration_is_refused(tmp_path: Path) -> None:
    """Checkpoint i0/d1 opens with legal [stop, wait] only: an error naming the registry
    line, the checkpoint and the run; checkpoint i1/d0 (add(w10)) passes."""
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d1"},
                                     {"type": "checkpoint", "instance_id": "i1", "decision": "d0"}])
    write_rollout(tmp_path, RolloutSpec("r0", population=("J", "i0"), decisions=[DecisionSpec("d1", terminal=True)]))
    write_rollout(tmp_path, RolloutSpec("r1", population=("J", "i1"), decisions=[DecisionSpec("d0")]))
    report = Report()
    check_checkpoint_registrations(tmp_path, report)
    (finding,) = report.errors
    text = str(finding)
    assert "J.jsonl:1" in text and "i0/d1" in text and "r0" in text and "Wait/Stop" in text


def test_choices_before_delivery_are_findings(tmp_path: Path) -> None:
    """r0's evidence is delivered 1 s after the opportunity, its choice at +0.5 s; r1's
    decision:assist support arrives after its choice; r2 is in order: two warnings."""
    run0 = write_rollout(tmp_path, RolloutSpec("r0", decisions=[DecisionSpec(delivery_delay_s=1.0)]))
    oracle = {"mode": "assist", "site": "decision", "payload": {"kind": "add", "object": "w10", "dest": "pan"}}
    run1 = write_rollout(tmp_path, RolloutSpec("r1", decisions=[DecisionSpec(oracle=oracle, oracle_late=True)]))
    run2 = write_rollout(tmp_path, RolloutSpec("r2", decisions=[DecisionSpec(oracle=oracle)]))
    report = Report()
    for run in (run0, run1, run2):
        check_delivery_timing(run, report)
    texts = [str(f) for f in report.warnings]
    assert len(texts) == 2 and not report.errors
    assert "precedes the delivery of observation 'obs0' at t=1" in texts[0] and "r0" in texts[0]
    assert "decision:assist support delivered after the first choice" in texts[1] and "r1" in texts[1]


def test_validate_cli_reports_the_registration_error(tmp_path: Path) -> None:
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d1"}])
    write_rollout(tmp_path, RolloutSpec("r0", population=("J", "i0"), decisions=[DecisionSpec("d1", terminal=True)]))
    result = CliRunner().invoke(cli, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "not a physical-choice checkpoint" in result.output


def test_deeply_nested_lines_are_left_to_their_own_checks(tmp_path: Path) -> None:
    """An observation receipt and a registry line nested 50,000 deep (the recursion limit
    of a decoder is far below): validate names both files in findings, with no traceback."""
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d0"}])
    run = write_rollout(tmp_path, RolloutSpec("r0", population=("J", "i0"), decisions=[DecisionSpec("d0")]))
    deep = b'{"obs_id": "x", "t_delivered": 0, "kind": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"
    with open(run / "observations.jsonl", "ab") as fh:
        fh.write(deep)
    with open(tmp_path / "populations" / "J.jsonl", "ab") as fh:
        fh.write(deep)
    report = Report()
    check_delivery_timing(run, report)
    check_checkpoint_registrations(tmp_path, report)
    result = CliRunner().invoke(cli, ["validate", str(tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "observations.jsonl" in result.output and "nested deeper" in result.output


def test_a_deeply_nested_checkpoint_header_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    """A checkpoint file whose header line nests 50,000 deep: the audit's hand-off check
    names it unreadable (one reason), it does not raise."""
    import hashlib
    from types import SimpleNamespace

    from labrecord.scorers.audit import _handoff_problem

    path = tmp_path / "d0.ckpt"
    path.write_bytes(b"[" * 50_000 + b"]" * 50_000 + b"\nbody")
    problem = _handoff_problem(path, SimpleNamespace(decision="d0"), hashlib)
    assert problem is not None and problem.startswith("unreadable checkpoint header: JSON nested deeper")
