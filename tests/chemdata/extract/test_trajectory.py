"""Tests for chemdata/extract/trajectory.py: tool calls, failures and the budget clock."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from labrecord.chemdata.extract.trajectory import BudgetExceeded, ToolFailed, Trajectory

from .conftest import fake_tool


def test_tool_call_is_recorded_with_arguments_output_and_status(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "echo-tool", 'echo "read $1"')
    trajectory = Trajectory("fig", budget_s=60)
    assert trajectory.run_tool("echo", [tool, "x.png"], limit_s=10).strip() == "read x.png"
    (event,) = trajectory.events
    assert event["kind"] == "tool_call" and event["args"] == [tool, "x.png"]
    assert event["status"] == "ok" and event["output"] == "read x.png\n" and event["seq"] == 0


def test_non_zero_exit_is_a_recorded_failure(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "broken", "echo boom >&2; exit 3")
    trajectory = Trajectory("fig", budget_s=60)
    with pytest.raises(ToolFailed, match="exit status 3: boom") as caught:
        trajectory.run_tool("osra", [tool], limit_s=10)
    assert not caught.value.timeout
    assert trajectory.events[-1]["status"] == "error"


def test_missing_binary_is_a_failure_not_a_crash() -> None:
    trajectory = Trajectory("fig", budget_s=60)
    with pytest.raises(ToolFailed, match="cannot start"):
        trajectory.run_tool("osra", ["/nonexistent/osra"], limit_s=10)


def test_slow_tool_times_out(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "slow", "sleep 30")
    trajectory = Trajectory("fig", budget_s=60)
    with pytest.raises(ToolFailed) as caught:
        trajectory.run_tool("osra", [tool], limit_s=0.2)
    assert caught.value.timeout and trajectory.events[-1]["status"] == "timeout"


def test_spent_budget_stops_before_the_call() -> None:
    trajectory = Trajectory("fig", budget_s=0)
    with pytest.raises(BudgetExceeded, match="before osra"):
        trajectory.run_tool("osra", ["true"], limit_s=10)
    assert trajectory.events == []


def test_write_is_one_event_per_line(tmp_path: Path) -> None:
    trajectory = Trajectory("fig", budget_s=60)
    trajectory.add("input", figure="a.png")
    trajectory.failure("rgroup", "no_match", "entry 1a: no match")
    trajectory.write(tmp_path / "t" / "fig.ndjson")
    lines = (tmp_path / "t" / "fig.ndjson").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["input", "failure"]
    assert json.loads(lines[1])["stage"] == "rgroup"


@given(st.lists(st.sampled_from(["input", "tool_call", "failure", "result"]), max_size=20))
def test_seq_counts_up_from_zero(kinds: list[str]) -> None:
    trajectory = Trajectory("fig", budget_s=60)
    for kind in kinds:
        trajectory.add(kind)
    assert [e["seq"] for e in trajectory.events] == list(range(len(kinds)))
    assert all(a["t"] <= b["t"] for a, b in zip(trajectory.events, trajectory.events[1:]))
