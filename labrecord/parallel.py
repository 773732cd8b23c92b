"""The one parallel map of labrecord: simulator episodes, figure extraction and run
validation all fan out through :func:`map`.

``map(fn, items, workers=N, executor="local" | "ray")`` yields ``fn(item)`` for every item,
**in the order of** ``items``, whatever the executor:

* ``local`` with ``workers=1`` — in this process, one item after the other (lazily);
* ``local`` with ``workers>1`` — a process pool on this machine.  Workers start from a
  fresh interpreter (``forkserver`` where the platform has it, else ``spawn``), never a
  fork of the caller: they must not inherit an open DuckDB connection, RDKit or renderer
  state, or threads;
* ``ray`` — one Ray task per item (``num_cpus=1`` each) on the cluster at ``address``
  (default ``RAY_ADDRESS``), else on a local Ray instance of ``workers`` CPUs that is shut
  down again when the map ends.  Ray is the engine for users who outgrow one machine
  (``pip install 'labrecord[ray]'``).

``fn`` and the items must be picklable (a module-level function and plain data).  An
exception raised by ``fn`` is raised again by the map, as its own type.  Every executor
gives the same results for the same inputs: parallelism changes the wall time only.
"""
from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from labrecord.errors import LabrecordError

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "ray")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks (macOS)
        return max(1, os.cpu_count() or 1)


#: below this many items a local process pool costs more than it saves (its start is ~1 s)
POOL_THRESHOLD = 200


def pool_workers(count: int, jobs: int | None) -> int:
    """Processes for a local map of ``count`` independent items: ``jobs`` (default: every
    usable CPU, as DuckDB's own readers use them), or 1 below :data:`POOL_THRESHOLD` items."""
    if count < POOL_THRESHOLD:
        return 1
    return jobs if jobs is not None else usable_cpus()


def map(fn: Callable[[T], R], items: Iterable[T], *, workers: int = 1, executor: str = "local",
        address: str | None = None, chunksize: int = 1) -> Iterator[R]:
    """``fn(item)`` for each item, in order, on ``workers`` processes of ``executor``.

    ``chunksize`` items travel to a local worker together (many small items: larger
    chunks); ``address`` names a Ray cluster.
    """
    if workers < 1:
        raise LabrecordError(f"workers must be at least 1, got {workers}")
    if executor == "ray":
        return _ray_map(fn, list(items), workers, address)
    if executor != "local":
        raise LabrecordError(f"unknown executor {executor!r} (one of: {', '.join(EXECUTORS)})")
    if workers == 1:
        return builtins.map(fn, items)
    return _pool_map(fn, list(items), workers, chunksize)


def _pool_map(fn: Callable[[T], R], items: list[T], workers: int, chunksize: int) -> Iterator[R]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if not items:
        return
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([fn.__module__])
    # a forkserver keeps the environment it started with: the caller's labrecord settings
    # of this moment (e.g. LABRECORD_FOLLOW_SYMLINKS) are handed to each worker explicitly
    settings = {name: value for name, value in os.environ.items() if name.startswith("LABRECORD_")}
    with ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=context,
                             initializer=_take_settings, initargs=(settings,)) as pool:
        yield from pool.map(fn, items, chunksize=chunksize)


def _take_settings(settings: dict[str, str]) -> None:
    """Pool worker start-up: the caller's ``LABRECORD_*`` environment, exactly (set or unset)."""
    for name in [n for n in os.environ if n.startswith("LABRECORD_") and n not in settings]:
        del os.environ[name]
    os.environ.update(settings)


def _ray_map(fn: Callable[[T], R], items: list[T], workers: int, address: str | None) -> Iterator[R]:
    try:
        import ray
    except ImportError:
        raise LabrecordError("--executor ray needs Ray: pip install 'labrecord[ray]'") from None
    started = False
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            options["address"] = address
        else:
            options["num_cpus"] = workers
        ray.init(**options)
        started = True
    try:
        # a module-level task that receives fn, so bound methods and callable objects work too
        remote: Any = ray.remote(num_cpus=1)(_apply)
        refs = [remote.remote(fn, item) for item in items]
        for ref in refs:
            try:
                yield ray.get(ref)
            except ray.exceptions.RayTaskError as error:
                raise error.as_instanceof_cause() from None
    finally:
        if started:
            ray.shutdown()


def _apply(fn: Callable[[T], R], item: T) -> R:
    return fn(item)
