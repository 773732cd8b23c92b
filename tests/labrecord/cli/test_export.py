"""Tests for ``labrecord export`` (the command layer; the exporters have their own tests)."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from labrecord.cli import main
from labrecord.cli.export import parse_split
from labrecord.exporters.examples import write_demo_runs


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    write_demo_runs(root, runs=2, episodes=2, steps=4, successes=(True, False), image_size=8)
    return root


def test_hdf5_and_parquet_commands(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["export", "hdf5", str(runs), "--out", str(tmp_path / "d.hdf5"), "--json"], capsys)
    assert code == 0 and json.loads(out)["demos"] == 2
    code, out, _ = run(["export", "parquet", str(runs), "--out", str(tmp_path / "flat"), "--accept", "all"], capsys)
    assert code == 0 and out.startswith("wrote 4 demos (16 frames)")
    code, _, _ = run(["export", "parquet", str(runs), "--out", str(tmp_path / "privileged"), "--env-state"], capsys)
    document = json.loads((tmp_path / "privileged" / "export.json").read_text())
    assert code == 0 and document["privileged_columns"] == ["env_state.object", "next_env_state.object"]


def test_hdf5_images_command(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from labrecord.demos import DemoReader

    out = tmp_path / "img.hdf5"
    code, _, _ = run(["export", "hdf5", str(runs), "--out", str(out), "--images", "--cameras", "front",
                      "--image-size", "4x6", "--env-state"], capsys)
    assert code == 0
    with DemoReader(out) as reader:
        shapes = reader.obs_shapes(reader.demo_names[0])
    assert shapes["front_image"][0] == (4, 6, 3) and "object" in shapes
    code, _, err = run(["export", "hdf5", str(runs), "--out", str(tmp_path / "x.hdf5"), "--images", "--cameras",
                        "side"], capsys)
    assert code == 1 and err.startswith("Error: ") and "has no camera 'side'" in err and err.count("\n") == 1
    code, _, err = run(["export", "hdf5", str(runs), "--out", str(tmp_path / "x.hdf5"), "--images", "--image-size",
                        "big"], capsys)
    assert code == 1 and "'big' is not N or HxW" in err


def test_errors_are_one_line(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.hdf5").write_bytes(b"keep me")
    code, _, err = run(["export", "hdf5", str(runs), "--out", str(tmp_path / "d.hdf5")], capsys)
    assert code == 1 and err.startswith("Error: ") and "--overwrite" in err and err.count("\n") == 1
    assert (tmp_path / "d.hdf5").read_bytes() == b"keep me"
    code, _, err = run(["export", "hdf5", str(runs), "--out", str(tmp_path / "e.hdf5"), "--accept", "episode = 7"], capsys)
    assert code == 1 and "none accepted by rule 'episode = 7'" in err
    code, _, err = run(["export", "lerobot", str(runs), "--out", str(tmp_path / "l"), "--split", "train=2"], capsys)
    assert code == 2 and "--split" in err


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["export"], ["export", "hdf5"], ["export", "lerobot"], ["export", "parquet"]):
        code, out, _ = run([*command, "-h"], capsys)
        assert code == 0 and "Example:" in out


@pytest.mark.parametrize("text, valid", [("train=0.9", 0.1), ("train=1", 0.0), ("valid=0.2", 0.2),
                                         ("train=0.75,valid=0.25", 0.25)])
def test_parse_split(text: str, valid: float) -> None:
    assert parse_split(text) == pytest.approx(valid)


@pytest.mark.parametrize("text", ["train=0", "train=0.9,valid=0.2", "test=0.5", "train", "train=x"])
def test_parse_split_refuses(text: str) -> None:
    with pytest.raises(click.BadParameter):
        parse_split(text)
