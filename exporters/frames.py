"""Camera frames for training exports, aligned with the control steps of each demonstration.

A run's cameras are its ``videos/<camera>.mp4`` streams (written by the recorder, one
frame per control step across all the run's episodes, in recording order) and any
(H, W, 3) uint8 key kept in ``demo.hdf5``.  A frame kept in ``demo.hdf5`` is used as is;
otherwise the video is decoded with PyAV and matched to the steps by time:

* the video must hold exactly one frame per recorded step of the run (the sum of
  ``num_samples`` over every demo in ``demo.hdf5``, accepted or not); and
* inside each demo, the presentation time of step ``i``'s frame, counted from the demo's
  first frame, must agree with the step's acquisition time (``timestamps/<camera>_acquired``,
  else ``acquired``, else ``t``), counted from the demo's first step, to within half a
  control period.

Anything else is refused with one error naming the video, the demo and the numbers.
Frames are resized (``--image-size``) by swscale's area filter through PyAV.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.demos import DemoReader
from labrecord.errors import LabrecordError
from labrecord.rundir import VIDEOS_DIR

from labrecord.exporters.selection import Selection

VIDEO_SUFFIX = ".mp4"


def parse_image_size(text: str | int | None) -> tuple[int, int] | None:
    """``96`` -> (96, 96); ``96x128`` -> (96, 128) as (height, width); None stays None."""
    if text is None or text == "":
        return None
    parts = str(text).lower().split("x")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or any(v <= 0 for v in values):
        raise LabrecordError(f"image size {text!r} is not N or HxW with positive integers (e.g. 96 or 96x128)")
    return (values[0], values[-1])


def run_videos(run_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """``{camera: path}`` of the run's ``videos/<camera>.mp4`` files."""
    folder = Path(run_dir) / VIDEOS_DIR
    if not folder.is_dir():
        return {}
    return {p.name[: -len(VIDEO_SUFFIX)]: p for p in sorted(folder.iterdir()) if p.name.endswith(VIDEO_SUFFIX)}


def _open(path: Path) -> Any:
    import av

    try:
        return av.open(str(path))
    except (av.error.FFmpegError, OSError) as error:  # type: ignore[attr-defined]
        raise LabrecordError(f"{path}: not a readable video ({error})") from error


def video_size(path: Path) -> tuple[int, int]:
    """(height, width) of a video's first stream."""
    with _open(path) as container:
        if not container.streams.video:
            raise LabrecordError(f"{path}: has no video stream")
        stream = container.streams.video[0]
        return (int(stream.height), int(stream.width))


def resize(images: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
    """(N, H, W, 3) uint8 resized to ``size`` = (height, width) (unchanged when None or equal)."""
    if size is None or tuple(images.shape[1:3]) == tuple(size):
        return images
    import av

    out = np.empty((len(images), size[0], size[1], 3), dtype=np.uint8)
    for i, image in enumerate(images):
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
        out[i] = frame.reformat(width=size[1], height=size[0], format="rgb24", interpolation="AREA").to_ndarray()
    return out


def decode_video(path: Path, size: tuple[int, int] | None = None,
                 keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of ``path`` as (N, H, W, 3) uint8 (resized when ``size``) and their
    presentation times in seconds.

    ``keep`` (bool per frame index) names the frames wanted as pixels: the others are
    decoded (a video decodes in order) but not converted to RGB, and stay black.  The RGB
    conversion is about half of the decoding cost, and a run's rejected attempts need none.
    Frames go straight into one preallocated array when the stream declares its frame
    count.  No frame threading: on the recorder's small videos it doubled the decode time
    (measured 0.17 s against 0.06 s for four 180-frame 64x64 videos)."""
    import av

    with _open(path) as container:
        if not container.streams.video:
            raise LabrecordError(f"{path}: has no video stream")
        stream = container.streams.video[0]
        height, width = size or (int(stream.height), int(stream.width))
        frames = np.zeros((max(int(stream.frames or 0), 0), height, width, 3), dtype=np.uint8)
        times: list[float] = []
        try:
            for frame in container.decode(stream):
                index = len(times)
                times.append(float(frame.time) if frame.time is not None else float("nan"))
                if index == len(frames):  # more frames than the stream declared
                    frames = np.concatenate([frames, np.zeros((max(len(frames), 16), height, width, 3), np.uint8)])
                if keep is not None and not (index < len(keep) and keep[index]):
                    continue
                if (frame.height, frame.width) != (height, width):
                    frame = frame.reformat(width=width, height=height, format="rgb24", interpolation="AREA")
                frames[index] = frame.to_ndarray(format="rgb24")
        except av.error.FFmpegError as error:  # type: ignore[attr-defined]
            raise LabrecordError(f"{path}: cannot be decoded after {len(times)} frame(s) ({error})") from error
    return frames[:len(times)], np.asarray(times, dtype=float)


def step_times(timestamps: dict[str, np.ndarray], camera: str, n: int, where: str = "") -> np.ndarray:
    """When each step's frame of ``camera`` was acquired (falls back to the step time)."""
    for key in (f"{camera}_acquired", "acquired", "t"):
        if key in timestamps:
            times = np.asarray(timestamps[key], dtype=float)
            if len(times) != n:
                raise LabrecordError(f"{where}: timestamps/{key} has {len(times)} rows for {n} steps")
            return times
    return np.arange(n, dtype=float)  # no clock recorded: the step index is all there is


def align(path: Path, frames: np.ndarray, times: np.ndarray, demos: list[tuple[str, np.ndarray]], period: float,
          demo_path: Path) -> dict[str, np.ndarray]:
    """Split a run's decoded frames into per-demo arrays, refusing a count or timing mismatch.

    ``demos`` lists every demo of the run in recording order with its steps' acquisition
    times; ``period`` is one control period (s).
    """
    total = sum(len(t) for _, t in demos)
    if len(frames) != total:
        raise LabrecordError(f"{path}: {len(frames)} frame(s), but {demo_path} records {total} control step(s) in "
                             f"{len(demos)} demo(s); the video is not frame-aligned with the steps, not exported")
    out: dict[str, np.ndarray] = {}
    offset = 0
    for name, steps in demos:
        n = len(steps)
        if n == 0:
            out[name] = frames[offset:offset]
            continue
        video_t = times[offset:offset + n] - times[offset]
        step_t = steps - steps[0]
        gap = np.abs(video_t - step_t)
        if not np.all(gap <= period / 2 + 1e-9):
            i = int(np.nanargmax(np.where(np.isnan(gap), np.inf, gap)))
            raise LabrecordError(
                f"{path}: frame {offset + i} is at {video_t[i]:.3f} s into demo {name} but step {i} of {demo_path} "
                f"data/{name} was acquired at {step_t[i]:.3f} s (more than half a control period, {period / 2:.3f} s, "
                "apart); not exported")
        out[name] = frames[offset:offset + n]
        offset += n
    return out


@dataclass
class CameraPlan:
    """One exported camera: where its frames come from and at what size."""

    name: str
    source: str  # "demo" (kept in demo.hdf5) or "video" (videos/<camera>.mp4, decoded)
    native: tuple[int, int]
    size: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "recorded_size": list(self.native),
                "exported_size": list(self.size)}


def _run_cameras(selection: Selection, run_id: str, demo_cameras: list[str]) -> dict[str, tuple[str, tuple[int, int]]]:
    source = selection.runs[run_id]
    cameras: dict[str, tuple[str, tuple[int, int]]] = {}
    for camera, path in run_videos(source.dir).items():
        cameras[camera] = ("video", video_size(path))
    if demo_cameras:
        row = next(r for r in selection.accepted if r.run_id == run_id)
        with DemoReader(source.demo_path) as reader:  # type: ignore[arg-type]
            shapes = reader.obs_shapes(row.demo)  # type: ignore[arg-type]
        for camera in demo_cameras:
            cameras[camera] = ("demo", tuple(shapes[camera][0][:2]))  # type: ignore[assignment]
    return cameras


def plan_cameras(selection: Selection, demo_cameras: list[str], wanted: list[str] | None,
                 size: tuple[int, int] | None) -> list[CameraPlan]:
    """The cameras to export: the same set must exist in every accepted run; ``wanted``
    selects (all when None); sizes must agree unless ``size`` resizes them all."""
    run_ids = list(dict.fromkeys(r.run_id for r in selection.accepted))
    first = _run_cameras(selection, run_ids[0], demo_cameras)
    names = sorted(first) if wanted is None else list(dict.fromkeys(wanted))
    for run_id in run_ids:
        found = first if run_id == run_ids[0] else _run_cameras(selection, run_id, demo_cameras)
        if wanted is None and sorted(found) != names:
            raise LabrecordError(f"runs {run_ids[0]!r} and {run_id!r} have different cameras ({', '.join(names)} vs "
                                 f"{', '.join(sorted(found))}); choose the shared ones with --cameras")
        missing = [c for c in names if c not in found]
        if missing:
            where = selection.runs[run_id].dir
            raise LabrecordError(f"{where}: run {run_id!r} has no camera {', '.join(map(repr, missing))} "
                                 f"(it has: {', '.join(sorted(found)) or 'none'}; cameras are videos/<camera>.mp4 "
                                 "or image keys in demo.hdf5); choose others with --cameras")
        for camera in names:
            if size is None and found[camera][1] != first[camera][1]:
                raise LabrecordError(f"camera {camera!r} is {first[camera][1][0]}x{first[camera][1][1]} in run "
                                     f"{run_ids[0]!r} but {found[camera][1][0]}x{found[camera][1][1]} in {run_id!r}; "
                                     "pass --image-size to export one size")
    return [CameraPlan(c, first[c][0], first[c][1], size or first[c][1]) for c in names]


@dataclass
class FrameSource:
    """Aligned frames of the planned cameras.

    Each run's videos are decoded once, and the frames of its accepted demos are kept until
    they are handed out (an export that returns to a run later, as the valid split does,
    finds them waiting instead of decoding again).  While the caller writes one run's
    episodes, the next run in ``order`` is decoded on a worker thread (PyAV decodes without
    holding the GIL), so decoding overlaps the writing; call :meth:`close` (or use ``with``)
    to stop it.  ``decode_s`` is the time spent decoding and aligning, wherever it ran.
    """

    selection: Selection
    cameras: list[CameraPlan]
    period: float
    #: run ids in the order the caller will ask for them (default: the accepted runs' order)
    order: list[str] = field(default_factory=list)
    decode_s: float = 0.0
    _waiting: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)
    _started: set[str] = field(default_factory=set)
    _pending: dict[str, Any] = field(default_factory=dict)
    _pool: Any = None

    def __post_init__(self) -> None:
        self.order = list(dict.fromkeys(self.order or [r.run_id for r in self.selection.accepted]))

    @property
    def _videos(self) -> list[CameraPlan]:
        return [c for c in self.cameras if c.source == "video"]

    def frames(self, run_id: str, demo: str, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{camera: (N, H, W, 3)}`` for one demo of ``run_id`` (``obs`` supplies kept
        frames); each demo's decoded frames are handed out once."""
        out: dict[str, np.ndarray] = {}
        for camera in self.cameras:
            if camera.source == "demo":
                out[camera.name] = resize(obs[camera.name], camera.size)
        if self._videos:
            if (run_id, demo) not in self._waiting:
                future = self._pending.pop(run_id, None)
                decoded, seconds = future.result() if future is not None else self._decode(run_id)
                self._started.add(run_id)
                self._waiting.update(decoded)
                self.decode_s += seconds
            self._prefetch_after(run_id)
            out.update(self._waiting.pop((run_id, demo)))
        return out

    def _prefetch_after(self, run_id: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        later = self.order[self.order.index(run_id) + 1:] if run_id in self.order else []
        following = next((r for r in later if r not in self._started and r not in self._pending), None)
        if following is None or self._pending:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="labrecord-decode")
        self._pending[following] = self._pool.submit(self._decode, following)

    def _decode(self, run_id: str) -> tuple[dict[tuple[str, str], dict[str, np.ndarray]], float]:
        """Decode and align one run's videos: ``{(run, demo): {camera: frames}}`` for its
        accepted demos, and the seconds it took."""
        import time

        start = time.perf_counter()
        source = self.selection.runs[run_id]
        with DemoReader(source.demo_path) as reader:  # type: ignore[arg-type]
            demos = [(name, reader.demo(name, keys=[]).timestamps, reader.num_samples(name)) for name in reader.demo_names]
        paths = run_videos(source.dir)
        accepted = {row.demo for row in self.selection.accepted if row.run_id == run_id}
        keep = np.concatenate([np.full(n, name in accepted) for name, _, n in demos]) if demos else np.zeros(0, bool)
        decoded: dict[tuple[str, str], dict[str, np.ndarray]] = {}
        for camera in self._videos:
            frames, times = decode_video(paths[camera.name], camera.size, keep)
            steps = [(name, step_times(ts, camera.name, n, f"{source.demo_path} data/{name}")) for name, ts, n in demos]
            aligned = align(paths[camera.name], frames, times, steps, self.period, source.demo_path)  # type: ignore[arg-type]
            for name in accepted:
                decoded.setdefault((run_id, name), {})[camera.name] = aligned[name]  # type: ignore[index, arg-type]
        return decoded, time.perf_counter() - start

    def close(self) -> None:
        """Stop the decoding worker (a decode under way finishes; its frames are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
