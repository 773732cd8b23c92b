"""The Isaac Sim adapter's sensor-to-measurement conversions (no Isaac Sim needed)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.recorders.isaacsim import (
    calibrate_empty, check_sensing_axis, contact_codes, entity_table, quat_wxyz_to_matrix, require_isaacsim,
    sensing_axis_error_deg, support_force_up, weighing_columns,
)
from labrecord.scorers.contracts.weighing import WeighingThresholds

from tests.scorers.contracts.drive import display_chain

G = (0.0, 0.0, -9.80665)
IDENTITY = (1.0, 0.0, 0.0, 0.0)
ENTITIES = entity_table("/World/Table", "/World/Balance/pan", "/World/Robot/left_finger", "/World/Robot/right_finger",
                        "/World/Robot/hand", ["/World/Sample", "/World/W10", "/World/W20"])


def test_quaternion_by_hand():
    half = math.sqrt(0.5)
    rz90 = quat_wxyz_to_matrix((half, 0, 0, half))
    assert np.allclose(rz90 @ [1, 0, 0], [0, 1, 0])
    with pytest.raises(LabrecordError, match="zero or non-finite"):
        quat_wxyz_to_matrix((0, 0, 0, 0))


def test_support_force_up_by_hand():
    # a 180 g load plus a 250 g pan pushes the support up by (0.43 kg)(g0)
    assert support_force_up((0, 0, 0.43 * 9.80665, 0, 0, 0), IDENTITY, G) == pytest.approx(0.43 * 9.80665)
    # a joint frame rolled 180 deg about x reports the same support as -z
    assert support_force_up((0, 0, -4.0, 0, 0, 0), (0, 1, 0, 0), G) == pytest.approx(4.0)


@settings(max_examples=100, deadline=None)
@given(st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: sum(v * v for v in q) > 0.1), st.floats(0, 30))
def test_support_force_is_frame_invariant(quat, load_n):
    """A vertical world force reads the same F_up whatever frame the joint reports it in."""
    rotation = quat_wxyz_to_matrix(quat)
    local = rotation.T @ np.array([0.0, 0.0, load_n])
    assert support_force_up([*local, 0, 0, 0], quat, G) == pytest.approx(load_n, abs=1e-9)


def test_sensing_axis_check():
    assert sensing_axis_error_deg((0, 0, 1), IDENTITY, G) == pytest.approx(0.0)
    tilt = math.radians(5) / 2
    with pytest.raises(LabrecordError, match="5.00 deg from vertical"):
        check_sensing_axis((0, 0, 1), (math.cos(tilt), math.sin(tilt), 0, 0), G)


@pytest.mark.parametrize("samples, match", [
    ([2.45, 2.46], "not settled"),
    ([-2.4516, -2.4516], "sign is flipped"),
    ([2.45], "need >= 2"),
    ([2.45, float("nan")], "need >= 2"),
])
def test_calibration_refuses(samples, match):
    with pytest.raises(LabrecordError, match=match):
        calibrate_empty(samples)


def test_calibration_and_display_chain_read_the_load():
    pan = 0.25 * 9.80665
    f_empty = calibrate_empty([pan] * 10)
    t = np.arange(1, 2001) * 0.002
    force = np.full_like(t, pan + 0.18 * 9.80665)
    m_bar, stable = display_chain(t, force, np.ones_like(t, dtype=bool), f_empty, 9.80665, WeighingThresholds())
    assert m_bar[-1] == pytest.approx(180.0) and stable[-1]


def test_contact_codes_longest_prefix():
    from labrecord.recorders.contacts import OBJECT0

    assert contact_codes("/World/W10/collision", ENTITIES) == OBJECT0 + 1  # the second object
    assert contact_codes("/World/W100", ENTITIES) == 0  # not a child of /World/W10
    assert contact_codes("/World/Robot/left_finger/pad", ENTITIES) == 3


def test_weighing_columns_from_contact_report():
    contacts = [[("/World/Sample", "/World/Balance/pan"), ("/World/W10", "/World/Sample")],
                [("/World/Sample", "/World/Balance/pan"), ("/World/W10", "/World/Balance/pan"),
                 ("/World/W10", "/World/Robot/left_finger"), ("/World/W10", "/World/Robot/right_finger"),
                 ("/World/W20", "/World/Table")]]
    velocities = np.zeros((2, 3, 3))
    velocities[1, 2] = (0.0, 0.3, 0.4)
    columns = weighing_columns(10, [0.002, 0.004], [3.0, 3.1], [True, True], contacts, ENTITIES, velocities,
                               [False, True], ["w10", "w20"])
    assert columns["step"].tolist() == [10, 11]
    assert columns["w10_on_pan"].tolist() == [True, True]
    assert columns["w10_contact"].tolist() == [False, True] and columns["w10_grasped"].tolist() == [False, True]
    assert columns["w20_on_pan"].tolist() == [False, False]
    assert columns["w20_speed"].tolist() == pytest.approx([0.0, 0.5])
    assert columns["hand_pan_contact"].tolist() == [False, False]


def test_adapter_needs_isaacsim(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "isaacsim", None)  # makes ``import isaacsim`` fail
    with pytest.raises(LabrecordError, match=r"labrecord\[isaacsim\]"):
        require_isaacsim()


def test_any_robot_link_maps_to_the_arm_entity():
    from labrecord.recorders.contacts import ENTITY_CODES

    entities = entity_table("/World/Table", "/World/Balance/pan", "/World/Robot/left_finger",
                            "/World/Robot/right_finger", "/World/Robot/hand", ["/World/Sample"], robot="/World/Robot")
    assert contact_codes("/World/Robot/link4/collision", entities) == ENTITY_CODES["arm"]
    assert contact_codes("/World/Robot/hand/collision", entities) == ENTITY_CODES["palm"]
    assert contact_codes("/World/Robot/left_finger", entities) == ENTITY_CODES["finger_left"]
    assert contact_codes("/World/Robotic", entities) == ENTITY_CODES["other"]
