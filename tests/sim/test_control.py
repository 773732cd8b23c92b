"""The Panda bench's action conventions: each one moves the arm as its ActionSpec says."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.sim.bench.control import JOINT_HIGH, JOINT_LOW, action_spec, convention_of, matrix_to_rotvec, rotvec_to_matrix
from labrecord.sim.weighing.env import WeighingEnv, _default_layout
from labrecord.sim.bench.scene import HOME_Q
from labrecord.sim.weighing.scene import Placement


def bench(convention: str) -> WeighingEnv:
    env = WeighingEnv(action_spec(convention), cameras=())
    env.reset(Placement(sample_g=100.0, initially_on_pan=frozenset(), layout=_default_layout()))
    return env


def run(env: WeighingEnv, action: np.ndarray, periods: int) -> None:
    steps = int(env.physics_hz / env.control_hz)
    for _ in range(periods):
        env.apply(action)
        env.advance(steps)
        env.end_block()


def test_joint_positions_are_reached():
    env = bench("joint_pos")
    goal = np.array(HOME_Q) + np.array([0.2, 0.1, -0.1, 0.15, 0.1, -0.1, 0.3])
    run(env, np.append(goal, 0.0), 10)
    assert np.abs(env.scene.joint_pos() - goal).max() < 0.01


def test_joint_velocity_integrates_over_the_period():
    # DROID-style 15 Hz: 0.3 rad/s on joint 1 for 15 periods = 1 s -> about 0.3 rad
    env = bench("joint_vel")
    assert env.control_hz == 15.0
    start = env.scene.joint_pos()
    run(env, np.array([0.3, 0, 0, 0, 0, 0, 0, 0.0]), 15)
    moved = env.scene.joint_pos() - start
    assert moved[0] == pytest.approx(0.3, abs=0.05) and np.abs(moved[1:]).max() < 0.02


def test_eef_delta_moves_the_tool_centre():
    # 2 cm per row along +y for 5 rows: at most 10 cm; each row is relative to the measured
    # pose, so the servo's lag shortens an open-loop sequence (about 7.7 cm here)
    env = bench("eef_delta")
    pos0, rot0 = env.scene.tcp_pose()
    run(env, np.array([0, 0.02, 0, 0, 0, 0, 0.0]), 5)
    run(env, np.zeros(7), 5)  # settle
    pos, rot = env.scene.tcp_pose()
    assert 0.06 < pos[1] - pos0[1] <= 0.101 and np.abs((pos - pos0)[[0, 2]]).max() < 0.005
    assert np.linalg.norm(matrix_to_rotvec(rot @ rot0.T)) < 0.03


def test_eef_delta_turns_about_the_vertical():
    env = bench("eef_delta")
    _, rot0 = env.scene.tcp_pose()
    for _ in range(5):
        run(env, np.array([0, 0, 0, 0, 0, 0.1, 0.0]), 1)
    run(env, np.zeros(7), 5)
    _, rot = env.scene.tcp_pose()
    turn = matrix_to_rotvec(rot @ rot0.T)
    assert 0.3 < turn[2] <= 0.51 and np.abs(turn[:2]).max() < 0.02


def test_conventions_round_trip_and_refuse_others():
    for name in ("joint_pos", "joint_vel", "eef_delta"):
        assert convention_of(action_spec(name)) == name
    with pytest.raises(LabrecordError, match="action convention 'cartesian'"):
        action_spec("cartesian")


def test_rotvec_by_hand():
    # a quarter turn about z maps x to y
    rot = rotvec_to_matrix(np.array([0, 0, np.pi / 2]))
    assert rot @ np.array([1, 0, 0]) == pytest.approx([0, 1, 0], abs=1e-12)
    assert matrix_to_rotvec(rot) == pytest.approx([0, 0, np.pi / 2])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.floats(0.0, 3.1))
def test_rotvec_round_trip(axis, angle):
    axis = np.asarray(axis)
    if np.linalg.norm(axis) < 1e-3:
        axis = np.array([0.0, 0.0, 1.0])
    r = axis / np.linalg.norm(axis) * angle
    assert matrix_to_rotvec(rotvec_to_matrix(r)) == pytest.approx(r, abs=1e-6)


def _mink_reference(env: WeighingEnv, delta_pos: np.ndarray, delta_rot: np.ndarray) -> np.ndarray:
    """The joint targets ``mink.solve_ik`` itself gives for the controller's program."""
    import mink

    from labrecord.sim.bench.scene import ARM_BASE

    env.controller.solve(np.zeros(3), np.zeros(3))  # builds the arm model and its tasks
    model, _, _, _, _ = env.controller._ik
    config = mink.Configuration(model)
    frame = mink.FrameTask("tcp", "site", position_cost=1.0, orientation_cost=0.5, lm_damping=1e-6)
    posture = mink.PostureTask(model, cost=1e-3)
    scene = env.scene
    pos, rot = scene.tcp_pose()
    q = np.zeros(model.nq)
    q[:7] = scene.joint_pos()
    q[7:] = scene.data.qpos[scene.finger_qpos]
    config.update(q)
    posture.set_target(q)
    goal = mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(rotvec_to_matrix(delta_rot) @ rot),
                                                 pos + delta_pos - np.asarray(ARM_BASE))
    frame.set_target(goal)
    velocity = mink.solve_ik(config, [frame, posture], 1.0, "daqp", damping=1e-4, limits=[mink.ConfigurationLimit(model)])
    config.integrate_inplace(velocity, 1.0)
    return config.q[:7]


def test_ik_step_is_mink_solve_ik_by_hand():
    # 3 cm forward and down, a 0.2 rad turn about z: the kept-buffer program and mink.solve_ik
    # build the same quadratic program, so the joint targets agree bit for bit
    env = bench("eef_delta")
    delta_pos, delta_rot = np.array([0.03, 0.0, -0.03]), np.array([0.0, 0.0, 0.2])
    expected = _mink_reference(env, delta_pos, delta_rot)
    assert np.array_equal(env.controller.solve(delta_pos, delta_rot), expected)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(-0.05, 0.05), min_size=3, max_size=3), st.lists(st.floats(-0.5, 0.5), min_size=3, max_size=3),
       st.lists(st.floats(-0.3, 0.3), min_size=7, max_size=7))
def test_ik_step_is_mink_solve_ik(delta_pos, delta_rot, offset):
    env = bench("eef_delta")
    scene = env.scene
    scene.data.qpos[scene.arm_qpos] = np.clip(np.array(HOME_Q) + offset, JOINT_LOW, JOINT_HIGH)
    scene.mujoco.mj_forward(scene.model, scene.data)
    first = env.controller.solve(np.asarray(delta_pos), np.asarray(delta_rot))  # the program's buffers are kept ...
    again = env.controller.solve(np.asarray(delta_pos), np.asarray(delta_rot))  # ... and reused: same answer
    assert np.array_equal(first, again)
    assert np.array_equal(first, _mink_reference(env, np.asarray(delta_pos), np.asarray(delta_rot)))
