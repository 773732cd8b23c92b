"""Tests for labrecord/parallel.py: one map, three ways to run it, the same results."""
from __future__ import annotations

import pytest

from labrecord import parallel
from labrecord.errors import LabrecordError
from tests.support import require_module


def square_of_sum(pair: tuple[int, int]) -> int:
    """(a + b)²: (1, 2) -> 9, (3, 4) -> 49."""
    a, b = pair
    return (a + b) ** 2


def refuse_negative(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x


ITEMS = [(1, 2), (3, 4), (0, 0), (-5, 2), (10, -1), (2, 2), (7, 0)]
EXPECTED = [9, 49, 0, 9, 81, 16, 49]


def test_one_worker_runs_in_order_in_this_process() -> None:
    assert list(parallel.map(square_of_sum, ITEMS)) == EXPECTED


def test_a_process_pool_keeps_the_input_order() -> None:
    assert list(parallel.map(square_of_sum, ITEMS, workers=2, chunksize=2)) == EXPECTED
    assert list(parallel.map(square_of_sum, [], workers=2)) == []


def follow_setting(_: int) -> str | None:
    import os

    return os.environ.get("LABRECORD_FOLLOW_SYMLINKS")


def test_workers_see_the_callers_labrecord_settings_of_the_moment() -> None:
    """A forkserver keeps the environment it started with; the pool hands each worker the
    caller's current ``LABRECORD_*`` settings, set or unset, whichever pool came first."""
    from labrecord.safeio import allow_symlinks

    assert set(parallel.map(follow_setting, [1, 2, 3], workers=2)) == {None}
    with allow_symlinks():
        assert set(parallel.map(follow_setting, [1, 2, 3], workers=2)) == {"1"}
    assert set(parallel.map(follow_setting, [1, 2, 3], workers=2)) == {None}


def test_an_error_in_a_worker_is_raised_as_its_own_type() -> None:
    with pytest.raises(ValueError, match="negative: -1"):
        list(parallel.map(refuse_negative, [1, -1, 2], workers=2))


def test_bad_arguments_are_one_error() -> None:
    with pytest.raises(LabrecordError, match="workers must be at least 1, got 0"):
        parallel.map(square_of_sum, ITEMS, workers=0)
    with pytest.raises(LabrecordError, match="unknown executor 'dask'"):
        parallel.map(square_of_sum, ITEMS, executor="dask")


def test_a_local_ray_cluster_gives_the_same_results_as_one_worker() -> None:
    ray = require_module("ray", 'pip install "labrecord[ray]"')
    assert list(parallel.map(square_of_sum, ITEMS, workers=2, executor="ray")) == EXPECTED
    assert not ray.is_initialized()          # the instance the map started is shut down again
    with pytest.raises(ValueError, match="negative: -3"):
        list(parallel.map(refuse_negative, [4, -3], workers=1, executor="ray"))


def test_usable_cpus_counts_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mask of CPUs {0, 2, 5} on an 8-CPU machine: 3 usable, not 8."""
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 8)
    assert parallel.usable_cpus() == 3


def test_usable_cpus_without_affinity_masks_falls_back_to_the_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """No sched_getaffinity (macOS): cpu_count 4 -> 4; cpu_count unknown (None) -> 1."""
    monkeypatch.delattr(parallel.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    assert parallel.usable_cpus() == 4
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: None)
    assert parallel.usable_cpus() == 1


def test_pool_workers_start_a_pool_only_for_many_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """199 items: one process whatever ``jobs`` says; 200: ``jobs``, by default every usable CPU."""
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 6)
    assert parallel.pool_workers(parallel.POOL_THRESHOLD - 1, 4) == 1
    assert parallel.pool_workers(parallel.POOL_THRESHOLD, 4) == 4
    assert parallel.pool_workers(parallel.POOL_THRESHOLD, None) == 6
