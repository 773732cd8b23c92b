"""``labrecord import``."""
from __future__ import annotations

import sys

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options, progress

KIND_NAMES = ("robomimic", "isaaclab", "lerobot", "vla-eval", "lerobot-eval")


@click.command(name="import", context_settings=CONTEXT_SETTINGS)
@click.argument("kind", type=click.Choice(KIND_NAMES))
@click.argument("path", type=click.Path(exists=True))
@click.option("--threads", type=click.IntRange(min=1), default=4, show_default=True,
              help="Runs written at once (their file creations overlap).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write the run directories into.")
@click.option("--family", default=None, help="Task family whose contract's measurement columns the state streams map to.")
@click.option("--control-hz", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Control rate, when the source does not state it.")
@click.option("--system", default=None, help="Name of the system that acted (unknown if not given).")
@click.option("--system-kind", type=click.Choice(("vla", "agent", "scripted", "human")), default=None,
              help="Kind of that system (unknown if not given).")
@click.option("--start-seed", type=int, default=None,
              help="lerobot-eval: the --seed the evaluation ran with (episode k of each task ran with seed "
                   "START+k); lerobot >= 0.4 does not write it, so without it the seeds stay unknown.")
@click.option("--instance", "instance_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON file: the task instance the episodes ran on, as the family's task.variant "
                   "(docs/contracts.md), with an optional \"condition\". With --family and --control-hz it "
                   "lets the replay audit check each outcome the source states.")
@output_options(csv=False, json_help="Print the summary as JSON.")
def import_(kind: str, path: str, threads: int, out: str, family: str | None, control_hz: float | None, system: str | None,
            system_kind: str | None, start_seed: int | None, instance_file: str | None, as_json: bool) -> None:
    """Import another tool's episodes as run directories: one run per episode.

    KIND is the source's layout: robomimic (HDF5 data/demo_k), isaaclab (the Isaac Lab
    recorder's HDF5), lerobot (a LeRobot v3 dataset folder, read by lerobot itself:
    Python 3.12 with lerobot installed), vla-eval (a vla-eval run's output folder or its
    recording-<eval_id>.sqlite; its work queue is the episode set, so a crashed shard's
    episodes show as missing) or lerobot-eval (a lerobot-eval run's --output_dir or its
    eval_info.json; no lerobot needed).  Each run names its source, the record and a content hash; what the
    source does not state stays null, episodes without a recorded outcome are unresolved,
    and runs without a measurement stream are scored unaudited.  Importing again leaves
    unchanged runs alone.  The source's episode set is registered as a population
    (OUT/populations/), so a record that could not be imported counts as missing.
    A malformed record prints one Error: line; the others still import (exit status 1).

    \b
    Example:
      labrecord import isaaclab dataset.hdf5 --out runs/
      labrecord score runs/
      labrecord import robomimic low_dim.hdf5 --out runs/ --family rack --control-hz 20 --json
      labrecord import lerobot datasets/weighing --out runs/
      labrecord import vla-eval results/ --out runs/
      labrecord import lerobot-eval outputs/eval/pusht --out runs/ --start-seed 1000
      labrecord import isaaclab rack.hdf5 --out runs/ --family rack --control-hz 10 --instance rack.json
    """
    from labrecord.imports import ImportOptions, open_source
    from labrecord.imports.runs import import_records
    from labrecord.safeio import check_apart

    check_apart(out, [path], what="--out")
    instance = None if instance_file is None else _read_instance(instance_file, family)
    options = ImportOptions(family=family, control_hz=control_hz, system=system, system_kind=system_kind,
                            start_seed=start_seed, instance=instance, threads=threads)
    with open_source(kind, path, options) as source:
        with progress(len(source.records), "import") as advance:
            summary = import_records(source, out, options, progress=advance)
    if as_json:
        echo_json(summary.to_json())
    else:
        echo_table(("record", "run", "status", "outcome", "measurements", "note"),
                   [(r.record, r.run_id or "", r.status, r.outcome or "", r.measurements or "",
                     "" if r.status == "error" else r.message or "") for r in summary.rows],
                   title=f"{kind} {path} -> {out}")
        counts = summary.counts()
        click.echo(f"{counts['imported']} imported, {counts['unchanged']} unchanged, {counts['error']} failed, "
                   f"{counts['missing']} missing; "
                   f"population {summary.population}", err=True)
    for message in summary.errors:
        click.echo(f"Error: {message}", err=True)
    sys.exit(1 if summary.errors else 0)


def _read_instance(path: str, family: str | None) -> dict[str, object]:
    """The ``--instance`` file, checked by the family's contract as the audit will read it."""
    import msgspec

    from labrecord.errors import LabrecordError
    from labrecord.imports.runs import split_instance
    from labrecord.models import Task
    from labrecord.safeio import decode_json, read_bounded
    from labrecord.scorers.contracts import families, get_contract

    if family is None or family not in families():
        raise LabrecordError(f"{path}: --instance needs --family naming one of {sorted(families())}")
    value = decode_json(read_bounded(path, 1 << 20), path)
    if not isinstance(value, dict):
        raise LabrecordError(f"{path}: expected a JSON object (the task instance), got {type(value).__name__}")
    condition, variant = split_instance(value)
    try:
        task = msgspec.convert({"family": family, "task_id": "import", "version": "unknown", "condition": condition,
                                "variant": variant}, Task)
        get_contract(family).instance_from_task(task)
    except (LabrecordError, msgspec.ValidationError) as error:
        raise LabrecordError(f"{path}: {error}") from error
    return value
