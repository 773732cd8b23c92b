"""Exports skip invalid runs by the rule ingest uses, and list them in their manifests."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from labrecord.demos import DemoReader
from labrecord.exporters.examples import write_demo_runs
from labrecord.exporters.hdf5 import export_hdf5
from labrecord.exporters.parquet import export_parquet
from labrecord.store import connect, ingest_runs


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs with demos: one valid, one with a cut events log, one with a repeated seq."""
    root = tmp_path_factory.mktemp("mixed")
    good, cut, repeated = write_demo_runs(root, runs=3, episodes=2, steps=6, successes=(True,), cameras=())
    events = cut / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-7])
    path = repeated / "events.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[2]["seq"] = lines[1]["seq"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_hdf5_and_parquet_export_the_runs_ingest_keeps(mixed_runs: Path, tmp_path: Path) -> None:
    kept = set(ingest_runs(mixed_runs, connect(None)).added)
    assert kept == {"demo-run-0000"}

    export_hdf5(mixed_runs, tmp_path / "d.hdf5", accept="all", valid_ratio=0.0)
    with DemoReader(tmp_path / "d.hdf5") as reader:
        manifest = reader.manifest()
    exported = {a.run_id for a in manifest if a.extra["accepted"]}
    skipped = {a.run_id: a.extra["note"] for a in manifest if not a.extra["accepted"]}
    assert exported == kept
    assert set(skipped) == {"demo-run-0001", "demo-run-0002"}
    assert "truncated last line" in skipped["demo-run-0001"] and "does not increase" in skipped["demo-run-0002"]

    export_parquet(mixed_runs, tmp_path / "flat", accept="all")
    rows = duckdb.sql(f"SELECT run_id, accepted, note FROM '{tmp_path}/flat/attempts.parquet'").fetchall()
    assert {r for r, accepted, _ in rows if accepted} == kept
    assert {r: note for r, accepted, note in rows if not accepted} == skipped
