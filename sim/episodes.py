"""What every simulated family's episode runner shares: the fan-out of episode specs, the
per-process bench cache, the recorded episode itself and the contract's column list.

A family module (:mod:`labrecord.sim.centrifuge`, :mod:`labrecord.sim.rack`) builds its
bench, policy, scorer and manifest, then calls :func:`record_episode`.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from labrecord import parallel
from labrecord.models import RunManifest
from labrecord.rundir import RunWriter


def run_specs(specs: list[Any], run: Callable[[Any], Path], workers: int,
              progress: Callable[[int], None] | None) -> list[Path]:
    """Run episode specs through the one parallel map (in this process when ``workers`` is
    1); the run directories come back in spec order."""
    advance = progress or (lambda n=1: None)
    paths = []
    for path in parallel.map(run, specs, workers=workers):
        paths.append(path)
        advance(1)
    return paths


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
