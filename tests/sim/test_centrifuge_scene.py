"""The centrifuge bench's physics and measurements, judged by ``centrifuge/1``.

A tube is set into slot 9's bore (rotor turned by 0.4 rad) and released; the simulation
settles it for 1 s and the measurement columns the env derives from the simulated pose
and contacts go through the contract.  Hand-checkable geometry: the bore clearance is
8.0 − 6.5 = 1.5 mm, so a tube only 16 mm (40 % of 40 mm) deep can lean about
atan(3 / 16) ≈ 10.6° and, rubber-lined, stays short of the 60 % depth threshold; a tube
jammed in the mouth 15° off the axis stays there.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.centrifuge import CentrifugeInstance, RotorCalibration, opposite, tube_geometry

SLOT, YAW = 9, 0.4


@pytest.fixture(scope="module")
def env():
    from labrecord.sim.centrifuge.env import CentrifugeEnv

    bench = CentrifugeEnv(RotorCalibration(), cameras=())
    yield bench
    bench.close()


def _rotate(axis: np.ndarray, about: np.ndarray, degrees: float) -> np.ndarray:
    k = about / np.linalg.norm(about)
    angle = math.radians(degrees)
    return axis * math.cos(angle) + np.cross(k, axis) * math.sin(angle) + k * (k @ axis) * (1 - math.cos(angle))


def settle(env, depth_frac: float, tilt_deg: float = 0.0, seconds: float = 1.0):
    """Set tube_b into slot SLOT (tube_a seated opposite), release, simulate; returns
    (measurement columns, slot mouth, slot axis)."""
    instance = CentrifugeInstance(start=(("tube_a", opposite(SLOT)),), held="tube_b", rotor_yaw=YAW)
    env.reset(instance)
    mouth, axis = env.scene.slot_world(SLOT, YAW)
    down = np.array([0.0, 0.0, -1.0]) - axis * -axis[2]
    down /= np.linalg.norm(down)
    tube_axis = _rotate(axis, np.cross(axis, [0.0, 0.0, 1.0]), tilt_deg)
    # resting on the lower bore wall (1.5 mm clearance), tip at depth_frac of the effective depth
    env.scene.set_tube("tube_b", mouth + axis * 0.04 * depth_frac + down * (0.0015 if tilt_deg == 0 else 0.0), tube_axis)
    env.scene.mujoco.mj_forward(env.scene.model, env.scene.data)
    blocks = []
    for _ in range(int(seconds * 10)):
        env.apply(env.hold_action(None))
        env.advance(50)
        blocks.append(env.end_block())
    return {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}, mouth, axis, instance


def judged(columns, instance):
    import pyarrow as pa

    contract = get_contract("centrifuge")
    events, _ = contract.replay(pa.table(columns), [], instance)
    return contract, events


def measured(columns, mouth, axis):
    tip = np.array([columns[f"tube_b_{k}"][-1] for k in "xyz"])
    tube_axis = np.array([columns[f"tube_b_{k}"][-1] for k in ("ax", "ay", "az")])
    return float((tip - mouth) @ axis / 0.04), math.degrees(math.acos(min(1.0, float(tube_axis @ axis))))


def test_a_tube_home_on_the_floor_is_seated(env):
    columns, mouth, axis, instance = settle(env, 1.0)
    depth, axial = measured(columns, mouth, axis)
    assert depth == pytest.approx(1.0, abs=0.02) and axial < 3.0
    assert columns["tube_b_supported"][-100:].all() and not columns["tube_b_contact"].any()
    _, events = judged(columns, instance)
    confirms = [e for e in events if e.type == "confirm" and e.fields["op"].object == "tube_b"]
    assert [str(e.fields["op"].dest) for e in confirms] == [f"slot{SLOT}"]
    assert confirms[0].t - columns["t"][0] >= 0.5  # released and supported for 0.5 s first


def test_a_tube_at_40_percent_depth_is_refused_as_shallow(env):
    columns, mouth, axis, instance = settle(env, 0.4)
    depth, _ = measured(columns, mouth, axis)
    assert depth < 0.6  # the rubber-lined bore holds it short of the threshold
    g = tube_geometry(instance.calibration, get_contract("centrifuge").thresholds,
                      {k: columns[f"rotor_{k}"] for k in ("x", "y", "z", "yaw")},
                      {k: columns[f"tube_b_{k}"] for k in ("x", "y", "z", "ax", "ay", "az")})
    assert (g["near"][-100:] == SLOT).all() and not g["geom_ok"].any()
    _, events = judged(columns, instance)
    assert not [e for e in events if e.type == "confirm" and e.fields["op"].object == "tube_b"]
    failures = [e for e in events if e.type == "failure"]
    assert [(e.fields["reason"], str(e.fields["op"].dest)) for e in failures] == [("shallow", f"slot{SLOT}")]


def test_a_tube_jammed_at_15_degrees_is_refused(env):
    columns, mouth, axis, instance = settle(env, 0.25, tilt_deg=15.0)
    depth, axial = measured(columns, mouth, axis)
    assert axial > 10.0  # measured from the simulated pose, not from any claim
    _, events = judged(columns, instance)
    assert not [e for e in events if e.type == "confirm" and e.fields["op"].object == "tube_b"]
    assert [e.fields["reason"] for e in events if e.type == "failure"] in (["shallow"], ["misaligned"])


def test_the_rotor_yaw_moves_world_slots_not_local_ones(env):
    from labrecord.sim.centrifuge.scene import ROTOR_XY, ROTOR_Z

    calibration = RotorCalibration()
    mouths, axes = calibration.slots()
    for yaw in (0.0, 1.0, -2.5):
        mouth, axis = env.scene.slot_world(3, yaw)
        back = mouth - np.array([*ROTOR_XY, ROTOR_Z])
        c, s = math.cos(yaw), math.sin(yaw)
        local = np.array([c * back[0] + s * back[1], -s * back[0] + c * back[1], back[2]])
        assert np.allclose(local, mouths[3]) and np.isclose(np.linalg.norm(axis), 1.0)


def test_bores_are_rings_of_convex_boxes(env):
    model = env.scene.model
    names = [model.geom(i).name for i in range(model.ngeom)]
    for j in range(12):
        walls = [n for n in names if n.startswith(f"slot{j}_w")]
        assert len(walls) == 8 and f"slot{j}_floor" in names
        assert all(model.geom(n).type == 6 for n in walls)  # mjGEOM_BOX
