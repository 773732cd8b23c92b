"""What the centrifuge and rack episode runners share: the per-process bench cache, the
recorded episode itself, its manifest and the contract's column list.

A family module (:mod:`labrecord.sim.centrifuge`, :mod:`labrecord.sim.rack`) builds its
bench, policy, scorer and manifest, then calls :func:`record_episode`.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from labrecord.models import RunManifest
from labrecord.rundir import RunWriter


def cached_bench(benches: dict[Hashable, Any], key: Hashable, build: Callable[[], Any]) -> Any:
    """One calibrated bench per process and configuration, reused across episodes (the
    model load and calibration are the same for every episode of a configuration)."""
    env = benches.get(key)
    if env is None:
        env = benches[key] = build()
    return env


def record_episode(spec: Any, env: Any, policy: Any, scorer: Any, manifest: RunManifest, *, family: str,
                   instruction: str, max_time_s: float, benches: dict[Hashable, Any]) -> Path:
    """Open the run directory, run one episode with a step owner, write scores,
    measurements and ``demo.hdf5``; on any error the run is closed ``aborted`` and the
    family's cached benches are dropped (their state is unknown)."""
    from labrecord.recorders.loop import StepOwner
    from labrecord.sim.weighing import _write_demo

    writer = RunWriter.create(spec.out_dir, manifest)
    try:
        owner = StepOwner(env, policy, scorer, writer, instruction=instruction, max_time_s=max_time_s,
                          video=spec.cameras)
        log = owner.run_episode(0)
        scores = owner.finish()
        _write_demo(writer, owner, log, spec, scores, family=family)
    except BaseException:
        writer.close("aborted")
        benches.clear()
        env.close()
        raise
    writer.close("complete")
    return writer.dir


def contract_columns(family: str) -> tuple[str, ...]:
    """The measurement columns a family's contract reads."""
    from labrecord.measurements import COMMON_COLUMNS, FAMILY_COLUMNS

    return (*COMMON_COLUMNS, *FAMILY_COLUMNS[family])


def family_manifest(spec: Any, instance: Any, caps: Any, contract: Any, *, family: str, run_id: str,
                    population: str, instance_id: str, layout_text: str, scene: str, memory: str | None) -> RunManifest:
    """The run manifest of a scripted-family episode (centrifuge, rack): task, system,
    population, seeds (policy seed ``seed · 100003 + index``), scene asset and a hash of
    ``layout_text`` (the instance's layout, written out), physics rates."""
    import hashlib

    import mujoco

    from labrecord.models import (
        Assets, Budget, Evaluation, ObservationSpec, Physics, Population, Seeds, System, Task,
    )
    from labrecord.rundir import utc_now
    from labrecord.sim.scene import PHYSICS_HZ

    return RunManifest(
        run_id=run_id, created_at=utc_now(),
        task=Task(family=family, task_id=f"{family}-{spec.condition}", version=contract.version, condition=spec.condition,
                  variant=instance.variant(), contract_hash=contract.contract_hash()),
        system=System(name=caps.name, kind=caps.kind, revision=caps.revision, action_spec=caps.action_spec,
                      observation=ObservationSpec(channels=list(caps.channels)), memory=memory),
        evaluation=Evaluation(version="1", population=Population(name=population, instance_id=instance_id),
                              budget=Budget(clock="sim", max_steps=None)),
        seeds=Seeds(task_state=instance.task_seed, layout=instance.layout_seed, appearance=None,
                    policy=spec.seed * 100003 + spec.index),
        assets=Assets(scene=scene, layout_hash="sha256:" + hashlib.sha256(layout_text.encode()).hexdigest()[:16]),
        physics=Physics(engine=f"mujoco-{mujoco.__version__}", physics_hz=PHYSICS_HZ, control_hz=caps.action_spec.control_hz),
    )
