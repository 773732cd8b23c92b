"""Outputs never overwrite or land inside inputs, with or without --overwrite: every
command with an output path and an input path refuses with one line and changes nothing."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.exporters.examples import write_demo_runs
from labrecord.store import connect, ingest_runs, write_snapshot


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("apart")
    write_demo_runs(root / "runs", runs=2, episodes=2, steps=4, cameras=())
    con = connect(root / "c.duckdb")
    ingest_runs(root / "runs", con)
    write_snapshot(con, root / "snap")
    con.close()
    return root


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def first_run(world: Path) -> str:
    return str(sorted((world / "runs").iterdir())[0])


CASES = [
    # the two reported: every run deleted; a manifest destroyed
    ["export", "parquet", "{w}/runs", "--out", "{w}/runs", "--overwrite", "--accept", "all"],
    ["score", "{w}/runs", "--out", "{run}/run.json", "--resamples", "0"],
    # the same for every command with an output and an input
    ["export", "parquet", "{w}/runs", "--out", "{w}", "--overwrite", "--accept", "all"],
    ["export", "parquet", "{w}/runs", "--out", "{run}/flat", "--overwrite", "--accept", "all"],
    ["export", "hdf5", "{w}/runs", "--out", "{run}/demo.hdf5", "--overwrite", "--accept", "all"],
    ["export", "hdf5", "{w}/runs", "--out", "{w}/runs/populations", "--accept", "all", "--overwrite"],
    ["export", "lerobot", "{w}/runs", "--out", "{w}/runs", "--overwrite", "--accept", "all"],
    ["score", "{w}/runs", "--out", "{run}/events.jsonl", "--resamples", "0"],
    ["score", "{w}/c.duckdb", "--out", "{w}/c.duckdb", "--resamples", "0"],
    ["score", "--parquet", "{w}/snap", "--out", "{w}/snap/runs/x.json", "--resamples", "0"],
    ["report", "{w}/runs", "--out", "{run}/run.json", "--resamples", "0"],
    ["report", "{w}/c.duckdb", "--out", "{w}/c.duckdb", "--resamples", "0"],
    ["report", "{w}/snap", "--parquet", "--out", "{w}/snap/runs/x.html", "--resamples", "0"],
    ["ingest", "{w}/runs", "--db", "{run}/run.json"],
    ["ingest", "{w}/runs", "--db", "{run}/corpus.duckdb"],
    ["snapshot", "--db", "{w}/c.duckdb", "--parquet", "{w}/c.duckdb.wal"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a[:2]) + " " + a[a.index(next(x for x in a if x in ("--out", "--db", "--parquet") and a.index(x) > 1)) + 1].split("}")[-1])
def test_an_output_over_an_input_is_refused(world: Path, args: list[str]) -> None:
    before = tree(world)
    result = CliRunner().invoke(cli, [a.format(w=world, run=first_run(world)) for a in args])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output
    assert "choose a path outside the inputs" in result.output
    assert tree(world) == before


def test_a_link_to_an_input_is_refused(world: Path, tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(world / "runs")
    before = tree(world)
    result = CliRunner().invoke(cli, ["export", "parquet", str(world / "runs"), "--out", str(tmp_path / "alias"),
                                      "--overwrite", "--accept", "all"])
    assert result.exit_code == 1 and "choose a path outside the inputs" in result.output, result.output
    assert tree(world) == before


def test_a_hard_link_to_an_input_is_never_written_through(world: Path, tmp_path: Path) -> None:
    """Writes are a rename over the output's name, so a hard link is replaced, not its inode."""
    manifest = Path(first_run(world)) / "run.json"
    os.link(manifest, tmp_path / "hard.json")
    before = tree(world)
    result = CliRunner().invoke(cli, ["score", str(world / "runs"), "--out", str(tmp_path / "hard.json"), "--resamples", "0"])
    assert result.exit_code in (0, 1), result.output
    assert tree(world) == before


def test_the_default_outputs_still_work(world: Path, tmp_path: Path) -> None:
    """scores.json at the top of a runs folder is beside the runs, not inside one."""
    result = CliRunner().invoke(cli, ["score", str(world / "runs"), "--resamples", "0", "--json"])
    assert result.exit_code == 0, result.output
    assert (world / "runs" / "scores.json").is_file()
    (world / "runs" / "scores.json").unlink()
    result = CliRunner().invoke(cli, ["export", "parquet", str(world / "runs"), "--out", str(tmp_path / "flat"),
                                      "--accept", "all"])
    assert result.exit_code == 0, result.output
