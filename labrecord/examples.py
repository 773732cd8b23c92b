"""Small, valid example records: used by ``labrecord validate`` demos, tests and benchmarks.

Everything here goes through the public models and :class:`~labrecord.rundir.RunWriter`,
so an example run is exactly what a producer would write.
"""
from __future__ import annotations

import os
from pathlib import Path

from labrecord.models import (
    ActionSpec, Choice, Confirm, Dwell, EpisodeEnd, EpisodeStart, Evaluation, ObservationReceipt,
    ObservationSpec, Operation, Opportunity, Physics, Population, RunManifest, Seeds, System, Task,
)
from labrecord.rundir import RunWriter

FIXED_TIME = "2026-01-01T00:00:00.000000Z"


def example_manifest(run_id: str = "example-0001", *, system: str = "reference", kind: str = "scripted",
                     family: str = "weighing", task_id: str = "weighing-basic", condition: str = "basic",
                     evaluation_version: str = "1", population: tuple[str, str] | None = None,
                     seed: int = 0) -> RunManifest:
    """A complete ``run.json`` with fixed timestamps (deterministic bytes)."""
    return RunManifest(
        run_id=run_id,
        created_at=FIXED_TIME,
        task=Task(family=family, task_id=task_id, version="1", condition=condition),  # type: ignore[arg-type]
        system=System(
            name=system, kind=kind, revision="0",  # type: ignore[arg-type]
            action_spec=ActionSpec(representation="eef", dim=4, mode="absolute", frame="world",
                                   units="m", gripper="binary", control_hz=10.0, max_chunk=8),
            observation=ObservationSpec(channels=["front", "wrist", "display", "state"]),
        ),
        evaluation=Evaluation(version=evaluation_version,
                              population=Population(name=population[0], instance_id=population[1]) if population else None),
        seeds=Seeds(task_state=seed, layout=seed, appearance=seed, policy=seed),
        physics=Physics(engine="mujoco", physics_hz=500.0, control_hz=10.0),
    )


def write_example_run(root: str | os.PathLike[str], run_id: str = "example-0001", *, correct: bool = True,
                      complete: bool = True, opportunities: int = 1, **manifest_fields: object) -> Path:
    """Write a small weighing run: one opportunity per decision, one first native choice."""
    manifest = example_manifest(run_id, **manifest_fields)  # type: ignore[arg-type]
    legal = [Operation("add", "w20", "pan")]
    with RunWriter.create(root, manifest) as run:
        run.emit(EpisodeStart, t=0.0, episode=0)
        t = 0.0
        for index in range(opportunities):
            obs_id = f"obs{index}"
            run.observation(ObservationReceipt(obs_id=obs_id, step=index * 10, t_acquired=t, t_delivered=t + 0.01,
                                               evidence_version=index, channels=["front", "display"]))
            run.emit(Opportunity, t=t, opp=f"o{index}", decision=f"d{index}", trigger="initial" if index == 0 else "state_change",
                     legal=legal, obs_id=obs_id, evidence_version=index, window_s=5.0)
            chosen = legal[0] if correct else Operation("add", "w50", "pan")
            run.emit(Choice, t=t + 0.5, opp=f"o{index}", op=chosen, track="native", recognizer="grasp-lift", first=True)
            if correct:
                run.emit(Confirm, t=t + 2.0, obligation=f"d{index}", op=chosen, predicate="supported",
                         measured={"load_g": 20.0})
            t += 3.0
        if complete:
            run.emit(Dwell, t=t, state="start")
            run.emit(Dwell, t=t + 3.0, state="complete", duration_s=3.0)
        run.emit(EpisodeEnd, t=t + 3.0, episode=0, reason="success" if complete else "timeout",
                 physical_complete=complete, valid_complete=complete)
    return run.dir
