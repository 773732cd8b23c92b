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


def fsync_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every ``os.fsync`` (and still run it)."""
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)
    monkeypatch.setattr(os, "fsync", counted)
    return calls


def test_a_non_durable_commit_syncs_nothing_and_still_honours_the_umask(tmp_path: Path, mask: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fsync_calls(monkeypatch)
    os.umask(0o027)
    with atomic_path(tmp_path / "staged.json", durable=False) as tmp:
        tmp.write_bytes(b"{}")
    assert calls == []
    assert (tmp_path / "staged.json").read_bytes() == b"{}" and mode(tmp_path / "staged.json") == 0o640
    with atomic_path(tmp_path / "kept.json") as tmp:
        tmp.write_bytes(b"{}")
    assert len(calls) == 2  # the durable one: the file, then its folder


def test_sync_filesystem_is_one_call_where_syncfs_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labrecord import fileio

    (tmp_path / "a").write_bytes(b"1")
    calls = fsync_calls(monkeypatch)
    fileio.sync_filesystem(tmp_path)
    if fileio._load_syncfs() is not None:
        assert calls == []  # one syncfs, no per-file fsync
    else:
        assert len(calls) == 2


def test_sync_filesystem_without_syncfs_fsyncs_every_file_and_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two files in the root, one in ``sub/``: three file fsyncs, then ``sub`` and the root: five."""
    from labrecord import fileio

    (tmp_path / "sub").mkdir()
    for name in ("a", "b", "sub/c"):
        (tmp_path / name).write_bytes(name.encode())
    monkeypatch.setattr(fileio, "_syncfs", None)
    calls = fsync_calls(monkeypatch)
    fileio.sync_filesystem(tmp_path)
    assert len(calls) == 5


def test_a_failing_syncfs_falls_back_to_fsyncing_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labrecord import fileio

    (tmp_path / "a").write_bytes(b"1")
    monkeypatch.setattr(fileio, "_syncfs", lambda fd: -1)
    calls = fsync_calls(monkeypatch)
    fileio.sync_filesystem(tmp_path)
    assert len(calls) == 2  # the file and the folder
