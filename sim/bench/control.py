"""Action conventions of the Panda bench and the controller that executes them.

A policy declares one convention through its :class:`~labrecord.models.ActionSpec`
(recorded in ``run.json``); the controller turns each action row into the scene's
joint-space command (seven joint position targets + a gripper command in [0, 1]) held
over one control period:

* ``joint_pos`` — absolute joint positions (7, rad) + gripper (0 open, 1 closed);
* ``joint_vel`` — joint velocities (7, rad/s) + gripper position, as DROID policies emit
  at 15 Hz; the joint target is the previous target advanced by velocity × period
  (ActionSpec ``representation="joint"``, ``mode="delta"``, ``units="rad/s"``);
* ``eef_delta`` — tool-centre translation (3, m) and rotation (3, axis-angle, rad), both
  in the world frame and relative to the measured pose at the control boundary, + gripper,
  as LIBERO policies emit; the goal pose goes through differential inverse kinematics
  (``mink``: a frame task on the ``tcp`` site and a light posture task, joint limits as
  constraints, one solver step from the measured configuration per row; more with
  ``iterations``).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import ActionSpec

#: joint limits of the Panda (rad), from the vendored MJCF
JOINT_LOW = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
JOINT_HIGH = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
#: Panda joint speed limits (rad/s)
JOINT_SPEED = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)
GRIPPER = "position: 0 open, 1 closed"
#: largest end-effector step per action row (m, rad)
EEF_STEP_M = 0.05
EEF_STEP_RAD = 0.5
_LOW, _HIGH = np.array(JOINT_LOW), np.array(JOINT_HIGH)
#: the constraint-sense type daqp reads (numpy's dtype for a C int; ``ctypes.c_int`` converts on every call)
_C_INT = np.dtype(ctypes.c_int)


def action_spec(convention: str, control_hz: float | None = None, max_chunk: int = 1) -> ActionSpec:
    """The ActionSpec of a named convention (``joint_pos``, ``joint_vel``, ``eef_delta``)."""
    if convention == "joint_pos":
        return ActionSpec(representation="joint", dim=8, mode="absolute", frame="joint", units="rad", gripper=GRIPPER,
                          control_hz=control_hz or 10.0, max_chunk=max_chunk,
                          low=[*JOINT_LOW, 0.0], high=[*JOINT_HIGH, 1.0])
    if convention == "joint_vel":
        return ActionSpec(representation="joint", dim=8, mode="delta", frame="joint", units="rad/s", gripper=GRIPPER,
                          control_hz=control_hz or 15.0, max_chunk=max_chunk,
                          low=[*(-v for v in JOINT_SPEED), 0.0], high=[*JOINT_SPEED, 1.0])
    if convention == "eef_delta":
        step = [EEF_STEP_M] * 3 + [EEF_STEP_RAD] * 3
        return ActionSpec(representation="eef", dim=7, mode="delta", frame="world", units="m, rad (axis-angle)",
                          gripper=GRIPPER, control_hz=control_hz or 10.0, max_chunk=max_chunk,
                          low=[-v for v in step] + [0.0], high=step + [1.0])
    raise LabrecordError(f"action convention {convention!r}: expected joint_pos, joint_vel or eef_delta")


def control_rate(spec: ActionSpec) -> float:
    """The control rate of ``spec`` (Hz): a bench steps every convention at a declared rate
    (an imported record may leave it unknown; such a spec cannot drive the arm)."""
    if spec.control_hz is None:
        raise LabrecordError("action spec: no control rate; the bench executes rows at a declared control_hz")
    return float(spec.control_hz)


def convention_of(spec: ActionSpec) -> str:
    """The convention an ActionSpec declares (inverse of :func:`action_spec`)."""
    if spec.representation == "joint" and spec.dim == 8:
        return "joint_pos" if spec.mode == "absolute" else "joint_vel"
    if spec.representation == "eef" and spec.mode == "delta" and spec.dim == 7:
        return "eef_delta"
    raise LabrecordError(f"action spec {spec.representation}/{spec.mode}/dim {spec.dim}: the Panda bench executes "
                         "joint_pos (joint/absolute/8), joint_vel (joint/delta/8) or eef_delta (eef/delta/7)")


def rotvec_to_matrix(r: np.ndarray) -> np.ndarray:
    """Rodrigues: axis-angle (3,) to a rotation matrix."""
    angle = float(np.linalg.norm(r))
    if angle < 1e-12:
        return np.eye(3)
    k0, k1, k2 = (np.asarray(r, dtype=float) / angle).tolist()
    kx = np.array([[0.0, -k2, k1], [k2, 0.0, -k0], [-k1, k0, 0.0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


def matrix_to_rotvec(rot: np.ndarray) -> np.ndarray:
    """A rotation matrix to axis-angle (3,), angle in [0, π]."""
    cos = np.clip((np.trace(rot) - 1) / 2, -1.0, 1.0)
    angle = float(np.arccos(cos))
    if angle < 1e-9:
        return np.zeros(3)
    if np.pi - angle < 1e-6:  # half turn: the axis from the symmetric part
        axis = np.sqrt(np.maximum((np.diag(rot) + 1) / 2, 0.0))
        i = int(np.argmax(axis))
        axis[np.arange(3) != i] = (rot[i, np.arange(3) != i] + rot[np.arange(3) != i, i]) / (4 * axis[i])
        return axis / np.linalg.norm(axis) * angle
    w = np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]])
    return w / (2 * np.sin(angle)) * angle


class ArmController:
    """Turns action rows of one convention into the scene's joint-space command."""

    def __init__(self, scene: Any, spec: ActionSpec, iterations: int = 1) -> None:
        self.scene = scene
        self.convention = convention_of(spec)
        self.period = 1.0 / control_rate(spec)
        self.iterations = iterations
        self._ik: Any = None

    def command(self, action: np.ndarray) -> np.ndarray:
        """``[q1 … q7, grip]`` for one action row."""
        action = np.asarray(action, dtype=float)
        if self.convention == "joint_pos":
            q = action[:7]
        elif self.convention == "joint_vel":
            q = self.scene.data.ctrl[self.scene.arm_ctrl] + action[:7] * self.period
        else:
            q = self.solve(action[:3], action[3:6])
        return np.append(np.minimum(np.maximum(q, _LOW), _HIGH), action[-1])  # np.clip, without its dispatch

    def solve(self, delta_pos: np.ndarray, delta_rot: np.ndarray) -> np.ndarray:
        """Joint targets reaching the measured tool pose moved by the given delta."""
        import mink

        from labrecord.sim.bench.scene import ARM_BASE, arm_path

        if self._ik is None:
            import mujoco

            model = mujoco.MjModel.from_xml_path(arm_path())  # the arm alone, base at its origin
            frame = mink.FrameTask("tcp", "site", position_cost=1.0, orientation_cost=0.5, lm_damping=1e-6)
            posture = mink.PostureTask(model, cost=1e-3)
            config = mink.Configuration(model)
            self._ik = (model, config, frame, posture, _StepProgram(config, [frame, posture], [mink.ConfigurationLimit(model)]))
        model, config, frame, posture, program = self._ik
        pos, rot = self.scene.tcp_pose()
        q = np.zeros(model.nq)
        q[:7] = self.scene.joint_pos()
        q[7:] = self.scene.data.qpos[self.scene.finger_qpos]
        config.update(q)
        posture.set_target(q)
        goal_pos = pos + delta_pos - np.asarray(ARM_BASE)
        goal_rot = rotvec_to_matrix(delta_rot) @ rot
        frame.set_target(mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(goal_rot), goal_pos))
        for i in range(self.iterations):
            step = program.solve()
            if i + 1 < self.iterations:
                config.integrate_inplace(step, 1.0)
        return config.integrate(step, 1.0)[:7]


class _StepProgram:
    """One differential-IK step (dt 1 s, damping 1e-4) from ``mink``'s tasks and limits,
    solved with ``daqp``.

    The quadratic program is the one ``mink.solve_ik(config, tasks, 1.0, "daqp",
    damping=1e-4, limits=limits)`` builds and hands to ``daqp`` through ``qpsolvers``: each
    task's weighted residual (``compute_qp_residual``) stacked into ``W``, ``H = WᵀW`` plus
    the damping and the tasks' Levenberg–Marquardt terms on the diagonal, ``c = −eᵀW``,
    each limit's ``G Δq ≤ h`` — the same operations on the same values, so the same
    solution.  The stacked ``W`` and the error vector are kept between rows instead of
    being rebuilt, and the per-call problem checks, solution object and limit warning
    are left out.
    """

    def __init__(self, config: Any, tasks: list[Any], limits: list[Any], damping: float = 1e-4) -> None:
        self.config, self.tasks, self.limits, self.damping = config, tasks, limits, damping
        self._w: np.ndarray | None = None
        self._e: np.ndarray | None = None

    def solve(self) -> np.ndarray:
        """The tangent step Δq at the configuration's current ``q``."""
        import daqp
        import mink

        config = self.config
        nv = config.model.nv
        residuals = [task.compute_qp_residual(config) for task in self.tasks]
        if self._w is None:
            rows = sum(len(e) for _, e, _ in residuals)
            self._w, self._e = np.empty((rows, nv)), np.empty(rows)
        w, e = self._w, self._e
        assert w is not None and e is not None
        mu_total, at = 0.0, 0
        for jacobian, error, mu in residuals:
            w[at:at + len(error)] = jacobian
            e[at:at + len(error)] = error
            at += len(error)
            mu_total += mu
        h_matrix = w.T @ w
        c = -(e @ w)
        h_matrix.flat[:: nv + 1] += self.damping + mu_total
        g_rows, h_rows = [], []
        for limit in self.limits:
            inequality = limit.compute_qp_inequalities(config, 1.0)
            if not inequality.inactive:
                g_rows.append(inequality.G)
                h_rows.append(inequality.h)
        if g_rows:
            g, upper = (g_rows[0], h_rows[0]) if len(g_rows) == 1 else (np.vstack(g_rows), np.hstack(h_rows))
        else:
            g, upper = np.zeros((0, nv)), np.zeros(0)
        # fresh bounds and senses: daqp may mark active constraints in the sense array
        x, _, exitflag, _ = daqp.solve(h_matrix, c, g, upper, np.full(len(upper), -1e30),
                                       np.zeros(len(upper), dtype=_C_INT))
        if exitflag <= 0:
            raise mink.NoSolutionFound("daqp")
        return x
