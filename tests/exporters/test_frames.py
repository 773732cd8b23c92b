"""Tests for labrecord.exporters.frames: run videos decoded and matched to the control steps."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.exporters.examples import VideoWriter, camera_frame, write_demo_runs
from labrecord.exporters.frames import align, decode_video, parse_image_size, resize, run_videos
from labrecord.exporters.hdf5 import export_hdf5

#: mean absolute error (0-255) allowed for an H.264 (crf 23) round trip of the 32x32 example
#: frames (measured about 6.5); the frame one step later is about 24 away
H264_TOLERANCE = 8.0


def test_image_sizes() -> None:
    assert parse_image_size(None) is None and parse_image_size("") is None
    assert parse_image_size(96) == (96, 96) and parse_image_size("32x48") == (32, 48)
    for bad in ("0", "x", "3x4x5", "-2", "big"):
        with pytest.raises(LabrecordError, match="is not N or HxW"):
            parse_image_size(bad)


def test_resize_keeps_a_flat_image_flat() -> None:
    images = np.full((2, 8, 12, 3), 77, dtype=np.uint8)
    small = resize(images, (4, 6))
    assert small.shape == (2, 4, 6, 3) and np.all(np.abs(small.astype(int) - 77) <= 1)
    assert resize(images, None) is images and resize(images, (8, 12)) is images


def test_align_by_hand() -> None:
    """Two demos of 3 and 2 steps at 10 Hz; the video has 5 frames at 0.0 … 0.4 s."""
    frames = np.arange(5, dtype=np.uint8).reshape(5, 1, 1, 1) * np.ones((1, 2, 2, 3), dtype=np.uint8)
    times = np.arange(5) / 10
    demos = [("demo_0", np.array([0.0, 0.1, 0.2])), ("demo_1", np.array([5.0, 5.1]))]  # the clock may restart
    out = align(Path("v.mp4"), frames, times, demos, 0.1, Path("d.hdf5"))
    assert [int(x[0, 0, 0]) for x in out["demo_0"]] == [0, 1, 2] and [int(x[0, 0, 0]) for x in out["demo_1"]] == [3, 4]
    with pytest.raises(LabrecordError, match=r"v.mp4: 4 frame\(s\), but d.hdf5 records 5 control step\(s\) in 2 demo"):
        align(Path("v.mp4"), frames[:4], times[:4], demos, 0.1, Path("d.hdf5"))
    late = [("demo_0", np.array([0.0, 0.1, 0.26])), ("demo_1", np.array([0.0, 0.1]))]  # 0.06 s off > 0.05 s
    with pytest.raises(LabrecordError, match=r"frame 2 is at 0.200 s into demo demo_0 but step 2 of d.hdf5 data/demo_0 "
                                             r"was acquired at 0.260 s"):
        align(Path("v.mp4"), frames, times, late, 0.1, Path("d.hdf5"))


@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=5))
def test_align_partitions_the_frames(lengths: list[int]) -> None:
    total = sum(lengths)
    frames = np.arange(total, dtype=np.uint8).reshape(total, 1, 1, 1) * np.ones((1, 1, 1, 3), dtype=np.uint8)
    demos = [(f"demo_{k}", np.arange(n) / 10 + k) for k, n in enumerate(lengths)]
    out = align(Path("v"), frames, np.arange(total) / 10, demos, 0.1, Path("d"))
    joined = np.concatenate([out[name] for name, _ in demos]) if total else frames
    np.testing.assert_array_equal(joined, frames)


def test_run_video_decodes_to_the_recorded_frames(tmp_path: Path) -> None:
    (run,) = write_demo_runs(tmp_path, runs=1, episodes=2, steps=5, image_size=32, cameras=(), video_cameras=("wrist",))
    videos = run_videos(run)
    assert list(videos) == ["wrist"]
    frames, times = decode_video(videos["wrist"])
    assert frames.shape == (10, 32, 32, 3)
    np.testing.assert_allclose(times, np.arange(10) / 10)
    expected = np.stack([camera_frame(i, e, 32) for e in range(2) for i in range(5)]).astype(float)
    assert np.abs(frames - expected).mean(axis=(1, 2, 3)).max() < H264_TOLERANCE
    assert np.abs(frames[1:5] - expected[:4]).mean(axis=(1, 2, 3)).min() > 2 * H264_TOLERANCE  # a shift shows


def test_frames_not_kept_are_decoded_but_not_converted(tmp_path: Path) -> None:
    """keep = the second episode only (frames 5..9): those are the full decode's frames and
    times; frames 0..4 stay black; every presentation time is still there for alignment."""
    (run,) = write_demo_runs(tmp_path, runs=1, episodes=2, steps=5, image_size=32, cameras=(), video_cameras=("wrist",))
    path = run_videos(run)["wrist"]
    full, full_times = decode_video(path, (16, 16))
    keep = np.arange(10) >= 5
    frames, times = decode_video(path, (16, 16), keep)
    np.testing.assert_array_equal(times, full_times)
    np.testing.assert_array_equal(frames[5:], full[5:])
    assert frames.shape == full.shape and not frames[:5].any() and full[:5].any()
    short, _ = decode_video(path, None, keep[:7])  # frames past the mask are not wanted either
    assert short[5:7].any() and not short[7:].any()


def test_short_video_is_refused(tmp_path: Path) -> None:
    (run,) = write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=6, image_size=16, cameras=(),
                             video_cameras=("wrist",))
    writer = VideoWriter(run / "videos" / "wrist.mp4", 10.0, 16)  # a video that lost its last frame
    for i in range(5):
        writer.write(camera_frame(i, 0, 16))
    writer.close()
    with pytest.raises(LabrecordError, match=r"wrist.mp4: 5 frame\(s\), but .*demo.hdf5 records 6 control step\(s\)"):
        export_hdf5(tmp_path / "runs", tmp_path / "out.hdf5", images=True)
    assert not (tmp_path / "out.hdf5").exists()
    export_hdf5(tmp_path / "runs", tmp_path / "low.hdf5")  # without images the video is not read


def test_runs_with_different_cameras(tmp_path: Path) -> None:
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=16, cameras=(), prefix="a",
                    video_cameras=("front", "wrist"))
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=16, cameras=(), prefix="b",
                    video_cameras=("front",))
    with pytest.raises(LabrecordError, match=r"runs 'a-0000' and 'b-0000' have different cameras \(front, wrist vs "
                                             r"front\); choose the shared ones with --cameras"):
        export_hdf5(tmp_path / "runs", tmp_path / "o.hdf5", images=True)
    export_hdf5(tmp_path / "runs", tmp_path / "o.hdf5", images=True, cameras=["front"])
    shutil.rmtree(tmp_path / "runs" / "b-0000" / "videos")
    with pytest.raises(LabrecordError, match=r"run 'b-0000' has no camera 'front' \(it has: none"):
        export_hdf5(tmp_path / "runs", tmp_path / "p.hdf5", images=True, cameras=["front"])
    shutil.rmtree(tmp_path / "runs" / "a-0000" / "videos")
    with pytest.raises(LabrecordError, match=r"--images, but the accepted runs have no camera"):
        export_hdf5(tmp_path / "runs", tmp_path / "p.hdf5", images=True)
