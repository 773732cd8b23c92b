"""The ``labrecord`` command line.

Library first: every command is a few lines in its own module under ``labrecord/cli/``
that parse options and call a library function.  Commands are imported lazily, so
``labrecord --help`` and ``import labrecord`` never load a wing or an extra.
"""
from __future__ import annotations

import sys
from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS
from labrecord.cli.lazy import LazyGroup
from labrecord.errors import LabrecordError

#: command name -> (module under labrecord.cli, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("validate", "validate", "Check run directories, logs and populations against the schema."),
    "schema": ("schema", "schema", "Export or check the JSON Schema files."),
    "ingest": ("ingest", "ingest", "Load run directories into a DuckDB corpus."),
    "sql": ("sql", "sql", "Run SQL over a corpus."),
    "snapshot": ("snapshot", "snapshot", "Write a Hive-partitioned Parquet copy of a corpus."),
    "score": ("score", "score", "Recompute the benchmark metrics from stored runs."),
    "diff": ("diff", "diff", "Explain why two evaluations disagree: paired episodes, McNemar, attribution."),
    "report": ("report", "report", "Write a self-contained HTML report comparing systems."),
    "audit": ("audit", "audit", "Replay measurements through the task contract and check the events."),
    "sim": ("sim", "sim", "Run episodes in the embedded MuJoCo simulator."),
    "study": ("study", "study", "Run diagnostic studies (matched Oracle pairs) in the simulator."),
    "demo": ("demo", "demo", "Run a short weighing evaluation end to end on this machine."),
    "export": ("export", "export", "Export demonstrations for training (LeRobot, robomimic HDF5, Parquet)."),
    "import": ("import_", "import_", "Import robomimic or Isaac Lab HDF5 episodes as run directories."),
    "rxn": ("rxn", "rxn", "Reaction records: ingest, score, stats, extract, render."),
}



class CommandLine(LazyGroup):
    """The top-level group: a :class:`LabrecordError` from any command becomes one
    ``Error: …`` line and exit status 1, whether run from a shell or a test runner; so
    does a DuckDB error (a query a locked corpus refused, a damaged corpus file)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LabrecordError as error:
            raise click.ClickException(str(error)) from error
        except OSError as error:
            # an output that cannot be written (a missing folder, /proc, a full disk)
            where = f"{error.filename}: " if error.filename else ""
            raise click.ClickException(f"{where}{error.strerror or error}") from error
        except Exception as error:
            from labrecord.store.corpus import machine_failure

            duckdb = sys.modules.get("duckdb")
            text = str(error).strip()
            first = text.splitlines()[0] if text else type(error).__name__
            if machine_failure(error):
                # DuckDB's own disk and memory failures (a full disk while committing or closing)
                raise click.ClickException(f"the corpus could not be written: {first}") from error
            if duckdb is None or not isinstance(error, duckdb.Error):
                raise
            raise click.ClickException(f"corpus query failed: {first}") from error


@click.group(cls=CommandLine, lazy=COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="labrecord")
def cli() -> None:
    """labrecord: record store and replay scorer for robot-lab runs and reaction records.

    \b
    Example:
      labrecord demo                       # simulate, ingest, score, audit, report
      labrecord validate runs/             # check every run directory
      labrecord score runs/ --json         # recompute the metrics
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``labrecord`` script."""
    try:
        cli.main(args=argv, prog_name="labrecord")
    except BrokenPipeError:
        sys.exit(0)
