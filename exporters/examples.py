"""Small runs with demonstrations, for tests, docs and the export benchmark.

Each run is written through :func:`labrecord.examples.write_example_run` (so ``run.json``
and ``events.jsonl`` are what a producer writes) and gets a ``demo.hdf5`` written through
:class:`labrecord.demos.DemoWriter` with robomimic-named proprioception
(``robot0_eef_pos``, ``robot0_gripper_qpos``), evaluator state (``object``, listed in the
demo's ``privileged_obs``), synthetic camera frames kept in the demo (``cameras``) or
written as ``videos/<camera>.mp4`` one frame per step like the recorder does
(``video_cameras``), and, optionally, an environment-controlled stretch in the middle of
each episode.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.demos import DemoWriter
from labrecord.examples import write_example_run
from labrecord.rundir import DEMO_FILE, RunWriter

#: robot0_eef_pos (3) + robot0_gripper_qpos (1), then the evaluator's object position (3)
STATE_DIM = 7
PROPRIO_KEYS = {"robot0_eef_pos": slice(0, 3), "robot0_gripper_qpos": slice(3, 4)}
PRIVILEGED_KEYS = {"object": slice(4, 7)}


def camera_frame(step: int, episode: int, size: int) -> np.ndarray:
    """A smooth (size, size, 3) uint8 gradient that shifts with the step (compresses like video)."""
    axis = np.linspace(0.0, 1.0, size, dtype=np.float32)
    yy, xx = np.meshgrid(axis, axis, indexing="ij")
    phase = 0.07 * step + 0.5 * episode
    red = 0.5 + 0.5 * np.sin(2 * np.pi * (xx + phase))
    green = 0.5 + 0.5 * np.cos(2 * np.pi * (yy - phase))
    blue = np.full_like(xx, (episode * 37 % 255) / 255.0)
    return (np.stack([red, green, blue], axis=-1) * 255).astype(np.uint8)


def episode_arrays(rng: np.random.Generator, steps: int, episode: int, action_dim: int, cameras: tuple[str, ...],
                   image_size: int) -> dict[str, Any]:
    """States as a random walk (steps + 1 rows, so next_obs is the shifted state), actions, frames."""
    states = np.cumsum(rng.normal(scale=0.05, size=(steps + 1, STATE_DIM)), axis=0).astype(np.float32)
    actions = rng.uniform(-1.0, 1.0, size=(steps, action_dim)).astype(np.float32)
    frames = {cam: np.stack([camera_frame(i, episode, image_size) for i in range(steps + 1)]) for cam in cameras}
    return {"states": states, "actions": actions, "frames": frames}


def measurement_table(rows: int, control_hz: float) -> Any:
    """A ``measurements.parquet`` table: step, t, a scale reading and the weighing columns
    (idle: nothing on the pan, nothing moving), so the run validates as the export requires."""
    import pyarrow as pa

    from labrecord.measurements import FAMILY_COLUMNS

    step = np.arange(rows, dtype=np.int64)
    columns = {"step": step, "t": step / control_hz, "load_g": np.round(np.sin(step / 5.0) * 10.0 + 20.0, 1)}
    for name, kind in FAMILY_COLUMNS["weighing"].items():
        columns[name] = np.zeros(rows, dtype=bool) if kind == "bool" else np.zeros(rows, dtype=np.float64)
    columns["sensor_ok"] = np.ones(rows, dtype=bool)
    return pa.table(columns)


def low_dim(state: np.ndarray) -> dict[str, np.ndarray]:
    """The observation keys of one state row."""
    return {key: state[part] for key, part in {**PROPRIO_KEYS, **PRIVILEGED_KEYS}.items()}


class VideoWriter:
    """One camera's ``videos/<camera>.mp4`` (H.264, yuv420p, one frame per control step)."""

    def __init__(self, path: Path, fps: float, size: int) -> None:
        import av

        path.parent.mkdir(parents=True, exist_ok=True)
        self._container = av.open(str(path), mode="w")
        self._stream = self._container.add_stream("libx264", rate=int(round(fps)))
        self._stream.width = self._stream.height = size
        self._stream.pix_fmt = "yuv420p"
        self._stream.options = {"preset": "ultrafast", "crf": "23"}

    def write(self, frame: np.ndarray) -> None:
        import av

        for packet in self._stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
            self._container.mux(packet)

    def close(self) -> None:
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()


def write_demo(run_dir: Path, run_id: str, *, episodes: int, steps: int, successes: list[bool], action_dim: int,
               cameras: tuple[str, ...], image_size: int, env_control: bool, seed: int, control_hz: float,
               video_cameras: tuple[str, ...] = (), privileged_attr: bool = True) -> None:
    """Write ``demo.hdf5`` (and the videos) for one run, one demo per episode, step by step
    as a recorder would."""
    rng = np.random.default_rng(seed)
    env_args = {"env_name": "weighing-basic", "env_kwargs": {}, "labrecord": {"run_id": run_id}}
    videos = {c: VideoWriter(run_dir / "videos" / f"{c}.mp4", control_hz, image_size) for c in video_cameras}
    every = (*cameras, *video_cameras)
    extra = {"privileged_obs": sorted(PRIVILEGED_KEYS)} if privileged_attr else {}
    with DemoWriter(run_dir / DEMO_FILE, env_args) as demo:
        for episode in range(episodes):
            arrays = episode_arrays(rng, steps, episode, action_dim, every, image_size)
            demo.begin(run_id, episode, control_hz=control_hz, action_units="m", **extra)
            for i in range(steps):
                obs = {**low_dim(arrays["states"][i]), **{c: arrays["frames"][c][i] for c in cameras}}
                nxt = {**low_dim(arrays["states"][i + 1]), **{c: arrays["frames"][c][i + 1] for c in cameras}}
                for camera, video in videos.items():
                    video.write(arrays["frames"][camera][i])
                t = i / control_hz
                times = {"t": t, **{f"{c}_acquired": t - 0.005 for c in every}, **{f"{c}_delivered": t for c in every}}
                in_env_control = env_control and steps // 3 <= i < steps // 3 + 2
                demo.add_step(obs, arrays["actions"][i], nxt, reward=float(i == steps - 1), done=i == steps - 1,
                              timestamps=times, control=not in_env_control)
            success = successes[episode % len(successes)]
            demo.end(success, diagnostics={"hidden_mass_g": 20.0 + episode, "legal": [["add", "w20", "pan"]],
                                           "scores": {"b_next": 1.0 if success else 0.0}},
                     reason="success" if success else "timeout")
        demo.close(accept="success", valid_ratio=0.0)
    for video in videos.values():
        video.close()


def write_demo_runs(root: str | os.PathLike[str], *, runs: int = 2, episodes: int = 2, steps: int = 12,
                    successes: tuple[bool, ...] = (True,), action_dim: int = 4, cameras: tuple[str, ...] = ("front",),
                    image_size: int = 64, env_control: bool = False, seed: int = 0, prefix: str = "demo-run",
                    action_spec: dict[str, Any] | None = None, control_hz: float = 10.0,
                    video_cameras: tuple[str, ...] = (), privileged_attr: bool = True) -> list[Path]:
    """Write ``runs`` run directories under ``root``; returns their paths.

    ``successes`` cycles over episodes; ``action_spec`` overrides ActionSpec fields in
    ``run.json`` (to build runs that must not be exported together); ``cameras`` are kept
    in ``demo.hdf5``, ``video_cameras`` written as ``videos/<camera>.mp4``; without
    ``privileged_attr`` the demos do not list their evaluator keys (a pre-convention run).
    """
    paths = []
    for index in range(runs):
        run_id = f"{prefix}-{index:04d}"
        run_dir = write_example_run(root, run_id, seed=seed + index)
        writer = RunWriter.open(run_dir)
        spec = writer.manifest.system.action_spec
        spec.dim, spec.control_hz = action_dim, control_hz
        for key, value in (action_spec or {}).items():
            setattr(spec, key, value)
        writer.write_measurements(measurement_table(steps * episodes, control_hz))
        writer.close("complete")
        write_demo(run_dir, run_id, episodes=episodes, steps=steps, successes=list(successes), action_dim=action_dim,
                   cameras=cameras, image_size=image_size, env_control=env_control, seed=seed + index,
                   control_hz=control_hz, video_cameras=video_cameras, privileged_attr=privileged_attr)
        paths.append(run_dir)
    return paths
