"""Tests for labrecord.exporters.observations: which observation is proprioception, which evaluator state."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.exporters.observations import classify, element_names, privileged_keys, stacked

F = np.dtype("float32")


def test_recorder_keys_of_today() -> None:
    """The floating-gripper recorder writes robot0_eef_pos, robot0_gripper_qpos, the display
    reading, its stability flag and the object poses: only the first two are the robot's."""
    obs = {"robot0_eef_pos": ((3,), F), "robot0_gripper_qpos": ((1,), F), "display_reading_g": ((1,), F),
           "display_stable": ((1,), F), "object": ((15,), F), "front": ((8, 8, 3), np.dtype("uint8"))}
    roles = classify(obs)
    assert roles.proprio == ["robot0_eef_pos", "robot0_gripper_qpos"]
    assert roles.privileged == ["display_reading_g", "display_stable", "object"]
    assert roles.cameras == ["front"] and roles.rule == "robot0_* keys"


def test_listed_keys_are_evaluator_state_even_when_named_robot0() -> None:
    obs = {"robot0_joint_pos": ((7,), F), "robot0_eef_quat": ((4,), F), "robot0_contact_force": ((3,), F),
           "cube_pose": ((7,), F)}
    roles = classify(obs, ["robot0_contact_force", "cube_pose"])
    assert roles.proprio == ["robot0_eef_quat", "robot0_joint_pos"]
    assert roles.privileged == ["cube_pose", "robot0_contact_force"]


def test_pre_convention_runs() -> None:
    """No robot0_* key: the gripper's own pose and width (and a declared ``state``) are proprioception."""
    obs = {"eef_pos": ((3,), F), "gripper_opening_m": ((1,), F), "state": ((6,), F), "joint_vel": ((2,), F),
           "display_reading_g": ((1,), F), "object": ((15,), F), "stable": ((1,), np.dtype("bool"))}
    roles = classify(obs)
    assert roles.proprio == ["eef_pos", "gripper_opening_m", "joint_vel", "state"]
    assert roles.privileged == ["display_reading_g", "object", "stable"]
    assert roles.rule.startswith("pre-convention")


def test_privileged_attribute_parsing() -> None:
    assert privileged_keys({}, "f") == []
    assert privileged_keys({"privileged_obs": '["b", "a"]'}, "f") == ["a", "b"]
    with pytest.raises(LabrecordError, match=r"f.h5 data/demo_0: attribute 'privileged_obs' is not JSON"):
        privileged_keys({"privileged_obs": "[a"}, "f.h5 data/demo_0")
    with pytest.raises(LabrecordError, match="must be a JSON list of observation keys"):
        privileged_keys({"privileged_obs": '{"a": 1}'}, "f")


def test_names_and_stacking_by_hand() -> None:
    assert element_names("robot0_gripper_qpos", (1,)) == ["robot0_gripper_qpos"]
    assert element_names("p", (2,)) == ["p[0]", "p[1]"]
    obs = {"a": np.array([[1, 2], [3, 4]]), "b": np.array([5, 6])}
    np.testing.assert_array_equal(stacked(obs, ["a", "b"], 2), [[1, 2, 5], [3, 4, 6]])
    assert stacked(obs, [], 2).shape == (2, 0)


KEYS = st.sampled_from(["robot0_eef_pos", "robot0_joint_pos", "eef_pos", "gripper_width", "state", "object",
                        "display_reading_g", "cube", "joint_pos"])


@given(keys=st.sets(KEYS, max_size=9), listed=st.sets(KEYS, max_size=4))
def test_every_key_has_exactly_one_role(keys: set[str], listed: set[str]) -> None:
    roles = classify({k: ((1,), F) for k in keys}, sorted(listed))
    assert sorted(roles.proprio + roles.privileged) == sorted(keys)
    assert not set(roles.proprio) & set(roles.privileged)
    assert not set(roles.proprio) & listed  # a listed key never becomes proprioception
    if any(k.startswith("robot0_") for k in keys):
        assert all(k.startswith("robot0_") for k in roles.proprio)
