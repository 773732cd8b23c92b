"""``labrecord export hdf5``: merge the runs' demonstrations into one robomimic-layout file.

Accepted demos are copied group by group (h5py ``copy``: the arrays are not decoded) into
``data/demo_<k>`` in run order; their diagnostics go to ``diagnostics/demo_<k>``.  The
manifest lists every attempt of every run, accepted or not, with the reason it was left
out.  ``mask/train`` and ``mask/valid`` hold the seeded split of the accepted demos and
carry the acceptance rule as attributes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from labrecord.demos import Attempt, demo_name, finish_file, split_masks
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path

from labrecord.exporters.selection import Selection, check_output, check_same_obs, select


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
                valid_ratio: float = 0.1, seed: int = 0, overwrite: bool = False) -> ExportSummary:
    """Write the merged file; nothing is written when the selection is empty or refused."""
    import h5py

    out = check_output(out, overwrite)
    if out.is_dir():
        raise LabrecordError(f"{out}: is a directory; --out names the .hdf5 file to write")
    selection = select(runs_dir, accept, valid_ratio=valid_ratio, seed=seed)
    check_same_obs(selection)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp, h5py.File(tmp, "w") as handle:
        frames = _copy_demos(handle, selection)
        attempts = _manifest(selection)
        masks = split_masks([(a.export_name, a.success, a.split) for a in selection.accepted])
        rule = {"rule": accept, "valid_ratio": valid_ratio, "seed": seed}
        finish_file(handle, merged_env_args(selection), len(selection.accepted), frames, masks, rule, attempts)
    return ExportSummary(out, len(selection.accepted), frames, len(selection.attempts),
                         len(masks["train"]), len(masks["valid"]))


def _copy_demos(handle: Any, selection: Selection) -> int:
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
                src.copy(src[f"data/{row.demo}"], data, name=row.export_name)
                data[row.export_name].attrs["source_demo"] = row.demo
                data[row.export_name].attrs["split"] = row.split
                if f"diagnostics/{row.demo}" in src:
                    src.copy(src[f"diagnostics/{row.demo}"], diagnostics, name=row.export_name)
                frames += int(data[row.export_name].attrs["num_samples"])
    return frames


def _manifest(selection: Selection) -> list[Attempt]:
    return [Attempt(attempt=i, run_id=row.run_id, episode=row.episode, demo=row.export_name, num_samples=row.num_samples,
                    success=row.success, reason=row.reason, recovered=row.recovered,
                    extra={"source_demo": row.demo, "accepted": row.accepted, "split": row.split, "note": row.note,
                           "run_status": row.status})
            for i, row in enumerate(selection.attempts)]
