"""Reading recorded simulator runs in the end-to-end tests (weighing, centrifuge, rack)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from labrecord.models import Choice, EpisodeEnd, Failure, Opportunity, Recovery
from labrecord.rundir import read_events
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.validation import validate_run


def check_run(run: Path) -> None:
    """The run validates and its replay audit checks some events and agrees with all of them."""
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    audit = audit_run(run)
    assert audit.ok, [str(f) for f in audit.findings]
    assert audit.events_checked > 0


def first_native_choices(run: Path) -> list[tuple[Choice, Opportunity]]:
    """Every first native-track choice of a run with the opportunity it was made at."""
    events = read_events(run)
    opened = {e.opp: e for e in events if isinstance(e, Opportunity)}
    return [(e, opened[e.opp]) for e in events if isinstance(e, Choice) and e.first and e.track == "native"]


def episode_end(run: Path) -> EpisodeEnd:
    return next(e for e in read_events(run) if isinstance(e, EpisodeEnd))


def check_failed_and_recovered(run: Path, reason: str) -> None:
    """A checked run with exactly one failure, ``reason``, resolved by one recovery, that
    still ends physically complete."""
    check_run(run)
    events = read_events(run)
    failures = [e for e in events if isinstance(e, Failure)]
    assert [f.reason for f in failures] == [reason]
    assert [(r.of_seq, r.resolved) for r in events if isinstance(r, Recovery)] == [(failures[0].seq, True)]
    assert episode_end(run).physical_complete


def group_metrics(folder: Path) -> dict[str, Any]:
    """The metrics of a folder whose runs score as one group."""
    (group,) = score_corpus(folder, resamples=0)["groups"]
    return group["metrics"]


def ratio(metric: dict[str, Any]) -> tuple[int, int]:
    """A metric's ``(num, den)``."""
    return metric["num"], metric["den"]


def reference_runs_fixture(family: str, cameras: bool = True) -> Any:
    """A module fixture: two basic reference episodes of ``family`` from seed 0, with
    32 px cameras (or none), recorded once for the module's tests."""
    @pytest.fixture(scope="module")
    def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
        from tests.support import require_module

        require_module("mujoco", "pip install 'labrecord[sim]'")
        from labrecord.sim import run_episodes

        options: dict[str, Any] = {"size": 32} if cameras else {"cameras": False}
        return run_episodes(family, tmp_path_factory.mktemp("runs"), "basic", "reference", episodes=2, seed=0,
                            **options)

    return reference_runs


def reference_metrics(family: str, folder: Path, condition: str) -> dict[str, Any]:
    """Eight reference episodes of ``family``'s ``condition`` from seed 0 under ``folder``
    (no cameras, two workers), every run checked; the metrics of their group."""
    from labrecord.sim import run_episodes

    for run in run_episodes(family, folder, condition, "reference", episodes=8, seed=0, cameras=False, workers=2):
        check_run(run)
    return group_metrics(folder)


def check_bench_identity(runs: list[Path], deadline_s: float) -> None:
    """Every run names its bench's asset revision and layout revision — the same for every
    instance of one bench, so randomized instances pool — and the family's default response
    deadline."""
    from labrecord.rundir import read_manifest

    manifests = [read_manifest(run).manifest for run in runs]
    assert all(m.assets.revision and m.assets.revision.startswith("sha256:") for m in manifests)
    assert len({(m.assets.revision, m.assets.layout_hash) for m in manifests}) == 1
    assert {m.evaluation.budget.response_deadline_s for m in manifests} == {deadline_s}


#: fields that hold wall-clock readings (when a file was written, how long a query or an
#: episode took on this machine): the only ones two recordings of one seed may differ in
WALL_CLOCK_FIELDS = frozenset({"created_at", "wall", "inference_s", "episode_wall_s", "policy_s_per_query"})


def _without_wall_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall_clock(v) for k, v in value.items() if k not in WALL_CLOCK_FIELDS}
    if isinstance(value, list):
        return [_without_wall_clock(v) for v in value]
    return value


def _json_digest(data: bytes, lines: bool) -> str:
    import hashlib
    import json

    values = [json.loads(line) for line in data.splitlines() if line.strip()] if lines else [json.loads(data)]
    text = json.dumps([_without_wall_clock(v) for v in values], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _hdf5_digest(path: Path) -> str:
    import hashlib
    import json

    import h5py
    import numpy as np

    h = hashlib.sha256()

    def attrs(obj: Any) -> None:
        for key in sorted(obj.attrs):
            value = obj.attrs[key]
            if isinstance(value, str) and value[:1] in "{[":
                value = json.dumps(_without_wall_clock(json.loads(value)), sort_keys=True)
            h.update(f"{key}={value!r};".encode())

    def visit(name: str, obj: Any) -> None:
        h.update(name.encode())
        attrs(obj)
        if isinstance(obj, h5py.Dataset):
            data = np.asarray(obj[()])
            h.update(repr(data.tolist()).encode() if data.dtype == object else np.ascontiguousarray(data).tobytes())

    with h5py.File(path, "r") as f:
        attrs(f)
        f.visititems(visit)
    return h.hexdigest()


def _parquet_digest(path: Path) -> str:
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path).replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _video_digest(path: Path) -> str:
    """The decoded frames' pixels (the container's muxer stamps are not the recording)."""
    import hashlib

    import av

    h = hashlib.sha256()
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            h.update(frame.to_ndarray(format="rgb24").tobytes())
    return h.hexdigest()


def run_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (a run directory, or a folder of runs and
    populations), by relative path, wall-clock fields left out (:data:`WALL_CLOCK_FIELDS`):
    two recordings of the same seeds give equal digests exactly when their files are
    bit-identical apart from those fields."""
    import hashlib

    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.name.endswith(".lock"):
            continue
        name = path.relative_to(folder).as_posix()
        if path.suffix in (".json", ".jsonl"):
            out[name] = _json_digest(path.read_bytes(), path.suffix == ".jsonl")
        elif path.suffix == ".hdf5":
            out[name] = _hdf5_digest(path)
        elif path.suffix == ".parquet":
            out[name] = _parquet_digest(path)
        elif path.suffix == ".mp4":
            out[name] = _video_digest(path)
        else:
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def digest_environment() -> dict[str, str]:
    """What the recorded digests depend on besides the code: the physics and array libraries,
    the solver, and the CPU (floating-point results differ across instruction sets)."""
    import hashlib
    import platform
    from importlib.metadata import version
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:
        pass
    return {**{name: version(name) for name in ("mujoco", "numpy", "mink", "daqp")},
            "machine": platform.machine(), "cpu_flags": hashlib.sha256(flags.encode()).hexdigest()[:16]}
