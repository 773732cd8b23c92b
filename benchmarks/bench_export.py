"""Export throughput: frames per second of each export, next to a baseline measured in the same run.

* LeRobot export (needs lerobot, Python >= 3.12) vs lerobot's own ``StreamingVideoEncoder``
  encoding exactly the same camera frames with the same codec settings: the ratio says what
  the export costs beyond the video encoding lerobot would do anyway.
* robomimic HDF5 export and Parquet export vs reading the same accepted demos through
  ``DemoReader`` (the unavoidable read of the source).

Usage::

    python benchmarks/bench_export.py --size small
    python benchmarks/bench_export.py --runs 4 --episodes 5 --steps 200 --image-size 128

Run it with the Python that has lerobot for the LeRobot row; elsewhere that row is skipped.
"""
from __future__ import annotations

import argparse
import shutil
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
    for run in sorted(runs.iterdir()):
        with DemoReader(run / "demo.hdf5") as reader:
            for name in reader.demo_names:
                frames += reader.demo(name).num_samples
    return frames


def encode_with_lerobot(runs: Path, work: Path, fps: int, codec: str) -> int:
    """Baseline for the LeRobot export: lerobot's streaming encoder on the same camera frames,
    one video per accepted policy-controlled stretch, frames already in memory."""
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.video_utils import StreamingVideoEncoder

    from labrecord.demos import DemoReader
    from labrecord.exporters.lerobot import control_segments

    stretches = []
    for run in sorted(runs.iterdir()):
        with DemoReader(run / "demo.hdf5") as reader:
            for name in reader.demo_names:
                demo = reader.demo(name)
                if demo.success:
                    stretches += [{k: v[a:b] for k, v in demo.obs.items() if v.ndim == 4}
                                  for a, b in control_segments(demo.control_mask)]
    longest = max(len(next(iter(s.values()))) for s in stretches)
    encoder = StreamingVideoEncoder(fps, RGBEncoderConfig(vcodec=codec), queue_maxsize=longest + 2)
    frames = 0
    start = time.perf_counter()
    for stretch in stretches:
        encoder.start_episode([f"observation.images.{k}" for k in stretch], temp_dir=work)
        for key, images in stretch.items():
            for image in images:
                encoder.feed_frame(f"observation.images.{key}", image)
        encoder.finish_episode()
        frames += len(next(iter(stretch.values())))
    encoder.close()
    encode_with_lerobot.seconds = time.perf_counter() - start  # type: ignore[attr-defined]
    return frames


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
        write_demo_runs(runs, runs=runs_n, episodes=episodes, steps=steps, image_size=image_size,
                        successes=(True, True, False), env_control=True)
        print(f"{runs_n} runs x {episodes} episodes x {steps} steps, one {image_size}x{image_size} camera, "
              f"codec {args.codec}")
        read_s, _ = timed(read_all, runs)
        hdf5_s, summary = timed(export_hdf5, runs, work / "demos.hdf5", valid_ratio=0.1)
        print(row("hdf5", summary.frames, hdf5_s, "DemoReader read", read_s))
        parquet_s, summary = timed(export_parquet, runs, work / "flat")
        print(row("parquet", summary.frames, parquet_s, "DemoReader read", read_s))
        try:
            from labrecord.exporters.lerobot import export_lerobot, require_lerobot

            require_lerobot()
        except Exception as error:  # the extra is optional: report and skip
            print(f"lerobot    skipped: {error}")
            return
        frames = encode_with_lerobot(runs, work, 10, args.codec)
        encode_s = encode_with_lerobot.seconds  # type: ignore[attr-defined]
        lerobot_s, summary = timed(export_lerobot, runs, work / "lerobot", valid_ratio=0.1, codec=args.codec)
        assert summary.frames == frames, (summary.frames, frames)
        print(row("lerobot", summary.frames, lerobot_s, "lerobot encode only", encode_s))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
