"""What the centrifuge and rack episode runners share: the request and its fan-out, the
per-process bench cache, the recorded episode itself, its manifest and the contract's
column list.

A family module (:mod:`labrecord.sim.centrifuge`, :mod:`labrecord.sim.rack`) draws its
instances and population records and hands them to :func:`run_family`; per episode it
makes its policy, takes its bench from :func:`family_bench`, resets it to the instance and
calls :func:`record_episode` with its scorer type.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from labrecord.models import RunManifest
from labrecord.rundir import RunWriter
from labrecord.sim.fanout import refuse_existing, run_specs


def run_id_of(family: str, spec: Any) -> str:
    return f"{family}-{spec.condition}-{spec.policy}-s{spec.seed}-e{spec.index:03d}"


def population_name(family: str, condition: str, seed: int) -> str:
    return f"{family}-{condition}-s{seed}"


def policy_seed(spec: Any) -> int:
    """The seed of an episode's policy: ``seed · 100003 + index``."""
    return spec.seed * 100003 + spec.index


def run_family(out_dir: str | os.PathLike[str], family: str, condition: str, policy: str, episodes: int, seed: int,
               workers: int, *, population: Callable[[str, int, int], tuple[list[Any], list[Any]]],
               run: Callable[[Any], Path], cameras: bool, size: int, max_time_s: float | None,
               progress: Callable[[int], None] | None, policy_options: dict[str, Any]) -> list[Path]:
    """Run ``episodes`` episodes of a scripted family; returns the run directories in order.

    ``population(condition, episodes, seed)`` gives the drawn instances and the records
    registered as population ``<family>-<condition>-s<seed>`` before the first episode
    (after every run folder is known to be new); ``run`` records one episode spec.
    """
    from labrecord.sim.weighing import DEFAULT_DEADLINE_S, EpisodeSpec, register_population

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    drawn, records = population(condition, episodes, seed)
    specs = [EpisodeSpec(str(out_dir), condition, policy, i, seed, inst, cameras, size, max_time_s,
                         tuple(sorted(policy_options.items())), deadline_s=DEFAULT_DEADLINE_S[family])
             for i, inst in enumerate(drawn)]
    refuse_existing(out_dir, (run_id_of(family, spec) for spec in specs))
    register_population(out_dir, population_name(family, condition, seed), records)
    return run_specs(specs, run, workers, progress)


def family_bench(benches: dict[Hashable, Any], spec: Any, env_type: Callable[..., Any], model: Hashable,
                 action_spec: Any, cameras: tuple[str, ...]) -> Any:
    """The bench of ``spec``'s episode, ``env_type(model, action_spec, cameras=…, size=…)``
    rendering ``cameras`` (none without videos): one calibrated bench per process and
    configuration, reused across episodes (the model load and calibration are the same for
    every episode of a configuration)."""
    from labrecord.fileio import dumps

    shown = cameras if spec.cameras else ()
    key = (model, dumps(action_spec).decode(), shown, spec.size)
    env = benches.get(key)
    if env is None:
        env = benches[key] = env_type(model, action_spec, cameras=shown, size=spec.size)
    return env


def record_episode(spec: Any, env: Any, policy: Any, scorer_type: Callable[..., Any], *, family: str,
                   instruction: str, max_time_s: float, benches: dict[Hashable, Any], layout_text: str, scene: str,
                   memory: str | None) -> Path:
    """Open the run directory, run one episode with a step owner and a ``scorer_type``
    scorer of the family's contract, write scores, measurements and ``demo.hdf5``; on any
    error the run is closed ``aborted`` and the family's cached benches are dropped (their
    state is unknown).  ``layout_text``, ``scene`` and ``memory`` go into the manifest
    (:func:`family_manifest`)."""
    from labrecord.recorders.loop import StepOwner
    from labrecord.scorers.contracts import get_contract
    from labrecord.sim.weighing import _write_demo, harness_of

    contract = get_contract(family)
    manifest = family_manifest(spec, policy.capabilities, contract, family=family, layout_text=layout_text, scene=scene,
                               memory=memory)
    manifest.harness = harness_of(spec, policy, env)
    scorer = scorer_type(contract, spec.instance, columns=contract_columns(family), window_s=spec.deadline_s)
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


def family_manifest(spec: Any, caps: Any, contract: Any, *, family: str, layout_text: str, scene: str,
                    memory: str | None) -> RunManifest:
    """The run manifest of a scripted-family episode (centrifuge, rack): task, system,
    population, seeds (policy seed :func:`policy_seed`), the scene with its asset revision
    and the layout revision of ``layout_text`` (the family's layout description), physics rates."""
    import mujoco

    from labrecord.models import (
        Assets, Budget, Evaluation, ObservationSpec, Physics, Population, Seeds, System, Task,
    )
    from labrecord.rundir import utc_now
    from labrecord.sim.assets import asset_revision, layout_revision
    from labrecord.sim.scene import PHYSICS_HZ
    from labrecord.sim.weighing import instance_id_of

    instance = spec.instance
    return RunManifest(
        run_id=run_id_of(family, spec), created_at=utc_now(),
        task=Task(family=family, task_id=f"{family}-{spec.condition}", version=contract.version, condition=spec.condition,
                  variant=instance.variant(), contract_hash=contract.contract_hash()),
        system=System(name=caps.name, kind=caps.kind, revision=caps.revision, action_spec=caps.action_spec,
                      observation=ObservationSpec(channels=list(caps.channels)), memory=memory),
        evaluation=Evaluation(version="1", population=Population(name=population_name(family, spec.condition, spec.seed),
                                                                 instance_id=instance_id_of(spec.index)),
                              budget=Budget(clock="sim", max_steps=None, response_deadline_s=spec.deadline_s)),
        seeds=Seeds(task_state=instance.task_seed, layout=instance.layout_seed, appearance=None, policy=policy_seed(spec)),
        assets=Assets(scene=scene, revision=asset_revision(scene), layout_hash=layout_revision(layout_text)),
        physics=Physics(engine=f"mujoco-{mujoco.__version__}", physics_hz=PHYSICS_HZ, control_hz=caps.action_spec.control_hz),
    )
