"""``labrecord validate``: check run directories, folders of runs, logs and populations."""
from __future__ import annotations

import os
from pathlib import Path

from labrecord.errors import LabrecordError
from labrecord.measurements import FAMILY_COLUMNS
from labrecord.rundir import EVENTS_FILE, MEASUREMENTS_FILE, POPULATIONS_DIR, RUN_FILE, find_run_dirs, is_run_dir
from labrecord.safeio import excerpt, link_problem
from labrecord.validation.findings import Finding, Report
from labrecord.validation.files import (
    RUN_FILE_VALIDATORS, RunContext, validate_population_file,
)

__all__ = ["Finding", "Report", "validate_paths", "validate_run", "validate_folder"]


def validate_run(run_dir: Path, report: Report | None = None) -> tuple[Report, RunContext]:
    """Validate every file of one run directory and their cross-references.

    Nothing in the folder can stop the check: a link, a device, an oversized or unreadable
    file is one finding of this run.
    """
    report = report if report is not None else Report()
    ctx = RunContext()
    problem = link_problem(run_dir)
    if problem is not None:
        report.error(str(run_dir), None, "", problem)
        return report, ctx
    try:
        present = {p.name for p in run_dir.iterdir()}
    except OSError as error:
        report.error(str(run_dir), None, "", f"cannot list the run directory: {error.strerror}")
        return report, ctx
    for name in sorted(present):
        problem = link_problem(run_dir / name)
        if problem is not None:
            report.error(str(run_dir / name), None, "", problem)
            present.discard(name)
    if RUN_FILE not in present and not (run_dir / RUN_FILE).is_symlink():
        report.error(str(run_dir / RUN_FILE), None, "", "missing run.json")
    for name, validator in RUN_FILE_VALIDATORS.items():
        if name in present:
            try:
                validator(run_dir / name, report, ctx)
            except (OSError, LabrecordError) as error:
                report.error(str(run_dir / name), None, "", f"unreadable: {excerpt(str(error))}")
    if EVENTS_FILE not in present and not (run_dir / EVENTS_FILE).is_symlink():
        if ctx.interrupted:
            report.warn(str(run_dir / EVENTS_FILE), None, "", "not written: the run was interrupted before its first event")
        else:
            report.error(str(run_dir / EVENTS_FILE), None, "", "missing events.jsonl")
    for name in sorted(present - set(RUN_FILE_VALIDATORS)):
        if not name.startswith("."):
            report.warn(str(run_dir / name), None, "", "file of no registered kind (not checked)")
    declared_none = ctx.document is not None and ctx.document.manifest.evaluation.measurements == "none"
    if declared_none and MEASUREMENTS_FILE in present:
        report.warn(str(run_dir / MEASUREMENTS_FILE), None, "", "present, but run.json declares no measurement stream "
                    "(evaluation.measurements: none): the run is scored unaudited")
    if MEASUREMENTS_FILE not in present and ctx.family in FAMILY_COLUMNS and not declared_none:
        if ctx.interrupted:
            report.warn(str(run_dir / MEASUREMENTS_FILE), None, "", "not written: the run was interrupted before its end")
        elif not (run_dir / MEASUREMENTS_FILE).is_symlink():
            report.warn(str(run_dir / MEASUREMENTS_FILE), None, "",
                        f"missing: family {ctx.family!r} replays its contract from measurements, so the run cannot be audited")
    _cross_check(run_dir, report, ctx)
    return report, ctx


def _cross_check(run_dir: Path, report: Report, ctx: RunContext) -> None:
    if ctx.events is None:
        return
    if ctx.receipts or (run_dir / "observations.jsonl").exists():
        for obs_id, line in ctx.events.obs_ids.items():
            if obs_id not in ctx.receipts:
                report.error(str(run_dir / EVENTS_FILE), line, "opportunity.obs_id", f"observation {obs_id!r} has no delivery receipt in observations.jsonl")
    if ctx.document is not None and run_dir.name != ctx.document.manifest.run_id:
        report.warn(str(run_dir / RUN_FILE), None, "run_id", f"run_id {ctx.document.manifest.run_id!r} differs from its directory name {run_dir.name!r}")


def validate_folder(folder: Path, report: Report | None = None) -> Report:
    """Validate every run below ``folder``, run-id uniqueness and population references."""
    report = report if report is not None else Report()
    seen: dict[str, Path] = {}
    memberships: list[tuple[Path, str, str]] = []
    for run_dir in find_run_dirs(folder):
        _, ctx = validate_run(run_dir, report)
        if ctx.document is None:
            continue
        manifest = ctx.document.manifest
        if manifest.run_id in seen:
            report.error(str(run_dir / RUN_FILE), None, "run_id", f"run_id {manifest.run_id!r} also used by {seen[manifest.run_id]}")
        seen.setdefault(manifest.run_id, run_dir)
        if manifest.evaluation.population is not None:
            population = manifest.evaluation.population
            memberships.append((run_dir / RUN_FILE, population.name, population.instance_id))
    populations = {}
    pop_dir = folder / POPULATIONS_DIR
    problem = link_problem(pop_dir)
    if problem is not None:
        report.error(str(pop_dir), None, "", problem)
    elif pop_dir.is_dir():
        for path in sorted(pop_dir.glob("*.jsonl")):
            info = validate_population_file(path, report)
            populations[info["name"]] = info["instances"]
    if populations:
        for path, name, instance in memberships:
            if name not in populations:
                report.error(str(path), None, "evaluation.population.name", f"population {name!r} has no registry in {pop_dir}")
            elif instance not in populations[name]:
                report.error(str(path), None, "evaluation.population.instance_id", f"instance {instance!r} is not registered in population {name!r}")
    return report


def _validate_single_file(path: Path, report: Report) -> None:
    if path.parent.name == POPULATIONS_DIR and path.suffix == ".jsonl":
        validate_population_file(path, report)
        return
    validator = RUN_FILE_VALIDATORS.get(path.name)
    if validator is None:
        raise LabrecordError(f"{path}: not a file labrecord validates (run.json, events.jsonl, observations.jsonl, online_scores.jsonl, scores.json, measurements.parquet, demo.hdf5, populations/*.jsonl)")
    ctx = RunContext()
    if path.name != RUN_FILE and (path.parent / RUN_FILE).is_file():
        RUN_FILE_VALIDATORS[RUN_FILE](path.parent / RUN_FILE, Report(), ctx)
    validator(path, report, ctx)


def validate_paths(paths: list[str | os.PathLike[str]]) -> Report:
    """Validate run directories, folders of runs and single files; collect all findings.

    Raises :class:`LabrecordError` for a path that does not exist or that labrecord does
    not know how to validate (a usage problem, not a finding).
    """
    report = Report()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise LabrecordError(f"{path}: no such file or directory")
        if path.is_file():
            _validate_single_file(path, report)
        elif is_run_dir(path) or (path / EVENTS_FILE).exists():
            validate_run(path, report)
        else:
            before = len(report.errors) + len(report.warnings)
            validate_folder(path, report)
            if len(report.errors) + len(report.warnings) == before and not any(
                    is_run_dir(p) for p in path.iterdir() if p.is_dir()) and not (path / POPULATIONS_DIR).is_dir():
                raise LabrecordError(f"{path}: no run directories (folders with run.json) found")
    return report
