"""``labrecord validate``."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, follow_symlinks_option, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@output_options(csv=False, json_help="Print {\"errors\": [...], \"warnings\": [...]}.")
@click.option("-q", "--quiet", is_flag=True, help="Print errors only, no warnings or summary.")
@follow_symlinks_option
def validate(paths: tuple[str, ...], as_json: bool, quiet: bool) -> None:
    """Check run directories, folders of runs or single files against the schema.

    Exit status: 0 no errors, 1 errors found, 2 unusable arguments.

    \b
    Example:
      labrecord validate runs/
      labrecord validate runs/r0001/events.jsonl --json
    """
    from labrecord.errors import LabrecordError
    from labrecord.validation import validate_paths

    from labrecord.validation.checkpoints import check_folder
    from labrecord.validation.pairs import check_answer_changing_pairs

    try:
        report = validate_paths(list(paths))
    except LabrecordError as error:
        raise click.UsageError(str(error)) from error
    for path in paths:
        check_answer_changing_pairs(Path(path), report)
        check_folder(Path(path), report)
    if as_json:
        echo_json(report.to_json())
    else:
        for finding in report.errors:
            click.echo(f"error: {finding}")
        if not quiet:
            for finding in report.warnings:
                click.echo(f"warning: {finding}")
            click.echo(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)", err=True)
    sys.exit(0 if report.ok else 1)
