"""``labrecord export hdf5``: merge the runs' demonstrations into one robomimic-layout file.

Accepted demos are copied array by array (h5py ``copy``: nothing is decoded) into
``data/demo_<k>`` in run order: actions, rewards, dones, timestamps, the control mask and
the proprioceptive observation keys (:mod:`labrecord.exporters.observations` decides
which); evaluator keys only with ``env_state`` (then listed in the demo's
``privileged_obs``).  ``images`` adds robomimic image observations ``<camera>_image``
(uint8 N×H×W×3) from the run's videos or kept images (:mod:`labrecord.exporters.frames`).
Their diagnostics go to ``diagnostics/demo_<k>``.  The manifest lists every attempt of
every run, accepted or not, with the reason it was left out.  ``mask/train`` and
``mask/valid`` hold the seeded split of the accepted demos and carry the acceptance rule
as attributes.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from labrecord.demos import Attempt, demo_name, finish_file, split_masks
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path

from labrecord.exporters.selection import Selection, check_output, select


@dataclass
class ExportSummary:
    """What an export wrote, for the CLI to print."""

    out: Path
    demos: int
    frames: int
    attempts: int
    train: int
    valid: int

    def to_json(self) -> dict[str, Any]:
        return {"out": str(self.out), "demos": self.demos, "frames": self.frames, "attempts": self.attempts,
                "train": self.train, "valid": self.valid}


def merged_env_args(selection: Selection) -> dict[str, Any]:
    """The first accepted run's env_args, with the export's provenance under ``labrecord``."""
    accepted_runs = list(dict.fromkeys(a.run_id for a in selection.accepted))
    first = dict(selection.runs[accepted_runs[0]].env_args)
    names = sorted({str(selection.runs[r].env_args.get("env_name")) for r in accepted_runs})
    spec = selection.action_spec()
    first["labrecord"] = {**dict(first.get("labrecord") or {}), "env_names": names, "runs": accepted_runs,
                          "action_spec": msgspec.to_builtins(spec), "rule": selection.rule}
    first["labrecord"].pop("run_id", None)
    return first


def export_hdf5(runs_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, accept: str = "success",
                valid_ratio: float = 0.1, seed: int = 0, overwrite: bool = False, images: bool = False,
                cameras: Sequence[str] | None = None, image_size: str | int | None = None,
                env_state: bool = False) -> ExportSummary:
    """Write the merged file; nothing is written when the selection is empty or refused.

    Each demo keeps its proprioceptive observation keys; ``images`` adds
    ``obs/<camera>_image`` (uint8 N×H×W×3) for the chosen ``cameras`` (default all) at
    ``image_size``; ``env_state`` keeps the evaluator keys too, listed in the demo's
    ``privileged_obs`` attribute.
    """
    import h5py

    from labrecord.exporters.frames import FrameSource, parse_image_size, plan_cameras
    from labrecord.exporters.observations import classify, demo_roles

    size = parse_image_size(image_size)
    out = check_output(out, overwrite, runs_dir)
    if out.is_dir():
        raise LabrecordError(f"{out}: is a directory; --out names the .hdf5 file to write")
    if not images and (cameras is not None or size is not None):
        raise LabrecordError("--cameras and --image-size choose the images of --images; pass --images too")
    selection = select(runs_dir, accept, valid_ratio=valid_ratio, seed=seed)
    obs, listed = demo_roles(selection)
    roles = classify(obs, listed)
    plans = plan_cameras(selection, roles.cameras, list(cameras) if cameras is not None else None, size) if images else []
    if images and not plans:
        raise LabrecordError(f"{selection.runs_dir}: --images, but the accepted runs have no camera "
                             "(no videos/<camera>.mp4, no image keys in demo.hdf5)")
    content = DemoContent(roles.proprio + (roles.privileged if env_state else []),
                          roles.privileged if env_state else [],
                          FrameSource(selection, plans, 1.0 / selection.control_hz()))
    out.parent.mkdir(parents=True, exist_ok=True)
    with content.frames, atomic_path(out) as tmp, h5py.File(tmp, "w") as handle:
        frames = _copy_demos(handle, selection, content)
        attempts = _manifest(selection)
        masks = split_masks([(a.export_name, a.success, a.split) for a in selection.accepted])  # type: ignore[misc]  # accepted rows are named
        rule = {"rule": accept, "valid_ratio": valid_ratio, "seed": seed}
        env_args = merged_env_args(selection)
        env_args["labrecord"].update({
            "observations": {**roles.to_json(), "exported_low_dim": content.low_dim,
                             "privileged_obs": content.privileged},
            "cameras": [{**c.to_json(), "obs_key": image_key(c.name)} for c in plans],
            "action_convention": ACTION_CONVENTION})
        finish_file(handle, env_args, len(selection.accepted), frames, masks, rule, attempts)
    return ExportSummary(out, len(selection.accepted), frames, len(selection.attempts),
                         len(masks["train"]), len(masks["valid"]))


ACTION_CONVENTION = ("actions[i] is the command applied right after obs[i] and held for one control period "
                     "(1/control_hz s); its meaning (representation, frame, units, bounds) is action_spec")


def image_key(camera: str) -> str:
    """robomimic's name of a camera's image observation."""
    return f"{camera}_image"


@dataclass
class DemoContent:
    """What each exported demo holds besides actions, rewards, dones and timestamps."""

    low_dim: list[str]
    privileged: list[str]
    frames: Any  # FrameSource


#: per-demo arrays copied as they are (no decoding)
COPIED = ("actions", "rewards", "dones", "control_mask", "timestamps")


def _copy_demos(handle: Any, selection: Selection, content: DemoContent) -> int:
    import h5py

    data = handle.require_group("data")
    diagnostics = handle.require_group("diagnostics")
    frames = 0
    by_run: dict[str, list[Any]] = {}
    for row in selection.accepted:
        by_run.setdefault(row.run_id, []).append(row)
    index = 0
    for run_id, rows in by_run.items():
        source = selection.runs[run_id]
        with h5py.File(source.demo_path, "r") as src:  # type: ignore[arg-type]
            for row in rows:
                row.export_name = demo_name(index)
                index += 1
                src_group = src[f"data/{row.demo}"]
                group = data.create_group(row.export_name)
                for key, value in src_group.attrs.items():
                    group.attrs[key] = value
                for name in COPIED:
                    if name in src_group:
                        src.copy(src_group[name], group, name=name)
                for folder in ("obs", "next_obs"):
                    target = group.create_group(folder)
                    for key in content.low_dim:
                        src.copy(src_group[f"{folder}/{key}"], target, name=key)
                if content.frames.cameras:
                    camera_obs = {c.name: src_group[f"obs/{c.name}"][()] for c in content.frames.cameras
                                  if c.source == "demo"}
                    for camera, images in content.frames.frames(run_id, row.demo, camera_obs).items():
                        _write_images(group, image_key(camera), images)
                group.attrs["source_demo"] = row.demo
                group.attrs["split"] = row.split
                if content.privileged:
                    group.attrs["privileged_obs"] = json.dumps(content.privileged)
                elif "privileged_obs" in group.attrs:
                    del group.attrs["privileged_obs"]
                if f"diagnostics/{row.demo}" in src:
                    src.copy(src[f"diagnostics/{row.demo}"], diagnostics, name=row.export_name)
                frames += int(group.attrs["num_samples"])
    return frames


def _write_images(group: Any, key: str, images: np.ndarray) -> None:
    """``obs/<key>`` and ``next_obs/<key>``: the next frame, the last one repeated (the
    recorder keeps no frame after the final step)."""
    chunks = (1, *images.shape[1:])
    group["obs"].create_dataset(key, data=images, chunks=chunks)
    following = np.concatenate([images[1:], images[-1:]]) if len(images) else images
    group["next_obs"].create_dataset(key, data=following, chunks=chunks)


def _manifest(selection: Selection) -> list[Attempt]:
    return [Attempt(attempt=i, run_id=row.run_id, episode=row.episode, demo=row.export_name, num_samples=row.num_samples,
                    success=row.success, reason=row.reason, recovered=row.recovered,
                    extra={"source_demo": row.demo, "accepted": row.accepted, "split": row.split,
                           "note": f"exported as {row.export_name} ({row.split})" if row.accepted else row.note,
                           "run_status": row.status})
            for i, row in enumerate(selection.attempts)]
