"""Harness conformance: two evaluations of one checkpoint that differ only in how many rows
of each action chunk were executed per query are told apart, and the difference is
attributed to that setting (the episode identity records it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import require_module


@pytest.fixture(scope="module")
def two_harnesses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The reference policy planning 8-row chunks, two basic episodes each: executed whole,
    and executed first row only (the policy then replans, so 7 of every 8 waypoints are
    skipped)."""
    require_module("mujoco", "pip install 'labrecord[sim]'")
    from labrecord.sim import run_weighing

    root = tmp_path_factory.mktemp("harness")
    whole, first = root / "whole", root / "first"
    run_weighing(whole, "basic", "reference", episodes=2, seed=0, cameras=False, chunk_length=8)
    run_weighing(first, "basic", "reference", episodes=2, seed=0, cameras=False, chunk_length=8, actions_per_query=1)
    return whole, first


def test_the_setting_is_recorded_in_the_episode_identity(two_harnesses):
    whole, first = two_harnesses
    for folder, executed in ((whole, 8), (first, 1)):
        for run in sorted(p for p in folder.iterdir() if (p / "run.json").is_file()):
            manifest = json.loads((run / "run.json").read_text())
            assert manifest["harness"]["actions_per_query"] == executed
            assert manifest["harness"]["chunk_length"] == 8
            assert manifest["system"]["action_spec"]["max_chunk"] == 8
            assert manifest["harness"]["renderer"] == "none" and manifest["harness"]["cameras"] == []
            assert manifest["harness"]["parallel_envs"] == 1


def test_explain_attributes_the_flips_to_actions_per_query(two_harnesses):
    from click.testing import CliRunner

    from labrecord.cli import cli

    whole, first = two_harnesses
    result = CliRunner().invoke(cli, ["diff", str(whole), str(first), "--explain", "--json", "--resamples", "0"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["compared"] == ["actions_per_query"]
    assert report["pairs"] == {"resolved": 2, "unresolved": 0} and report["one_sided"] == []
    verdict = report["explanation"]
    assert verdict["differing"] == ["actions_per_query"]
    # executing one row of each open-loop chunk loses the grasp the choice is recognized by
    assert verdict["flipped_pairs"] == 2
    assert verdict["verdict"] == "attributed" and verdict["cause"] == "actions_per_query"
    assert report["binary"]["completion.physical"]["a_only"] == 2

    text = CliRunner().invoke(cli, ["diff", str(whole), str(first), "--explain", "--resamples", "0"])
    assert "explanation (attributed)" in text.output and "actions_per_query" in text.output
