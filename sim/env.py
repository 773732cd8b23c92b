"""The weighing bench as an :class:`~labrecord.recorders.loop.Environment`.

A control period's physics steps run inside ``mujoco.rollout``, which leaves per step
only raw rows (the physics state and the sensor row — load cell, the arm-on-balance force
and the per-pair contact sensors, all evaluated by MuJoCo inside ``mj_step``);
:meth:`WeighingEnv.end_block` turns a block into the measurement columns of
``labrecord.measurements`` (family ``weighing``) in bulk.  The display the policy sees
comes from the task contract's display chain fed with those same columns (see
:class:`labrecord.recorders.online.ContractScorer`).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from labrecord.recorders.contacts import OBJECT0, TABLE, found_matrix, hand_on_pan, robot_touch, supported_by_pan
from labrecord.models import ActionSpec
from labrecord.sim.scene import (
    FINGER_OPEN_M, OBJECTS, PAN_RADIUS, PHYSICS_HZ, STANDARDS, Placement, WeighingScene, contact_pairs,
)

CAMERAS: tuple[str, ...] = ("front", "wrist", "display")
#: evaluator-state channels: given to a policy only when it declares them (privileged)
PRIVILEGED_CHANNELS: tuple[str, ...] = ("display_reading", "object_poses")
DEFAULT_SIZE = 224
#: sub-steps of the joint-target ramp within one control period
RAMP_STEPS = 10
#: load-cell capacity (about 5 kg with the pan): beyond it the sensor reports overload and the reading is invalid
CAPACITY_N = 50.0
#: the standards' places among the objects (the sample comes first)
_STANDARDS = slice(1, len(OBJECTS))
assert OBJECTS[_STANDARDS] == STANDARDS
#: per-standard measurement column names, standard by standard (end_block's column order)
_COLUMN_NAMES: tuple[str, ...] = tuple(f"{name}_{quantity}" for name in STANDARDS for quantity in (
    "on_pan", "contact", "grasped", "speed", "over_pan", "on_table", "x", "y", "z"))
#: distinct contact states whose graph a bench keeps (a bound, never reached in practice)
_KNOWN_STATES = 4096


class WeighingEnv:
    """Scene + raw step recording; ``display`` supplies the public readout."""

    physics_hz = PHYSICS_HZ
    privileged_channels = PRIVILEGED_CHANNELS

    def __init__(self, action_spec: ActionSpec | None = None, cameras: tuple[str, ...] = CAMERAS,
                 size: int = DEFAULT_SIZE) -> None:
        from labrecord.sim.control import ArmController, action_spec as spec_of

        self.scene = WeighingScene(size, size)
        self.action_spec = action_spec or spec_of("eef_delta")
        self.controller = ArmController(self.scene, self.action_spec)
        self.control_hz = self.action_spec.control_hz
        self.cameras = cameras
        self._pairs = contact_pairs()
        self._contact_known: dict[bytes, np.ndarray] = {}
        self._k = 0
        self._step = 0
        self._ramp: tuple[np.ndarray, np.ndarray] | None = None
        self.f_empty_n = 0.0
        self.display: Callable[[], dict[str, Any]] = lambda: {}
        self._bind_rows(OBJECTS)

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
    def calibrate_empty(self) -> float:
        """F↑_empty: the settled load-cell force with nothing on the pan (eq. 8 bias)."""
        scene = self.scene
        scene.reset(Placement(sample_g=100.0, initially_on_pan=frozenset(), layout=_default_layout()))
        adr = scene.qpos_adr["sample"]
        scene.data.qpos[adr:adr + 3] = (0.3, 0.35, 0.021)
        scene.mujoco.mj_forward(scene.model, scene.data)
        for _ in range(100):
            scene.step()
        self.f_empty_n = scene.load_force()
        return self.f_empty_n

    def reset(self, placement: Placement, settle_steps: int = 0) -> None:
        self.scene.reset(placement)
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

    def end_block(self) -> dict[str, np.ndarray]:
        """Weighing measurement columns for the steps since the last call (n rows)."""
        n = self._k
        found = self._sensor_rows[:n, self.scene.touch_adr:] > 0
        # contacts change rarely within a control period: one graph per run of equal rows
        new = np.ones(n, dtype=bool)
        new[1:] = (found[1:] != found[:-1]).any(axis=1)
        row_of = np.cumsum(new) - 1
        graph = self._contact_features(found[new]).T[:, row_of]  # (features, n): each one a contiguous row
        k = len(STANDARDS)
        closed = float(self._data.ctrl[self.scene.grip_ctrl]) < 0.5 * FINGER_OPEN_M  # command toward closed
        grasped = graph[2 * k:3 * k] & closed
        lin = self._qvel_rows[:n].reshape(n, len(OBJECTS), 6)[:, _STANDARDS, :3]
        speed = np.sqrt((lin * lin).sum(axis=2)).T.copy()
        pos = self._qpos_rows[:n].reshape(n, len(OBJECTS), 7)[:, _STANDARDS, :3].transpose(1, 2, 0).copy()
        # over the pan's footprint: a release there that does not land is a miss
        over = np.hypot(pos[:, 0], pos[:, 1]) < PAN_RADIUS
        sensors = self._sensor_rows[:n]
        force = sensors[:, 2].copy()
        adr = self.scene.balance_force_adr
        force_on_balance = sensors[:, adr:adr + 3]
        columns: dict[str, np.ndarray] = {
            "step": np.arange(self._step, self._step + n, dtype=np.int64),
            "t": self._t[:n].copy(),
            "pan_force_n": force,
            "sensor_ok": np.isfinite(force) & (np.abs(force) <= CAPACITY_N),
            "pan_speed": np.zeros(n),  # the pan is welded to the balance base
            "hand_pan_contact": graph[-1],
            "arm_speed": np.abs(self._states[:n, self._arm_qvel]).max(axis=1),
            "robot_balance_force_n": np.sqrt((force_on_balance * force_on_balance).sum(axis=1)),
        }
        # per standard: views into the stacked (k, n) arrays, named as in _COLUMN_NAMES
        stacked = (graph[:k], graph[k:2 * k], grasped, speed, over, graph[3 * k:4 * k], pos[:, 0], pos[:, 1], pos[:, 2])
        columns.update(zip(_COLUMN_NAMES, [rows[i] for i in range(k) for rows in stacked]))
        self._step += n
        self._k = 0
        return columns

    def _contact_features(self, found: np.ndarray) -> np.ndarray:
        """(u, 4·k + 1) bool for u contact-sensor rows: per standard on the pan's support
        path, touched by a robot link, between both fingers, on the table; then hand
        pressure on the load.  A bench meets few distinct contact states, so each one's
        graph is derived once and kept (keyed by its sensor row)."""
        known = self._contact_known
        out = np.empty((len(found), 4 * len(STANDARDS) + 1), dtype=bool)
        missing = []
        for i, row in enumerate(found):
            hit = known.get(row.tobytes())
            if hit is None:
                missing.append(i)
            else:
                out[i] = hit
        if missing:
            touch = found_matrix(found[missing], self._pairs, len(OBJECTS))
            contact, bilateral = robot_touch(touch)
            derived = np.concatenate((supported_by_pan(touch)[:, _STANDARDS], contact[:, _STANDARDS],
                                      bilateral[:, _STANDARDS], touch[:, OBJECT0:, TABLE][:, _STANDARDS],
                                      hand_on_pan(touch)[:, None]), axis=1)
            if len(known) > _KNOWN_STATES:
                known.clear()
            for i, row in zip(missing, derived):
                known[found[i].tobytes()] = row
                out[i] = row
        return out

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
        """Proprioception (``robot``, native) and the evaluator-state channels
        ``display_reading`` (numeric reading and stability flag) and ``object_poses``,
        which reach only a policy that declares them."""
        scene = self.scene
        return {"robot": scene.robot_state(), "object_poses": scene.object_poses(), "display_reading": self.display()}

    def render(self, camera: str) -> np.ndarray:
        reading = self.display()
        if reading:
            self.scene.show_reading(reading["text"], reading["stable"])
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


def _default_layout() -> Any:
    from labrecord.sim.scene import Layout

    return Layout(table_spot={name: i for i, name in enumerate(STANDARDS)}, pan_spot={name: i for i, name in enumerate(STANDARDS)})
