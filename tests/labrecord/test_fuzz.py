"""Corrupted copies of real simulator runs through every command.

Two weighing runs are simulated once (MuJoCo, no cameras).  Each example copies them as
the valid runs ``a-good-*`` and adds copies damaged by drawn mutations (cut files, flipped
bytes, blank and repeated lines, deep nesting, huge lines, NaN measurements, links to
/dev/zero, /etc/passwd or nowhere, FIFOs, folders in place of files, colliding run ids …).
Then validate, ingest, score, audit and the HDF5 and Parquet exports run over the folder,
and the test asserts:

* no command raises (no traceback); every failure is an ``Error:`` line or a finding;
* every valid run is still loaded, scored and exported;
* every run is either loaded or named with its findings, by ingest and by the exports
  alike (one rule), and validation names exactly the runs ingest skips.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labrecord.cli import cli
from labrecord.rundir import find_run_dirs
from labrecord.store import connect, ingest_runs
from labrecord.validation import validate_run
from tests.support import require_module

os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("mujoco", 'pip install "labrecord[sim]"')
    from labrecord.sim import run_weighing

    root = tmp_path_factory.mktemp("sim")
    run_weighing(root, "basic", "reference", episodes=2, seed=0, cameras=False)
    return root


def clone(src: Path, root: Path, run_id: str) -> Path:
    """Copy a run under a new id (run.json and scores.json follow)."""
    dst = root / run_id
    shutil.copytree(src, dst, symlinks=True)
    for name in ("run.json", "scores.json"):
        raw = json.loads((dst / name).read_text())
        raw["run_id"] = run_id
        (dst / name).write_text(json.dumps(raw))
    return dst


# -- mutations: (run folder, random source) -> None ----------------------------------------
FILES = ("run.json", "events.jsonl", "observations.jsonl", "online_scores.jsonl", "scores.json",
         "measurements.parquet", "demo.hdf5")
LOGS = ("events.jsonl", "observations.jsonl", "online_scores.jsonl")


def cut(name: str) -> Callable[[Path, st.DataObject], None]:
    def mutate(run: Path, data: st.DataObject) -> None:
        raw = (run / name).read_bytes()
        (run / name).write_bytes(raw[:data.draw(st.integers(0, max(len(raw) - 1, 0)), label="cut at")])
    return mutate


def flip(name: str) -> Callable[[Path, st.DataObject], None]:
    def mutate(run: Path, data: st.DataObject) -> None:
        raw = bytearray((run / name).read_bytes())
        at = data.draw(st.integers(0, len(raw) - 1), label="flip at")
        raw[at] = data.draw(st.sampled_from([0x00, 0x22, 0x7B, 0x5D, 0xFF, 0x0A]), label="byte")
        (run / name).write_bytes(bytes(raw))
    return mutate


def edit_line(name: str, how: str) -> Callable[[Path, st.DataObject], None]:
    def mutate(run: Path, data: st.DataObject) -> None:
        lines = (run / name).read_bytes().splitlines(keepends=True)
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        if how == "blank":
            lines.insert(at, b"\n")
        elif how == "repeat":
            lines.insert(at, lines[at])
        elif how == "deep":
            lines.insert(at, b'{"seq": 1, "t": 0, "type": "validity", "kind": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n")
        elif how == "huge":
            lines.insert(at, b'{"pad": "' + b"x" * (2 << 20) + b'"}\n')
        (run / name).write_bytes(b"".join(lines))
    return mutate


def replace(name: str, how: str) -> Callable[[Path, st.DataObject], None]:
    def mutate(run: Path, data: st.DataObject) -> None:
        path = run / name
        path.unlink()
        if how == "dev-zero":
            os.symlink("/dev/zero", path)
        elif how == "passwd":
            os.symlink("/etc/passwd", path)
        elif how == "dangling":
            os.symlink(run / "nowhere", path)
        elif how == "fifo":
            os.mkfifo(path)
        elif how == "folder":
            path.mkdir()
        elif how == "empty":
            path.write_bytes(b"")
    return mutate


def nan_measurement(run: Path, data: st.DataObject) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(run / "measurements.parquet")
    column = data.draw(st.sampled_from(["t", "pan_force_n", "pan_speed"]), label="column")
    values = table.column(column).to_pylist()
    values[data.draw(st.integers(0, len(values) - 1), label="row")] = data.draw(st.sampled_from([float("nan"), float("inf")]))
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, pa.array(values, pa.float64())), run / "measurements.parquet")


def negative_window(run: Path, data: st.DataObject) -> None:
    lines = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    next(e for e in lines if e["type"] == "opportunity")["window_s"] = data.draw(st.sampled_from([-1.0, 0.0]))
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))


def collide(run: Path, data: st.DataObject) -> None:
    raw = json.loads((run / "run.json").read_text())
    raw["run_id"] = "a-good-0"
    (run / "run.json").write_text(json.dumps(raw))


def deep_manifest(run: Path, data: st.DataObject) -> None:
    (run / "run.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)


def repeated_key(name: str) -> Callable[[Path, st.DataObject], None]:
    """A key written twice in one object, the first copy forged (readers keep different copies)."""
    def mutate(run: Path, data: st.DataObject) -> None:
        path = run / name
        if name == "run.json":
            record = json.loads(path.read_text())
            key = data.draw(st.sampled_from(sorted(record)), label="key")
            path.write_text('{"%s": %s, ' % (key, json.dumps(data.draw(FORGED, label="forged"))) + json.dumps(record)[1:])
            return
        lines = path.read_bytes().splitlines(keepends=True)
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        record = json.loads(lines[at])
        key = data.draw(st.sampled_from(sorted(record)), label="key")
        lines[at] = ('{"%s": %s, ' % (key, json.dumps(data.draw(FORGED, label="forged"))) + json.dumps(record)[1:] + "\n").encode()
        path.write_bytes(b"".join(lines))
    return mutate


FORGED = st.sampled_from([True, False, 0, 1, "success", None])
HUGE = st.sampled_from([2**63, 2**64 - 1, -(2**63) - 1, 10**30])


def huge_integer(run: Path, data: st.DataObject) -> None:
    """An integer the store's 64-bit columns cannot hold, in run.json or in a log record."""
    where = data.draw(st.sampled_from(["seeds", "events", "observations"]), label="where")
    if where == "seeds":
        record = json.loads((run / "run.json").read_text())
        record["seeds"][data.draw(st.sampled_from(["layout", "policy", "task_state"]), label="seed")] = data.draw(HUGE)
        (run / "run.json").write_text(json.dumps(record))
        return
    path = run / f"{where}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    record = lines[data.draw(st.integers(0, len(lines) - 1), label="line")]
    fields = sorted(k for k, v in record.items() if isinstance(v, int) and not isinstance(v, bool))
    record[data.draw(st.sampled_from(fields), label="field")] = data.draw(HUGE)
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


def _add_column(run: Path, name: str, values: list) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(run / "measurements.parquet")
    pq.write_table(table.append_column(name, pa.array(values * table.num_rows)), run / "measurements.parquet")


def reserved_column(run: Path, data: st.DataObject) -> None:
    _add_column(run, data.draw(st.sampled_from(["filename", "run_id", "Run_Id", "T"]), label="column"), ["x"])


def column_clash(run: Path, data: st.DataObject) -> None:
    """An extra column whose type may disagree with another run's: valid alone, refused at load."""
    _add_column(run, "extra", [data.draw(st.sampled_from([1, "one", 1.5, True]), label="extra value")])


def row_bomb(run: Path, data: st.DataObject) -> None:
    """A small Parquet file declaring more rows than the limit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from labrecord.safeio import MAX_MEASUREMENT_ROWS

    rows = MAX_MEASUREMENT_ROWS + data.draw(st.integers(1, 1000), label="extra rows")
    pq.write_table(pa.table({"t": pa.repeat(pa.scalar(0.0), rows)}), run / "measurements.parquet", compression="zstd")


MUTATIONS: dict[str, Callable[[Path, st.DataObject], None]] = {
    **{f"cut {n}": cut(n) for n in FILES},
    **{f"flip {n}": flip(n) for n in ("run.json", "events.jsonl", "observations.jsonl", "scores.json")},
    **{f"{how} line in {n}": edit_line(n, how) for n in LOGS for how in ("blank", "repeat", "deep", "huge")},
    **{f"{n} -> {how}": replace(n, how) for n in FILES
       for how in ("dev-zero", "passwd", "dangling", "fifo", "folder", "empty")},
    "nan measurement": nan_measurement, "negative window": negative_window, "colliding run_id": collide,
    "deep run.json": deep_manifest,
    **{f"repeated key in {n}": repeated_key(n) for n in ("run.json", *LOGS)},
    "huge integer": huge_integer, "reserved column": reserved_column, "column clash": column_clash,
    "row bomb": row_bomb,
}


def no_traceback(result: Result, what: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{what} raised {result.exception!r}:\n{result.output}"
    assert "Traceback" not in result.output, result.output


#: damage whose records decode, so that only the checks against the store catch it
STORE_DAMAGE = sorted(name for name in MUTATIONS if name.startswith("repeated key")) + [
    "huge integer", "reserved column", "column clash", "row bomb"]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=3, max_size=8), data=st.data())
def test_every_command_survives_corrupted_runs(sim_runs: Path, tmp_path_factory: pytest.TempPathFactory,
                                               mutations: list[str], data: st.DataObject) -> None:
    survives(sim_runs, tmp_path_factory, mutations, data)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.sampled_from(STORE_DAMAGE), min_size=3, max_size=6), data=st.data())
def test_every_command_survives_damage_only_the_store_would_see(sim_runs: Path, tmp_path_factory: pytest.TempPathFactory,
                                                                mutations: list[str], data: st.DataObject) -> None:
    """Repeated keys, integers past 64 bits, reserved and clashing columns, row bombs."""
    survives(sim_runs, tmp_path_factory, mutations, data)


def survives(sim_runs: Path, tmp_path_factory: pytest.TempPathFactory, mutations: list[str], data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    sources = find_run_dirs(sim_runs)
    shutil.copytree(sim_runs / "populations", root / "populations")
    good = {clone(src, root, f"a-good-{i}").name for i, src in enumerate(sources)}
    mutated = {}
    for index, name in enumerate(mutations):
        run = clone(sources[index % len(sources)], root, f"m-{index:02d}")
        MUTATIONS[name](run, data)
        mutated[run.name] = name

    invalid = {run.name for run in find_run_dirs(root) if not validate_run(run)[0].ok}
    assert not invalid & good, invalid & good
    # a copy claiming a good run's id makes that id ambiguous: both folders are refused
    ambiguous = {"a-good-0"} if "colliding run_id" in mutations else set()
    good -= ambiguous

    summary = ingest_runs(root, connect(None))
    loaded = set(summary.added)
    skipped = {Path(where).name for where in summary.skipped if Path(where).parent == root}
    assert good <= loaded, summary.skipped
    assert not ambiguous & loaded
    assert all("ambiguous" in summary.skipped[str(root / name)][0] for name in ambiguous)
    # valid alone, refused at load: an extra column whose type another run's contradicts
    clashed = {name for name in skipped - invalid if "corpus stores it as" in summary.skipped[str(root / name)][0]}
    assert all(mutated.get(name) == "column clash" for name in clashed), (clashed, mutated)
    assert skipped == invalid | ambiguous | clashed, (skipped, invalid, mutated)
    assert all(summary.skipped[str(root / name)] for name in skipped)

    runner = CliRunner()
    for args in (["validate", str(root)], ["ingest", str(root), "--db", str(root / "c.duckdb")],
                 ["score", str(root), "--resamples", "0", "--out", str(root / "s.json")], ["audit", str(root)]):
        no_traceback(runner.invoke(cli, args), args[0])

    result = runner.invoke(cli, ["export", "hdf5", str(root), "--out", str(root / "d.hdf5"), "--accept", "all", "--json"])
    no_traceback(result, "export hdf5")
    from labrecord.demos import DemoReader

    with DemoReader(root / "d.hdf5") as reader:
        manifest = reader.manifest()
    exported = {a.run_id for a in manifest if a.extra["accepted"]}
    named = {a.run_id for a in manifest if (a.extra["note"] or "").startswith("invalid run")}
    assert good <= exported
    assert not exported & ambiguous
    # the exports skip by the rule ingest uses (a colliding id names the run it collides with)
    assert {r for r in named if r in mutated or r in good} | {n for n in invalid if mutated.get(n) == "colliding run_id"} \
        >= {n for n in invalid if mutated.get(n) != "colliding run_id"}
    assert not exported & invalid
    no_traceback(runner.invoke(cli, ["export", "parquet", str(root), "--out", str(root / "flat"), "--accept", "all"]),
                 "export parquet")
