"""Constructed measurement streams: scripted, physics-free episodes for tests, benchmarks
and documentation, and :func:`record_run`, which drives a contract's online tracker over
such a stream and writes a complete run directory through ``RunWriter``.

A stream is a list of rows (column -> value) in the family's measurement schema.  The
builders hold a physical state and append rows at ``hz`` for a given duration, so a test
reads like the episode it describes::

    s = WeighingStream(instance)
    s.hold(1.5)                              # sample alone on the pan
    s.set(grasped={"w50"}).hold(0.5)         # grasp the 50 g standard
    s.set(grasped=set(), on_pan={"w50"}).hold(4.0)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.models import EpisodeEnd, EpisodeStart, ObservationReceipt, RunManifest
from labrecord.rundir import RunWriter
from labrecord.scorers.contracts.base import TaskContract

Row = dict[str, Any]


class _Stream(ABC):
    """Rows at a fixed rate with the current state; subclasses define ``row()``."""

    def __init__(self, hz: float = 500.0) -> None:
        self.hz = hz
        self.rows: list[Row] = []
        self.step = 0

    @property
    def t(self) -> float:
        return self.step / self.hz

    def hold(self, seconds: float) -> _Stream:
        for _ in range(int(round(seconds * self.hz))):
            row = {"step": self.step, "t": self.t}
            row.update(self.row())
            self.rows.append(row)
            self.step += 1
        return self

    @abstractmethod
    def row(self) -> Row:
        """The family's measurement columns for the current physical state."""

    def table(self) -> Any:
        return rows_table(self.rows)


def rows_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Rows (column -> value) as a ``pyarrow.Table`` over the union of their columns.

    ``pyarrow.Table.from_pylist`` takes its columns from the first row only and silently
    drops any column that first appears later; a row lacking a column gets null there,
    which is what the online path reads for a missing key.
    """
    import pyarrow as pa

    names = list(dict.fromkeys(name for row in rows for name in row))
    return pa.Table.from_pydict({name: [row.get(name) for row in rows] for name in names})


class WeighingStream(_Stream):
    """Feedback weighing: the pan force follows the supported load (eq. 8 inverted).

    State: ``on_pan`` (standards whose support path ends at the pan), ``grasped`` (held in
    the gripper; a grasped standard also touching the pan loads it only by ``press_g``),
    ``contact`` (touched without a grasp), ``press_g`` (extra load from hand pressure,
    sets ``hand_pan_contact``), ``sensor_ok``, ``speed`` (standards and pan, m/s).
    """

    def __init__(self, instance: Any, hz: float = 500.0, f_empty_n: float | None = None) -> None:
        super().__init__(hz)
        self.instance = instance
        self.f_empty_n = instance.f_empty_n if f_empty_n is None else f_empty_n
        self.on_pan: set[str] = set(instance.start)
        self.grasped: set[str] = set()
        self.contact: set[str] = set()
        self.press_g = 0.0
        self.sensor_ok = True
        self.speed = 0.0
        self.over_pan: set[str] | None = None  # None: over-pan position unknown
        self._over_columns = False  # rows carry {w}_over_pan (once on, on for every row)

    def set(self, **state: Any) -> WeighingStream:
        for key, value in state.items():
            if not hasattr(self, key):
                raise AttributeError(key)
            setattr(self, key, set(value) if isinstance(value, (set, frozenset, list, tuple)) else value)
        if self.over_pan is not None and not self._over_columns:
            self._backfill_over_pan()
        return self

    def _backfill_over_pan(self) -> None:
        """Give earlier rows the ``{w}_over_pan`` columns as null (unknown).

        A measurement table has one set of columns for the whole episode.  Rows whose
        columns change mid-stream lose the late columns in ``Table.from_pylist``, and the
        replay then reads every release as over the pan while the online path saw where it
        happened.  Null is what the online path already read for these rows.
        """
        from labrecord.scorers.contracts.weighing import STANDARDS

        self._over_columns = True
        for row in self.rows:
            for w in STANDARDS:
                row.setdefault(f"{w}_over_pan", None)

    def load_g(self) -> float:
        from labrecord.scorers.contracts.weighing import MASS_G

        touched = self.grasped | self.contact
        return self.instance.sample_g + sum(MASS_G[w] for w in self.on_pan - touched) + self.press_g

    def row(self) -> Row:
        from labrecord.scorers.contracts.weighing import STANDARDS

        force = self.f_empty_n + self.load_g() * self.instance.g0 / 1000.0
        row: Row = {"pan_force_n": force if self.sensor_ok else float("nan"), "sensor_ok": self.sensor_ok,
                    "pan_speed": self.speed, "hand_pan_contact": self.press_g != 0.0}
        for w in STANDARDS:
            row[f"{w}_on_pan"] = w in self.on_pan
            row[f"{w}_contact"] = w in self.grasped or w in self.contact
            row[f"{w}_grasped"] = w in self.grasped
            row[f"{w}_speed"] = self.speed
            if self._over_columns:
                row[f"{w}_over_pan"] = None if self.over_pan is None else w in self.over_pan
        return row


def record_run(root: str | os.PathLike[str], manifest: RunManifest, contract: TaskContract, instance: Any,
               rows: Sequence[Mapping[str, Any]], *, obs_every_s: float = 0.1, window_s: float | None = None,
               extra_events: Iterable[tuple[int, Any, dict[str, Any]]] = ()) -> Path:
    """Write one episode as an online recorder would: rows stepped through the tracker,
    an observation delivered every ``obs_every_s``, events emitted as they arise.

    ``extra_events`` are ``(step, event class, fields)`` emitted after that step's
    observation (interventions, reports); a field value ``"$opp"`` / ``"$ev"`` is replaced
    by the current opportunity id / evidence version.
    """
    if manifest.task.contract_hash is None:
        manifest.task.contract_hash = contract.contract_hash()
    tracker = contract.tracker(instance, window_s=window_s)
    pending: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
    for step, kind, fields in extra_events:
        pending.setdefault(step, []).append((kind, fields))
    every = max(1, int(round(obs_every_s * _rate(rows))))
    version = 0
    failure_seqs: list[int] = []
    with RunWriter.create(root, manifest) as run:
        run.emit(EpisodeStart, t=float(rows[0]["t"]) if rows else 0.0, episode=0)
        for index, row in enumerate(rows):
            for event in tracker.step(row):
                event.emit(run, failure_seqs)
            step, t = int(row["step"]), float(row["t"])
            if index % every == 0:
                receipt = ObservationReceipt(obs_id=f"obs{version}", step=step, t_acquired=t, t_delivered=t,
                                             evidence_version=version, channels=["front", "wrist", "display"])
                version += 1
                run.observation(receipt)
                opened = tracker.observe(receipt)
                if opened is not None:
                    opened.emit(run)
            for kind, fields in pending.get(step, ()):
                current = tracker.current
                resolved = {k: (current.opp if v == "$opp" and current else
                                current.evidence_version if v == "$ev" and current else v) for k, v in fields.items()}
                run.emit(kind, t=t, **resolved)
        for event in tracker.finish():
            event.emit(run, failure_seqs)
        end = tracker.end()
        t_end = float(rows[-1]["t"]) if rows else 0.0
        run.emit(EpisodeEnd, t=t_end, episode=0, reason="success" if end["physical_complete"] else "timeout",
                 physical_complete=end["physical_complete"], valid_complete=end["physical_complete"])
        run.write_measurements(rows_table(rows))
    return run.dir


def _rate(rows: Sequence[Mapping[str, Any]]) -> float:
    if len(rows) < 2:
        return 1.0
    dt = float(rows[1]["t"]) - float(rows[0]["t"])
    return 1.0 / dt if dt > 0 and math.isfinite(dt) else 1.0


def jitter(rows: list[Row], rng: np.random.Generator, columns: Sequence[str], scale: float) -> list[Row]:
    """Add Gaussian noise of ``scale`` to float ``columns`` (explicit generator)."""
    noise = rng.normal(0.0, scale, size=(len(rows), len(columns)))
    out = []
    for row, eps in zip(rows, noise):
        row = dict(row)
        for name, e in zip(columns, eps.tolist()):
            if isinstance(row.get(name), float) and math.isfinite(row[name]):
                row[name] = row[name] + e
        out.append(row)
    return out


def slot_pose(calibration: Any, rotor: tuple[float, float, float, float], slot: int, depth_frac: float,
              radial_m: float = 0.0, axial_deg: float = 0.0) -> dict[str, float]:
    """World tip position and axis of a tube in rotor slot ``slot`` (rotor = x, y, z, yaw),
    inserted to ``depth_frac`` of the socket depth, offset ``radial_m`` and tilted
    ``axial_deg`` off the socket axis (both in the vertical plane through the slot)."""
    mouths, axes = calibration.slots()
    mouth, axis = mouths[slot], axes[slot]
    tilt = math.radians(axial_deg)
    side = np.cross(axis, [0.0, 0.0, 1.0])
    side = side / np.linalg.norm(side) if np.linalg.norm(side) > 0 else np.array([1.0, 0.0, 0.0])
    bent = math.cos(tilt) * axis + math.sin(tilt) * np.cross(side, axis)
    tip = mouth + depth_frac * calibration.socket_depth_m * axis + radial_m * np.cross(side, axis)
    x0, y0, z0, yaw = rotor
    c, s = math.cos(yaw), math.sin(yaw)

    def world(v: np.ndarray, origin: bool) -> tuple[float, float, float]:
        wx, wy = c * v[0] - s * v[1], s * v[0] + c * v[1]
        return (wx + x0, wy + y0, v[2] + z0) if origin else (wx, wy, v[2])

    (x, y, z), (ax, ay, az) = world(tip, True), world(bent, False)
    return {"x": x, "y": y, "z": z, "ax": ax, "ay": ay, "az": az}


class CentrifugeStream(_Stream):
    """Centrifuge loading: each tube is ``away`` (on the rack, far from the rotor) or in a
    slot with a depth, offsets and flags; the rotor has a pose (x, y, z, yaw)."""

    AWAY = {"x": 0.4, "y": 0.0, "z": 0.1, "ax": 0.0, "ay": 0.0, "az": -1.0}

    def __init__(self, instance: Any, hz: float = 500.0, rotor: tuple[float, float, float, float] | None = None) -> None:
        super().__init__(hz)
        self.instance = instance
        self.rotor = rotor if rotor is not None else (0.5, 0.0, 0.1, instance.rotor_yaw)
        self.tubes: dict[str, dict[str, Any]] = {}
        for tube in ("tube_a", "tube_b"):
            self.place(tube, None)
        for tube, slot in instance.start:
            self.place(tube, slot)

    def place(self, tube: str, slot: int | None, depth_frac: float = 0.9, radial_m: float = 0.0, axial_deg: float = 0.0,
              grasped: bool = False, supported: bool | None = None, speed: float = 0.0) -> CentrifugeStream:
        pose = dict(self.AWAY) if slot is None else slot_pose(self.instance.calibration, self.rotor, slot, depth_frac,
                                                             radial_m, axial_deg)
        self.tubes[tube] = {**pose, "grasped": grasped, "contact": grasped,
                            "supported": (slot is not None and not grasped) if supported is None else supported,
                            "speed": speed}
        return self

    def row(self) -> Row:
        x, y, z, yaw = self.rotor
        row: Row = {"rotor_x": x, "rotor_y": y, "rotor_z": z, "rotor_yaw": yaw}
        for tube, state in self.tubes.items():
            for key, value in state.items():
                row[f"{tube}_{key}"] = value
        return row


class RackStream(_Stream):
    """Placement recall: a rack pose, the tube (in a slot, in the gripper, or on the
    table) and the gripper (position, vertical speed); ``move_rack`` applies eq. 10."""

    def __init__(self, instance: Any, hz: float = 500.0) -> None:
        super().__init__(hz)
        self.instance = instance
        self.rack = tuple(instance.rack_pose)
        self.tube = {"x": 0.2, "y": 0.0, "z": 0.0, "in_rack": False, "on_table": True, "contact": False,
                     "grasped": False, "speed": 0.0}
        self.grip = {"x": 0.0, "y": 0.0, "z": 0.4, "vz": 0.0}
        self.occluded = False

    def slot_world(self, label: str, height: float = 0.0) -> tuple[float, float, float]:
        from labrecord.scorers.contracts.rack import pose_matrix, slot_center

        lx, ly = slot_center(label)
        p = pose_matrix(*self.rack) @ np.array([lx, ly, height, 1.0])
        return float(p[0]), float(p[1]), float(p[2])

    def approach(self, label: str, carrying: bool = False, height: float = 0.05, vz: float = -0.05) -> RackStream:
        """Gripper descending over ``label`` (carrying the tube or empty)."""
        x, y, z = self.slot_world(label, height)
        self.grip = {"x": x, "y": y, "z": z, "vz": vz}
        if carrying:
            self.tube.update(x=x, y=y, z=z, in_rack=False, on_table=False, contact=True, grasped=True, speed=abs(vz))
        return self

    def seat(self, label: str) -> RackStream:
        """Tube released into ``label``; the gripper withdraws upward."""
        x, y, z = self.slot_world(label)
        self.tube.update(x=x, y=y, z=z, in_rack=True, on_table=False, contact=False, grasped=False, speed=0.0)
        self.grip = {**self.grip, "z": self.grip["z"] + 0.2, "vz": 0.05}
        return self

    def lift(self) -> RackStream:
        """Grasp the tube and lift it clear of the rack."""
        self.grip = {**self.grip, "x": self.tube["x"], "y": self.tube["y"], "z": self.tube["z"] + 0.15, "vz": 0.05}
        self.tube.update(z=self.tube["z"] + 0.1, in_rack=False, on_table=False, contact=True, grasped=True, speed=0.05)
        return self

    def to_table(self, x: float = 0.4, y: float = -0.2) -> RackStream:
        self.tube.update(x=x, y=y, z=0.0, in_rack=False, on_table=True, contact=False, grasped=False, speed=0.0)
        self.grip = {"x": x, "y": y, "z": 0.3, "vz": 0.05}
        return self

    def still(self) -> RackStream:
        self.grip = {**self.grip, "vz": 0.0}
        return self

    def move_rack(self, pose: tuple[float, float, float, float]) -> RackStream:
        """The occluded transition: the rack jumps to ``pose``, a seated tube follows (eq. 10)."""
        from labrecord.scorers.contracts.rack import pose_matrix, rack_transition

        if self.tube["in_rack"]:
            t_tube = pose_matrix(self.tube["x"], self.tube["y"], self.tube["z"], 0.0)
            moved = rack_transition(t_tube, pose_matrix(*self.rack), pose_matrix(*pose))
            self.tube.update(x=float(moved[0, 3]), y=float(moved[1, 3]), z=float(moved[2, 3]))
        self.rack = tuple(pose)
        return self

    def set(self, **state: Any) -> RackStream:
        for key, value in state.items():
            setattr(self, key, value)
        return self

    def row(self) -> Row:
        x, y, z, yaw = self.rack
        row: Row = {"rack_x": x, "rack_y": y, "rack_z": z, "rack_yaw": yaw, "occluded": self.occluded}
        row.update({f"tube_{k}": v for k, v in self.tube.items()})
        row.update({f"grip_{k}": v for k, v in self.grip.items()})
        return row
