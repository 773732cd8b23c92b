"""``run_weighing`` through labrecord.parallel: a process pool and a local Ray cluster write
the same runs as one worker."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pyarrow.parquet as pq
import pytest

from labrecord.rundir import read_events
from labrecord.sim import run_weighing
from tests.support import require_module


def recorded(run: Path) -> tuple[list[dict], dict]:
    """Events without wall-clock times, and the measurements table, of one run."""
    events = [{k: v for k, v in msgspec.to_builtins(e).items() if k not in ("wall", "policy_s_per_query")}
              for e in read_events(run)]
    return events, pq.read_table(run / "measurements.parquet").to_pydict()


@pytest.mark.parametrize("executor, workers", [("local", 2), ("ray", 2)])
def test_parallel_executors_write_the_runs_of_one_worker(tmp_path: Path, executor: str, workers: int) -> None:
    if executor == "ray":
        ray = require_module("ray", 'pip install "labrecord[ray]"')
    one = run_weighing(tmp_path / "one", "basic", "reference", episodes=2, seed=3, cameras=False, max_time_s=8.0)
    many = run_weighing(tmp_path / "many", "basic", "reference", episodes=2, seed=3, cameras=False, max_time_s=8.0,
                        workers=workers, executor=executor)
    assert [p.name for p in many] == [p.name for p in one]
    for a, b in zip(one, many):
        assert recorded(a) == recorded(b)
    if executor == "ray":
        assert not ray.is_initialized()
