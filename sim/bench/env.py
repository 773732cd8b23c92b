"""What every bench environment shares: the step owner's side of a scene (an
:class:`~labrecord.recorders.loop.Environment`).

:class:`BenchEnv` executes action rows through the arm controller (joint targets ramped
over a control period), advances physics inside MuJoCo's ``rollout`` while keeping each
step's full state and sensor row, resets to an instance (with settling steps), saves and
restores checkpoints and renders.  A family's env (``sim/<family>/env.py``) derives its
measurement columns from the kept rows in ``end_block`` and may publish readouts the
scorer declares (:meth:`BenchEnv.show`).
"""
from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from labrecord.models import ActionSpec
from labrecord.sim.bench.scene import PHYSICS_HZ

DEFAULT_SIZE = 224
#: sub-steps of the joint-target ramp within one control period
RAMP_STEPS = 10


class BenchEnv(ABC):
    """A bench ``scene`` as the step owner drives it; ``bodies`` are the scene's free
    bodies (declared consecutively) whose state rows the measurement columns read."""

    physics_hz = PHYSICS_HZ
    #: evaluator-state channels: given to a policy only when it declares them (privileged)
    privileged_channels: tuple[str, ...] = ("object_poses",)

    def __init__(self, scene: Any, bodies: tuple[str, ...] | list[str], action_spec: ActionSpec | None,
                 cameras: tuple[str, ...]) -> None:
        from labrecord.sim.bench.control import ArmController, action_spec as spec_of, control_rate

        self.scene = scene
        self.action_spec = action_spec or spec_of("eef_delta")
        self.controller = ArmController(self.scene, self.action_spec)
        self.control_hz = control_rate(self.action_spec)
        self.cameras = cameras
        self._k = 0
        self._step = 0
        self._ramp: tuple[np.ndarray, np.ndarray] | None = None
        self._bind_rows(bodies)

    def _bind_rows(self, bodies: tuple[str, ...] | list[str]) -> None:
        """The per-step buffers of one control period and the views the measurement
        columns read: the free ``bodies``, whose joints are declared consecutively (one
        slice of the state row holds them all)."""
        from mujoco.rollout import Rollout

        mujoco, m, d = self.scene.mujoco, self.scene.model, self.scene.data
        steps = int(round(self.physics_hz / self.control_hz))
        qpos0, qvel0, count = self.scene.qpos_adr[bodies[0]], self.scene.qvel_adr[bodies[0]], len(bodies)
        assert [self.scene.qpos_adr[n] for n in bodies] == list(range(qpos0, qpos0 + 7 * count, 7))
        self._full = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self._user = int(mujoco.mjtState.mjSTATE_USER)
        #: rows of one control period: the full physics state (time, qpos, qvel, …) and the sensor row
        self._states = np.zeros((steps, mujoco.mj_stateSize(m, self._full)))
        self._sensor_rows = np.zeros((steps, m.nsensordata))
        # the state vector is time, then qpos, then qvel (mjtState bit order)
        self._t = self._states[:, 0]
        self._qpos_rows = self._states[:, 1 + qpos0:1 + qpos0 + 7 * count]
        self._qvel_rows = self._states[:, 1 + m.nq + qvel0:1 + m.nq + qvel0 + 6 * count]
        self._arm_qvel = 1 + m.nq + self.scene.arm_qvel  # state columns of the arm joints' speeds
        self._controls = np.zeros((steps, mujoco.mj_stateSize(m, self._user)))
        self._initial = np.zeros((1, self._states.shape[1]))
        self._warmstart = np.zeros((1, m.nv))
        self._rollout = Rollout(nthread=0)
        self._data = d

    @property
    def time(self) -> float:
        return float(self._data.time)

    # -- episode set-up -----------------------------------------------------------------
    def reset(self, instance: Any, settle_steps: int = 0) -> None:
        """The scene reset to ``instance``, then ``settle_steps`` physics steps before recording."""
        self.scene.reset(instance)
        for _ in range(settle_steps):
            self.scene.step()
        self._k = 0
        self._step = 0
        self._ramp = None

    # -- stepping -----------------------------------------------------------------------
    def apply(self, action: np.ndarray) -> None:
        """Execute one action row of the declared convention over the next control period:
        the joint targets ramp linearly from the previous ones in :data:`RAMP_STEPS`
        sub-steps (a smooth servo reference, no step in commanded position)."""
        scene = self.scene
        command = self.controller.command(action)
        start = scene.data.ctrl[scene.arm_ctrl].copy()
        scene.apply(command)
        self._ramp = (start, command[:7] - start)

    def hold_action(self, last: np.ndarray | None = None) -> np.ndarray:
        """The action row that keeps the arm where it is (gripper as in ``last``)."""
        grip = float(last[-1]) if last is not None else 0.0
        if self.controller.convention == "joint_pos":
            return np.append(self.scene.joint_pos(), grip)
        return np.append(np.zeros(self.action_spec.dim - 1), grip)

    def advance(self, steps: int) -> None:
        """``steps`` physics steps, recording each one's state and sensor row.

        The steps run inside MuJoCo's ``rollout`` (C loop; the same ``mj_step`` calls on
        this bench's own ``MjData``, bit for bit what a Python loop of ``mj_step`` gives):
        the user inputs (controls, mocap, …) of each step are the current ones, with the
        arm targets of the ramp set at its :data:`RAMP_STEPS` sub-steps.
        """
        mujoco, m, d = self.scene.mujoco, self.scene.model, self._data
        rows = self._controls[:steps]
        mujoco.mj_getState(m, d, rows[0], self._user)
        rows[1:] = rows[0]
        if self._ramp is not None:
            start, delta = self._ramp
            rows[:, self.scene.arm_ctrl] = start + delta * _ramp_fraction(steps)  # ctrl leads the user-input vector
        mujoco.mj_getState(m, d, self._initial[0], self._full)
        self._warmstart[0] = d.qacc_warmstart
        k = self._k
        self._rollout.rollout([m], [d], self._initial, rows[None], control_spec=self._user, skip_checks=True, nstep=steps,
                              initial_warmstart=self._warmstart, state=self._states[None, k:k + steps],
                              sensordata=self._sensor_rows[None, k:k + steps])
        self._k += steps
        self._ramp = None

    @abstractmethod
    def end_block(self) -> dict[str, np.ndarray]:
        """The family's measurement columns for the steps since the last call (n rows)."""

    def _block_steps(self) -> tuple[int, dict[str, np.ndarray]]:
        """``(n, {step, t})``: the rows kept since the last block and their common columns;
        the block cursor moves on."""
        n = self._k
        columns = {"step": np.arange(self._step, self._step + n, dtype=np.int64), "t": self._t[:n].copy()}
        self._step += n
        self._k = 0
        return n, columns

    # -- checkpoints (labrecord.recorders.checkpoint) -------------------------------------
    def get_state(self) -> bytes:
        """The physics state to continue from: the ``mjSTATE_INTEGRATION`` vector (time,
        qpos, qvel, act, warm-start qacc, ctrl, mocap, user data), the whole ``MjData``
        (the derived sensor, site and contact quantities of the last step, which the next
        command and step read) and this wrapper's block cursor and ramp."""
        import pickle

        mujoco, m, d = self.scene.mujoco, self.scene.model, self._data
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        vector = np.empty(mujoco.mj_stateSize(m, spec))
        mujoco.mj_getState(m, d, vector, spec)
        return pickle.dumps({"integration": vector, "data": d, "k": self._k, "step": self._step,
                             "ramp": self._ramp}, protocol=pickle.HIGHEST_PROTOCOL)

    def set_state(self, state: bytes) -> None:
        """Restore :meth:`get_state` into this bench (its ``MjData`` is copied into, so the
        column views stay bound); the integration vector is set last and checked."""
        import pickle

        mujoco, m, d = self.scene.mujoco, self.scene.model, self._data
        saved = pickle.loads(state)  # noqa: S301 - produced by get_state
        mujoco.mj_copyData(d, m, saved["data"])
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        mujoco.mj_setState(m, d, saved["integration"], spec)
        self._k, self._step, self._ramp = saved["k"], saved["step"], saved["ramp"]

    def state_vector(self) -> np.ndarray:
        """The ``mjSTATE_INTEGRATION`` vector alone (what a branch start is compared on)."""
        mujoco, m = self.scene.mujoco, self.scene.model
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        vector = np.empty(mujoco.mj_stateSize(m, spec))
        mujoco.mj_getState(m, self._data, vector, spec)
        return vector

    def state_digest(self) -> str:
        """sha256 (16 hex) of the model parameters an instance sets (masses, inertias) and
        the model size: a state is restorable only into a bench with the same digest."""
        import hashlib

        m = self.scene.model
        h = hashlib.sha256()
        for array in (m.body_mass, m.body_inertia, np.asarray([m.nq, m.nv, m.nu, m.opt.timestep])):
            h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
        return h.hexdigest()[:16]

    # -- public evidence ----------------------------------------------------------------
    def public_state(self) -> dict[str, Any]:
        """Proprioception (``robot``, native) and ``object_poses`` (evaluator state: what the
        scene's ``object_poses`` gives), which reaches only a policy that declares it."""
        scene = self.scene
        return {"robot": scene.robot_state(), "object_poses": scene.object_poses()}

    def show(self, readouts: dict[str, Any]) -> None:
        """Put the scorer's public readouts of this boundary into the scene before it is
        rendered; a bench without a display has nothing to light (the readouts still reach
        the policy as the scorer's channels)."""
        return None

    def render(self, camera: str) -> np.ndarray:
        return self.scene.render(camera)

    def close(self) -> None:
        self.scene.close()


@functools.lru_cache(maxsize=8)
def _ramp_fraction(steps: int) -> np.ndarray:
    """(steps, 1): the share of a period's target change applied at each physics step
    (the ramp's :data:`RAMP_STEPS` stairs; read-only)."""
    every = max(1, steps // RAMP_STEPS)
    fraction = np.minimum(1.0, (np.arange(steps) // every + 1) / RAMP_STEPS)[:, None]
    fraction.setflags(write=False)
    return fraction
