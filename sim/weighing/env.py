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

from typing import Any

import numpy as np

from labrecord.models import ActionSpec
from labrecord.recorders.contacts import OBJECT0, TABLE, found_matrix, hand_on_pan, robot_touch, supported_by_pan
from labrecord.sim.bench.env import DEFAULT_SIZE, BenchEnv
from labrecord.sim.bench.scene import FINGER_OPEN_M
from labrecord.sim.weighing.scene import OBJECTS, PAN_RADIUS, STANDARDS, Layout, Placement, WeighingScene, contact_pairs

CAMERAS: tuple[str, ...] = ("front", "wrist", "display")
#: evaluator-state channels: given to a policy only when it declares them (privileged)
PRIVILEGED_CHANNELS: tuple[str, ...] = ("display_reading", "object_poses")
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


class WeighingEnv(BenchEnv):
    """The weighing bench: its raw rows, measurement columns and the balance display,
    which shows the readout the scorer publishes (:meth:`show`)."""

    privileged_channels = PRIVILEGED_CHANNELS

    def __init__(self, action_spec: ActionSpec | None = None, cameras: tuple[str, ...] = CAMERAS,
                 size: int = DEFAULT_SIZE) -> None:
        super().__init__(WeighingScene(size, size), OBJECTS, action_spec, cameras)
        self._pairs = contact_pairs()
        self._contact_known: dict[bytes, np.ndarray] = {}
        self.f_empty_n = 0.0

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

    def end_block(self) -> dict[str, np.ndarray]:
        """Weighing measurement columns for the steps since the last call (n rows)."""
        n, columns = self._block_steps()
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
        columns.update({
            "pan_force_n": force,
            "sensor_ok": np.isfinite(force) & (np.abs(force) <= CAPACITY_N),
            "pan_speed": np.zeros(n),  # the pan is welded to the balance base
            "hand_pan_contact": graph[-1],
            "arm_speed": np.abs(self._states[:n, self._arm_qvel]).max(axis=1),
            "robot_balance_force_n": np.sqrt((force_on_balance * force_on_balance).sum(axis=1)),
        })
        # per standard: views into the stacked (k, n) arrays, named as in _COLUMN_NAMES
        stacked = (graph[:k], graph[k:2 * k], grasped, speed, over, graph[3 * k:4 * k], pos[:, 0], pos[:, 1], pos[:, 2])
        columns.update(zip(_COLUMN_NAMES, [rows[i] for i in range(k) for rows in stacked]))
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

    # -- public evidence ----------------------------------------------------------------
    def show(self, readouts: dict[str, Any]) -> None:
        """Light the balance display with the ``display_reading`` readout (the contract's
        display chain, published by the scorer) before the cameras render."""
        reading = readouts.get("display_reading")
        if reading:
            self.scene.show_reading(reading["text"], reading["stable"])


def _default_layout() -> Layout:
    return Layout(table_spot={name: i for i, name in enumerate(STANDARDS)}, pan_spot={name: i for i, name in enumerate(STANDARDS)})
