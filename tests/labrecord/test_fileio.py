"""Tests for labrecord/fileio.py: the one atomic-write helper for files and folders."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from labrecord.fileio import atomic_path, atomic_write_bytes, umask


@pytest.fixture
def mask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_umask_is_read_without_changing_it(mask: None) -> None:
    os.umask(0o027)
    assert umask() == 0o027
    assert umask() == 0o027


def test_files_honour_the_umask(tmp_path: Path, mask: None) -> None:
    """mkstemp makes 0600 files; the committed file is 0666 & ~umask: 0644 under 022, 0640 under 027."""
    atomic_write_bytes(tmp_path / "a.json", b"{}")
    assert mode(tmp_path / "a.json") == 0o644
    os.umask(0o027)
    atomic_write_bytes(tmp_path / "b.json", b"{}")
    assert mode(tmp_path / "b.json") == 0o640


def test_a_file_is_replaced_whole_and_no_temp_is_left(tmp_path: Path, mask: None) -> None:
    target = tmp_path / "scores.json"
    atomic_write_bytes(target, b"old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.json"]


def test_an_error_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "m.parquet"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("writer failed")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.parquet"]


def test_a_folder_replaces_the_old_tree_with_umask_modes(tmp_path: Path, mask: None) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "stale.parquet").write_bytes(b"x")
    with atomic_path(out, folder=True) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.parquet").write_bytes(b"a")
        (tmp / "export.json").write_bytes(b"{}")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["export.json", "sub", "sub/a.parquet"]
    assert mode(out) == 0o755          # mkdtemp made it 0700
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_a_failed_folder_write_keeps_the_old_tree(tmp_path: Path) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "kept").write_bytes(b"x")
    with pytest.raises(ValueError), atomic_path(out, folder=True) as tmp:
        (tmp / "partial").write_bytes(b"y")
        raise ValueError("stop")
    assert [p.name for p in out.iterdir()] == ["kept"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]
