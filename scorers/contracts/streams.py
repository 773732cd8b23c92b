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


class _Stream:
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

    def row(self) -> Row:
        raise NotImplementedError

    def table(self) -> Any:
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows)


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

    def set(self, **state: Any) -> WeighingStream:
        for key, value in state.items():
            if not hasattr(self, key):
                raise AttributeError(key)
            setattr(self, key, set(value) if isinstance(value, (set, frozenset, list, tuple)) else value)
        return self

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
    tracker = contract.tracker(instance, window_s=window_s)
    pending: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
    for step, kind, fields in extra_events:
        pending.setdefault(step, []).append((kind, fields))
    every = max(1, int(round(obs_every_s * _rate(rows))))
    version = 0
    with RunWriter.create(root, manifest) as run:
        run.emit(EpisodeStart, t=float(rows[0]["t"]) if rows else 0.0, episode=0)
        for index, row in enumerate(rows):
            for event in tracker.step(row):
                event.emit(run)
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
        end = tracker.end()
        t_end = float(rows[-1]["t"]) if rows else 0.0
        run.emit(EpisodeEnd, t=t_end, episode=0, reason="success" if end["physical_complete"] else "timeout",
                 physical_complete=end["physical_complete"], valid_complete=end["physical_complete"])
        import pyarrow as pa

        run.write_measurements(pa.Table.from_pylist([dict(r) for r in rows]))
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
