"""Verified checkpoints (recorders/checkpoint.py): restoring a checkpoint file into a
freshly built bench and re-stepping the recorded actions reproduces the original run's
measurements bitwise (same machine); a tampered body is refused."""
from __future__ import annotations

import os

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.recorders.checkpoint import read_checkpoint, restore_physics
from tests.support import require_module

os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is first imported (the policies render cameras)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    require_module("mujoco", 'pip install "labrecord[sim]"')
    from labrecord.sim.study import StudyTask, run_instance
    from labrecord.sim.weighing.task import instances

    out = tmp_path_factory.mktemp("ckpt")
    (inst,) = instances("basic", 1, 3)
    result = run_instance(StudyTask(str(out), "fixed-preference", 3, 0, inst, ()))
    return out, inst, result


def test_restore_and_replay_reproduces_measurements(base_run):
    from labrecord.sim.weighing.env import WeighingEnv
    from labrecord.sim.bench.policies import ACTION_SPEC
    from labrecord.sim.weighing.scene import Placement, random_layout

    out, inst, result = base_run
    checkpoint = read_checkpoint(result["checkpoint"])
    assert checkpoint.header.verified
    env = WeighingEnv(ACTION_SPEC, cameras=(), size=32)  # a new bench: nothing shared with the run
    layout = random_layout(inst.start, np.random.default_rng(inst.layout_seed))
    env.reset(Placement(sample_g=inst.sample_g, initially_on_pan=inst.start, layout=layout))
    restore_physics(env, checkpoint)
    assert env.time == checkpoint.header.t
    table = pq.read_table(out / result["base"] / "measurements.parquet").to_pydict()
    steps = int(round(env.physics_hz / env.control_hz))
    start = table["step"].index(checkpoint.header.step)
    periods = 15
    for period in range(periods):
        row = start + period * steps
        action = np.asarray([table[f"cmd_{i}"][row] for i in range(ACTION_SPEC.dim)])
        env.apply(action)
        env.advance(steps)
        block = env.end_block()
        for name, column in block.items():
            original = np.asarray(table[name][row:row + steps], dtype=column.dtype)
            assert np.array_equal(column, original, equal_nan=column.dtype.kind == "f"), (period, name)
    env.close()


def test_other_configuration_is_refused(base_run):
    from labrecord.sim.weighing.env import WeighingEnv
    from labrecord.sim.bench.policies import ACTION_SPEC
    from labrecord.sim.weighing.scene import Placement, random_layout

    _, inst, result = base_run
    checkpoint = read_checkpoint(result["checkpoint"])
    env = WeighingEnv(ACTION_SPEC, cameras=(), size=32)
    env.reset(Placement(sample_g=inst.sample_g + 7.0, initially_on_pan=inst.start,
                        layout=random_layout(inst.start, np.random.default_rng(0))))
    with pytest.raises(LabrecordError, match="configured as"):
        restore_physics(env, checkpoint)
    env.close()


def test_tampered_body_is_refused(base_run, tmp_path):
    _, _, result = base_run
    raw = bytearray(open(result["checkpoint"], "rb").read())
    raw[-5] ^= 0xFF
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(bytes(raw))
    with pytest.raises(LabrecordError, match="sha256"):
        read_checkpoint(bad)


def test_same_column_hand_cases():
    """Bitwise: 1.0 vs 1.0 + 1e-12 differs; with tolerance 1e-6 it agrees; a bool column
    stays exact whatever the tolerance; NaN equals NaN."""
    from labrecord.recorders.checkpoint import _same_column

    a = np.array([1.0, np.nan])
    b = np.array([1.0 + 1e-12, np.nan])
    assert _same_column(a, a.copy(), 0.0) and not _same_column(b, a, 0.0)
    assert _same_column(b, a, 1e-6)
    assert not _same_column(np.array([True]), np.array([False]), 1.0)
    assert not _same_column(None, a, 0.0) and not _same_column(a.astype(np.float32), a, 1e-6)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20))
def test_same_column_is_reflexive_and_exact_copy_passes(values):
    from labrecord.recorders.checkpoint import _same_column

    column = np.asarray(values)
    assert _same_column(column.copy(), column, 0.0)
    assert _same_column(column.copy(), column, 1e-6)
