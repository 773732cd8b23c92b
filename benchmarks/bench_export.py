"""Export throughput: frames per second of each export, next to a baseline measured in the same run.

The runs are laid out as the recorder writes them: low-dimensional observations in
``demo.hdf5``, cameras (``front``, ``wrist``) as ``videos/<camera>.mp4`` (H.264, one frame
per control step).

* LeRobot export with cameras (needs lerobot, Python >= 3.12) vs lerobot's own
  ``StreamingVideoEncoder`` encoding exactly the same camera frames (already decoded, in
  memory) with the same codec settings: the ratio says what the export costs beyond the
  video encoding lerobot would do anyway; the target against lerobot's own write is at most 1.05.  The export's own decoding
  of the run videos is reported as its share of the export time.
* decode: PyAV decoding every run video (the cost of reading cameras from videos), next
  to the alternative of keeping raw frames in ``demo.hdf5`` (bytes and write time).
* robomimic HDF5 export (low-dimensional, and ``--images``) and Parquet export vs reading
  the same accepted demos through ``DemoReader`` (the unavoidable read of the source).

Usage::

    python benchmarks/bench_export.py --size small --repeat 5
    python benchmarks/bench_export.py --runs 4 --episodes 5 --steps 200 --image-size 128

Run it with the Python that has lerobot for the LeRobot row; elsewhere that row is skipped.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

SIZES = {  # runs, episodes, steps, image size
    "tiny": (2, 2, 20, 32),
    "small": (2, 3, 60, 64),
    "medium": (4, 4, 150, 96),
    "large": (8, 5, 300, 128),
}


def timed(func, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = func(*args, **kwargs)
    return time.perf_counter() - start, result


def read_all(runs: Path) -> int:
    """Baseline for the HDF5/Parquet exports: load every demo of every run once."""
    from labrecord.demos import DemoReader

    frames = 0
    for run in sorted(p for p in runs.iterdir() if (p / "demo.hdf5").exists()):
        with DemoReader(run / "demo.hdf5") as reader:
            for name in reader.demo_names:
                frames += reader.demo(name).num_samples
    return frames


CAMERAS = ("front", "wrist")
PROPRIO = ["robot0_eef_pos", "robot0_gripper_qpos"]


def decoded_stretches(runs: Path) -> tuple[list[dict[str, object]], float]:
    """The camera frames of every exported stretch (successful demos, policy control),
    decoded from the run videos; returns them and the decode time."""
    from labrecord.demos import DemoReader
    from labrecord.exporters.frames import decode_video
    from labrecord.exporters.lerobot import control_segments
    from labrecord.exporters.observations import stacked

    stretches: list[dict[str, object]] = []
    seconds = 0.0
    for run in sorted(p for p in runs.iterdir() if (p / "demo.hdf5").exists()):
        start = time.perf_counter()
        videos = {c: decode_video(run / "videos" / f"{c}.mp4")[0] for c in CAMERAS}
        seconds += time.perf_counter() - start
        offset = 0
        with DemoReader(run / "demo.hdf5") as reader:
            for name in reader.demo_names:
                demo = reader.demo(name)
                if demo.success:
                    state = stacked(demo.obs, PROPRIO, demo.num_samples)
                    stretches += [{**{c: videos[c][offset + a:offset + b] for c in CAMERAS},
                                   "state": state[a:b], "action": demo.actions[a:b]}
                                  for a, b in control_segments(demo.control_mask)]
                offset += demo.num_samples
    return stretches, seconds


def keep_in_hdf5(stretches: list[dict[str, object]], path: Path) -> tuple[float, int]:
    """The alternative to decoding: raw frames kept in an HDF5 file (chunked per frame, as
    the demo writer stores arrays); returns the write time and the bytes written."""
    import h5py

    start = time.perf_counter()
    with h5py.File(path, "w") as handle:
        for i, stretch in enumerate(stretches):
            for camera in CAMERAS:
                frames = stretch[camera]
                handle.create_dataset(f"{i}/{camera}", data=frames, chunks=(1, *frames.shape[1:]))  # type: ignore[attr-defined]
    return time.perf_counter() - start, path.stat().st_size


def encode_with_lerobot(stretches: list[dict[str, object]], work: Path, fps: int, codec: str) -> tuple[int, float]:
    """Baseline for the LeRobot export: lerobot's streaming encoder on the same camera frames,
    one video per camera per exported stretch, frames already in memory."""
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.video_utils import StreamingVideoEncoder

    longest = max(len(next(iter(s.values()))) for s in stretches)  # type: ignore[arg-type]
    encoder = StreamingVideoEncoder(fps, RGBEncoderConfig(vcodec=codec), queue_maxsize=longest + 2)
    frames = 0
    start = time.perf_counter()
    for stretch in stretches:
        encoder.start_episode([f"observation.images.{k}" for k in CAMERAS], temp_dir=work)
        for key in CAMERAS:
            for image in stretch[key]:  # type: ignore[attr-defined]
                encoder.feed_frame(f"observation.images.{key}", image)
        encoder.finish_episode()
        frames += len(stretch["action"])  # type: ignore[arg-type]
    encoder.close()
    return frames, time.perf_counter() - start


def record_with_lerobot(stretches: list[dict[str, object]], root: Path, fps: int, codec: str) -> tuple[int, float]:
    """Second baseline: lerobot writing the same episodes itself (``LeRobotDataset.create /
    add_frame / save_episode / finalize``, frames in memory), as its recorder does; this
    includes lerobot's per-episode statistics and parquet writing, which encoding alone does not."""
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets import LeRobotDataset

    first = stretches[0]
    features = {"action": {"dtype": "float32", "shape": (first["action"].shape[1],), "names": None},  # type: ignore[attr-defined]
                "observation.state": {"dtype": "float32", "shape": (first["state"].shape[1],), "names": None},  # type: ignore[attr-defined]
                **{f"observation.images.{c}": {"dtype": "video", "shape": first[c].shape[1:],  # type: ignore[attr-defined]
                                               "names": ["height", "width", "channels"]} for c in CAMERAS}}
    longest = max(len(s["action"]) for s in stretches)  # type: ignore[arg-type]
    start = time.perf_counter()
    dataset = LeRobotDataset.create("local/bench", fps=fps, features=features, root=root, use_videos=True,
                                    video_backend="pyav", rgb_encoder=RGBEncoderConfig(vcodec=codec),
                                    streaming_encoding=True, encoder_queue_maxsize=longest + 2)
    frames = 0
    for stretch in stretches:
        for i in range(len(stretch["action"])):  # type: ignore[arg-type]
            dataset.add_frame({"action": stretch["action"][i], "observation.state": stretch["state"][i],  # type: ignore[index]
                               **{f"observation.images.{c}": stretch[c][i] for c in CAMERAS}, "task": "weighing"})  # type: ignore[index]
        dataset.save_episode()
        frames += len(stretch["action"])  # type: ignore[arg-type]
    dataset.finalize()
    return frames, time.perf_counter() - start


def row(name: str, frames: int, seconds: float, base_name: str, base_seconds: float) -> str:
    return (f"{name:<10} {frames:>7} frames  {frames / seconds:>10.0f} frames/s   "
            f"baseline {base_name}: {frames / base_seconds:>10.0f} frames/s   ratio export/baseline time "
            f"{seconds / base_seconds:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--image-size", type=int)
    parser.add_argument("--codec", default="libsvtav1")
    parser.add_argument("--repeat", type=int, default=3, help="LeRobot measurements, taking turns (default 3).")
    args = parser.parse_args()
    runs_n, episodes, steps, image_size = SIZES[args.size]
    runs_n, episodes = args.runs or runs_n, args.episodes or episodes
    steps, image_size = args.steps or steps, args.image_size or image_size

    from labrecord.exporters.examples import write_demo_runs
    from labrecord.exporters.hdf5 import export_hdf5
    from labrecord.exporters.parquet import export_parquet

    work = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        runs = work / "runs"
        write_demo_runs(runs, runs=runs_n, episodes=episodes, steps=steps, image_size=image_size, cameras=(),
                        video_cameras=CAMERAS, successes=(True, True, False), env_control=True)
        print(f"{runs_n} runs x {episodes} episodes x {steps} steps, cameras {', '.join(CAMERAS)} at "
              f"{image_size}x{image_size} in videos/<camera>.mp4, codec {args.codec}")
        read_s, _ = timed(read_all, runs)
        hdf5_s, summary = timed(export_hdf5, runs, work / "demos.hdf5", valid_ratio=0.1)
        print(row("hdf5", summary.frames, hdf5_s, "DemoReader read", read_s))
        images_s, summary = timed(export_hdf5, runs, work / "images.hdf5", valid_ratio=0.1, images=True)
        print(row("hdf5+img", summary.frames, images_s, "DemoReader read", read_s))
        parquet_s, summary = timed(export_parquet, runs, work / "flat")
        print(row("parquet", summary.frames, parquet_s, "DemoReader read", read_s))
        stretches, decode_s = decoded_stretches(runs)
        video_frames = runs_n * episodes * steps * len(CAMERAS)
        video_bytes = sum(p.stat().st_size for p in runs.rglob("*.mp4"))
        keep_s, keep_bytes = keep_in_hdf5(stretches, work / "raw.hdf5")
        kept = sum(len(s[c]) for s in stretches for c in CAMERAS)  # type: ignore[arg-type]
        print(f"decode     {video_frames:>7} frames  {video_frames / decode_s:>10.0f} frames/s   "
              f"({decode_s:.2f} s for {video_bytes / 1e6:.2f} MB of video); keeping raw frames in HDF5 instead: "
              f"{kept / keep_s:.0f} frames/s written, {keep_bytes / kept / 1e3:.1f} kB/frame vs "
              f"{video_bytes / video_frames / 1e3:.1f} kB/frame of video")
        try:
            from labrecord.exporters.lerobot import export_lerobot, require_lerobot

            require_lerobot()
        except Exception as error:  # the extra is optional: report and skip
            print(f"lerobot    skipped: {error}")
            return
        # the LeRobot measurements take turns, --repeat times, on a machine others share; the
        # export and lerobot's own write swap places every turn so neither always goes first.
        # Wall time is what a user waits; CPU time (every thread of this process: lerobot's
        # encoder threads, the export's decoding worker) is the work done, which other
        # people's processes on the machine disturb far less.
        times: dict[str, list[float]] = {k: [] for k in ("encode", "record", "export", "decode", "record_cpu",
                                                          "export_cpu")}

        def record(attempt: int) -> None:
            cpu = time.process_time()
            count, seconds = record_with_lerobot(stretches, work / f"recorded-{attempt}", 10, args.codec)
            times["record_cpu"].append(time.process_time() - cpu)
            times["record"].append(seconds)
            assert count == frames, (count, frames)

        def export(attempt: int) -> None:
            cpu = time.process_time()
            seconds, summary = timed(export_lerobot, runs, work / f"lerobot-{attempt}", valid_ratio=0.1, codec=args.codec)
            times["export_cpu"].append(time.process_time() - cpu)
            times["export"].append(seconds)
            times["decode"].append(summary.decode_s)
            assert summary.frames == frames, (summary.frames, frames)

        for attempt in range(args.repeat):
            frames, encode_s = encode_with_lerobot(stretches, work, 10, args.codec)
            times["encode"].append(encode_s)
            for step in ((record, export) if attempt % 2 == 0 else (export, record)):
                step(attempt)
        for label, pick in (("fastest", min), ("median", statistics.median)):
            export_s, decode_s = pick(times["export"]), pick(times["decode"])
            print(f"LeRobot, {label} of {args.repeat}:")
            print(row("lerobot", frames, export_s, "lerobot encode only", pick(times["encode"]))
                  + f"   (decoding the run videos: {decode_s:.2f} s, {video_frames / decode_s:.0f} frames/s)")
            print(row("lerobot", frames, export_s, "lerobot's own write", pick(times["record"])))
        # each export ran next to lerobot's own write of the same frames: their ratio sees the
        # same neighbours on the machine, so it varies less than either time
        paired = sorted(e / r for e, r in zip(times["export"], times["record"]))
        cpu = sorted(e / r for e, r in zip(times["export_cpu"], times["record_cpu"]))
        print(f"export / lerobot's own write, paired by turn: wall time median {statistics.median(paired):.2f} "
              f"(range {paired[0]:.2f}-{paired[-1]:.2f}); CPU time median {statistics.median(cpu):.2f} "
              f"(range {cpu[0]:.2f}-{cpu[-1]:.2f}; {statistics.median(times['export_cpu']):.2f} s vs "
              f"{statistics.median(times['record_cpu']):.2f} s); {len(paired)} turns; target <= 1.05")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
