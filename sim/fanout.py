"""How every simulator command and study starts its episodes: check the named choices of
the request, refuse an existing run folder before anything is registered, then fan the
specs out through the one parallel map with a progress callback."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from labrecord import parallel
from labrecord.errors import LabrecordError


def check_choice(option: str, value: str, allowed: Iterable[str]) -> None:
    """Refuse ``value`` of ``option`` unless it is one of ``allowed`` (one line naming them)."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise LabrecordError(f"{option} {value!r}: expected one of {', '.join(allowed)}")


def check_request(condition: str, conditions: Iterable[str], episodes: int) -> None:
    """Refuse a ``condition`` not among a family's ``conditions``, or fewer than one episode."""
    check_choice("condition", condition, conditions)
    if episodes < 1:
        raise LabrecordError(f"episodes {episodes}: expected at least 1")


def headless_rendering() -> None:
    """Offscreen rendering without a display (EGL; osmesa also works) on Linux unless
    ``MUJOCO_GL`` names another backend; called by an episode before MuJoCo is imported."""
    if sys.platform.startswith("linux"):
        os.environ.setdefault("MUJOCO_GL", "egl")


def refuse_existing(out_dir: str | os.PathLike[str], run_ids: Iterable[str]) -> None:
    """Refuse before anything is registered or recorded when one of the run folders
    ``run_ids`` already exists under ``out_dir`` (a run is never overwritten)."""
    for run_id in run_ids:
        target = Path(out_dir) / run_id
        if target.exists():
            raise LabrecordError(f"{target}: run directory already exists; choose another --out or --seed")


def run_specs(specs: list[Any], run: Callable[[Any], Any], workers: int,
              progress: Callable[[int], None] | None, *, executor: str = "local",
              address: str | None = None) -> list[Any]:
    """Run episode specs (or study tasks) through the one parallel map (in this process
    when ``workers`` is 1); the results come back in spec order, ``progress`` advanced by
    one per result."""
    results = []
    for result in parallel.map(run, specs, workers=workers, executor=executor, address=address):
        results.append(result)
        if progress is not None:
            progress(1)
    return results
