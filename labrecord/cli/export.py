"""``labrecord export``: demonstrations for training (LeRobot, robomimic HDF5, Parquet)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, output_options

F = TypeVar("F", bound=Callable[..., Any])

ACCEPT_HELP = ("Which attempts to export: 'success', 'all', or one boolean SQL expression over run_id, episode, "
               "demo, num_samples, success, reason, recovered, status, family, task_id, condition, system, "
               "system_kind, intervention, branch (comparisons, AND/OR/NOT, IS NULL, IN, BETWEEN, LIKE, CASE, "
               "casts and a few string and number functions; no subqueries or other functions).")


def selection_options(func: F) -> F:
    """RUNS_DIR, --accept, --overwrite and --json, shared by every export."""
    func = output_options(csv=False, json_help="Print the summary as JSON.")(func)
    func = click.option("--overwrite", is_flag=True, help="Replace an existing output.")(func)
    func = click.option("--accept", default="success", show_default=True, help=ACCEPT_HELP)(func)
    func = click.argument("runs_dir", type=click.Path(exists=True, file_okay=False))(func)
    return func


def _with_symlink_option(group: click.Group) -> None:
    """Every export reads run folders: each gets ``--follow-symlinks``."""
    from labrecord.cli.common import follow_symlinks_option

    for command in group.commands.values():
        wrapped = follow_symlinks_option(command.callback)  # type: ignore[arg-type,type-var]
        command.params.extend(p for p in getattr(wrapped, "__click_params__", []) if p.name == "follow_symlinks")
        command.callback = wrapped


def parse_split(text: str) -> float:
    """``train=0.9`` (or ``train=0.9,valid=0.1``) -> the valid ratio, 0.1."""
    shares: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            shares[name.strip()] = float(value)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not NAME=FRACTION", param_hint="--split") from None
        if not sep or name.strip() not in ("train", "valid"):
            raise click.BadParameter(f"{part!r}: split names are train and valid", param_hint="--split")
    train = shares.get("train", 1.0 - shares.get("valid", 0.0))
    valid = shares.get("valid", 1.0 - train)
    if not 0.0 < train <= 1.0 or abs(train + valid - 1.0) > 1e-9:
        raise click.BadParameter(f"{text!r}: train must be in (0, 1] and train + valid = 1", param_hint="--split")
    return valid


def env_state_option(func: F) -> F:
    """--env-state, shared by every export (training-facing data is proprioception only without it)."""
    return click.option("--env-state", is_flag=True,
                        help="Also export the evaluator state (object poses, display reading), marked privileged.")(func)


def camera_options(func: F) -> F:
    """--cameras, --image-size and --env-state, shared by the exports that carry images."""
    func = click.option("--image-size", default=None, metavar="N|HxW",
                        help="Resize every exported camera to N x N (or H x W) pixels.")(func)
    func = click.option("--cameras", default=None, metavar="NAME,NAME",
                        help="Cameras to export (default: every camera the runs recorded).")(func)
    return env_state_option(func)


def camera_list(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def report(summary: Any, as_json: bool, unit: str) -> None:
    if as_json:
        echo_json(summary.to_json())
        return
    click.echo(f"wrote {summary.demos} {unit} ({summary.frames} frames) to {summary.out}: "
               f"train {summary.train}, valid {summary.valid}; {summary.attempts} attempt(s) in the manifest")


@click.group(context_settings=CONTEXT_SETTINGS)
def export() -> None:
    """Export demonstrations for training.

    \b
    Example:
      labrecord export hdf5 runs/ --out demos.hdf5 --valid-ratio 0.1
      labrecord export lerobot runs/ --out datasets/weighing --repo-id local/weighing
      labrecord export parquet runs/ --out flat/
    """


@export.command(context_settings=CONTEXT_SETTINGS)
@selection_options
@click.option("--out", required=True, type=click.Path(), help="Dataset directory to create.")
@click.option("--repo-id", default=None, help="LeRobot repo id (default: local/<out folder name>).")
@click.option("--split", "split", default="train=0.9", show_default=True, help="Share of accepted demos for training.")
@click.option("--seed", default=0, show_default=True, help="Seed of the train/valid assignment.")
@click.option("--env-frames", type=click.Choice(["split", "keep"]), default="split", show_default=True,
              help="Frames where the environment was in control: 'split' cuts episodes there, "
                   "'keep' keeps them with a policy_in_control feature.")
@click.option("--codec", default="libsvtav1", show_default=True, help="Video codec (one lerobot accepts).")
@camera_options
def lerobot(runs_dir: str, accept: str, overwrite: bool, as_json: bool, out: str, repo_id: str | None, split: str,
            seed: int, env_frames: str, codec: str, cameras: str | None, image_size: str | None,
            env_state: bool) -> None:
    """Write a LeRobot v3 dataset through lerobot's own API (needs the [lerobot] extra, Python >= 3.12).

    \b
    Example:
      labrecord export lerobot runs/ --out datasets/weighing --repo-id local/weighing \\
          --accept success --split train=0.9 --cameras front,wrist --image-size 96
      python -c "from lerobot.datasets import LeRobotDataset; \\
          print(LeRobotDataset('local/weighing', root='datasets/weighing'))"
    """
    from pathlib import Path

    from labrecord.exporters.lerobot import export_lerobot

    summary = export_lerobot(runs_dir, out, repo_id=repo_id or f"local/{Path(out).name}", accept=accept,
                             valid_ratio=parse_split(split), seed=seed, env_frames=env_frames, overwrite=overwrite,
                             codec=codec, cameras=camera_list(cameras), image_size=image_size, env_state=env_state)
    report(summary, as_json, "episodes")


@export.command(context_settings=CONTEXT_SETTINGS)
@selection_options
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="HDF5 file to create.")
@click.option("--valid-ratio", default=0.1, show_default=True, type=float, help="Share of accepted demos in mask/valid.")
@click.option("--seed", default=0, show_default=True, help="Seed of the train/valid assignment.")
@click.option("--images", is_flag=True, help="Add camera images as robomimic obs keys <camera>_image (uint8 N x H x W x 3).")
@camera_options
def hdf5(runs_dir: str, accept: str, overwrite: bool, as_json: bool, out: str, valid_ratio: float, seed: int,
         images: bool, cameras: str | None, image_size: str | None, env_state: bool) -> None:
    """Merge the runs' demo.hdf5 files into one robomimic-layout file.

    \b
    Example:
      labrecord export hdf5 runs/ --out demos.hdf5 --accept success --valid-ratio 0.1 --seed 0
      labrecord export hdf5 runs/ --out weighing.hdf5 --accept "family = 'weighing' AND num_samples > 50"
      labrecord export hdf5 runs/ --out images.hdf5 --images --cameras front,wrist --image-size 84
    """
    from labrecord.exporters.hdf5 import export_hdf5

    summary = export_hdf5(runs_dir, out, accept=accept, valid_ratio=valid_ratio, seed=seed, overwrite=overwrite,
                          images=images, cameras=camera_list(cameras), image_size=image_size, env_state=env_state)
    report(summary, as_json, "demos")


@export.command(context_settings=CONTEXT_SETTINGS)
@selection_options
@click.option("--out", required=True, type=click.Path(), help="Directory to create.")
@env_state_option
def parquet(runs_dir: str, accept: str, overwrite: bool, as_json: bool, out: str, env_state: bool) -> None:
    """Write attempts, steps, events and measurements as Parquet files.

    The steps table holds proprioception only; --env-state adds the evaluator state as
    env_state.<key> columns, marked privileged.

    \b
    Example:
      labrecord export parquet runs/ --out flat/
      labrecord export parquet runs/ --out flat-privileged/ --env-state
      duckdb -c "SELECT run_id, count(*) FROM 'flat/steps.parquet' GROUP BY run_id"
    """
    from labrecord.exporters.parquet import export_parquet

    summary = export_parquet(runs_dir, out, accept=accept, overwrite=overwrite, env_state=env_state)
    report(summary, as_json, "demos")


_with_symlink_option(export)
