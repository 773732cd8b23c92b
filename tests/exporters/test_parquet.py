"""Tests for labrecord.exporters.parquet."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.demos import read_demos
from labrecord.errors import LabrecordError
from labrecord.exporters.examples import write_demo_runs
from labrecord.exporters.parquet import export_parquet
from labrecord.rundir import read_events


def test_tables_by_hand(demo_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "flat"
    summary = export_parquet(demo_runs, out)
    assert (summary.demos, summary.frames, summary.attempts) == (4, 48, 6)
    assert sorted(p.name for p in out.iterdir()) == ["attempts.parquet", "events.parquet", "export.json",
                                                      "measurements.parquet", "steps.parquet"]
    steps = pq.read_table(out / "steps.parquet")
    assert steps.num_rows == 48
    assert "obs.front" not in steps.column_names and "obs.robot0_eef_pos" in steps.column_names
    assert not any("hidden" in c or "score" in c for c in steps.column_names)
    sources = {(d.run_id, d.episode): d for run in sorted(demo_runs.iterdir()) for d in read_demos(run / "demo.hdf5")}
    rows = steps.to_pylist()
    for row in rows:
        demo = sources[(row["run_id"], row["episode"])]
        np.testing.assert_array_equal(np.array(row["action"], dtype=np.float32), demo.actions[row["frame"]])
        np.testing.assert_array_equal(np.array(row["obs.robot0_eef_pos"], dtype=np.float32),
                                      demo.obs["robot0_eef_pos"][row["frame"]])
        assert row["policy_in_control"] == bool(demo.control_mask[row["frame"]])
    attempts = pq.read_table(out / "attempts.parquet").to_pylist()
    assert len(attempts) == 6 and sum(a["accepted"] for a in attempts) == 4
    events = pq.read_table(out / "events.parquet")
    assert events.num_rows == sum(len(read_events(run)) for run in demo_runs.iterdir())
    con = duckdb.connect()
    counts = con.execute(f"SELECT run_id, count(*) FROM '{out}/measurements.parquet' GROUP BY run_id ORDER BY 1").fetchall()
    assert counts == [("demo-run-0000", 36), ("demo-run-0001", 36)]
    first = con.execute(f"SELECT type, fields FROM '{out}/events.parquet' ORDER BY run_id, seq LIMIT 1").fetchone()
    assert first[0] == "episode_start" and json.loads(first[1]) == {"episode": 0}
    document = json.loads((out / "export.json").read_text())
    assert document["frames"] == 48 and document["observations"]["evaluator"] == ["object"]
    assert document["privileged_columns"] == [] and not document["observations"]["environment_state"]["requested"]


OBS_COLUMNS = ["obs.robot0_eef_pos", "obs.robot0_gripper_qpos", "next_obs.robot0_eef_pos", "next_obs.robot0_gripper_qpos"]


def observation_roles(table) -> dict[str, str]:
    """``{column: role}`` of the observation columns, read from the file's own schema."""
    return {f.name: f.metadata[b"labrecord.role"].decode() for f in table.schema if f.metadata}


def test_steps_hold_proprioception_only_unless_env_state_is_asked_for(demo_runs: Path, tmp_path: Path) -> None:
    """The example runs record robot0_eef_pos (3), robot0_gripper_qpos (1) and the evaluator's
    object position (3, listed in privileged_obs): by default the steps table has the four
    proprioceptive columns and no 'object'; with env_state the object comes back under
    env_state./next_env_state., tagged privileged in the schema and in export.json."""
    plain = pq.read_table(export_parquet(demo_runs, tmp_path / "plain").out / "steps.parquet")
    assert [c for c in plain.column_names if "obs." in c or "env_state" in c] == OBS_COLUMNS
    assert not any("object" in c for c in plain.column_names)
    assert observation_roles(plain) == dict.fromkeys(OBS_COLUMNS, "proprioception")

    out = export_parquet(demo_runs, tmp_path / "privileged", env_state=True).out
    steps = pq.read_table(out / "steps.parquet")
    privileged = ["env_state.object", "next_env_state.object"]
    assert [c for c in steps.column_names if "obs." in c or "env_state" in c] == OBS_COLUMNS + privileged
    assert observation_roles(steps) == {**dict.fromkeys(OBS_COLUMNS, "proprioception"),
                                        **dict.fromkeys(privileged, "privileged")}
    sources = {(d.run_id, d.episode): d for run in sorted(demo_runs.iterdir()) for d in read_demos(run / "demo.hdf5")}
    for row in steps.to_pylist():
        demo = sources[(row["run_id"], row["episode"])]
        np.testing.assert_array_equal(np.array(row["env_state.object"], dtype=np.float32), demo.obs["object"][row["frame"]])
        np.testing.assert_array_equal(np.array(row["next_env_state.object"], dtype=np.float32),
                                      demo.next_obs["object"][row["frame"]])
    document = json.loads((out / "export.json").read_text())
    assert document["privileged_columns"] == privileged
    assert document["observations"]["environment_state"] == {"requested": True, "privileged": True}


def test_refusals_write_nothing(demo_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "flat"
    export_parquet(demo_runs, out)
    with pytest.raises(LabrecordError, match="already exists"):
        export_parquet(demo_runs, out)
    export_parquet(demo_runs, out, accept="all", overwrite=True)
    assert pq.read_table(out / "steps.parquet").num_rows == 72
    with pytest.raises(LabrecordError, match="none accepted"):
        export_parquet(demo_runs, tmp_path / "none", accept="success AND NOT success")
    assert not (tmp_path / "none").exists()


@settings(max_examples=6, deadline=None)
@given(steps=st.integers(1, 6), runs=st.integers(1, 3), env_state=st.booleans(), listed=st.booleans())
def test_rows_add_up(tmp_path_factory: pytest.TempPathFactory, steps: int, runs: int, env_state: bool,
                     listed: bool) -> None:
    """Every observation column has exactly one role, and evaluator state appears only when
    asked for, whether or not the demo lists it in privileged_obs."""
    root = tmp_path_factory.mktemp("pq")
    write_demo_runs(root / "runs", runs=runs, episodes=2, steps=steps, successes=(True, False), cameras=(),
                    privileged_attr=listed)
    export_parquet(root / "runs", root / "out", env_state=env_state)
    table = pq.read_table(root / "out" / "steps.parquet")
    assert table.num_rows == runs * steps
    assert set(table.column("episode").to_pylist()) == {0}
    roles = observation_roles(table)
    assert [c for c in table.column_names if "obs." in c or "env_state" in c] == list(roles)
    assert sorted(c for c, role in roles.items() if role == "proprioception") == sorted(OBS_COLUMNS)
    assert sorted(c for c, role in roles.items() if role == "privileged") == (
        ["env_state.object", "next_env_state.object"] if env_state else [])
