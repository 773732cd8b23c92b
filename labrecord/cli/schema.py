"""``labrecord schema export | check``."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS


@click.group(context_settings=CONTEXT_SETTINGS)
def schema() -> None:
    """Export or check the JSON Schema files generated from the typed models.

    \b
    Example:
      labrecord schema export --out schemas/
      labrecord schema check --out schemas/
    """


@schema.command("export", context_settings=CONTEXT_SETTINGS)
@click.option("--out", default="schemas", show_default=True, type=click.Path(file_okay=False))
def export_cmd(out: str) -> None:
    """Write schemas/*.schema.json from the models.

    \b
    Example:
      labrecord schema export --out schemas/
    """
    from labrecord.schema_export import export_schemas

    for path in export_schemas(out):
        click.echo(str(path))


@schema.command("check", context_settings=CONTEXT_SETTINGS)
@click.option("--out", default="schemas", show_default=True, type=click.Path(file_okay=False))
def check_cmd(out: str) -> None:
    """Exit 1 when the schema files differ from the models.

    \b
    Example:
      labrecord schema check --out schemas/
    """
    from labrecord.errors import LabrecordError
    from labrecord.schema_export import drifted_schemas

    drifted = drifted_schemas(out)
    if drifted:
        raise LabrecordError(f"{out}: out of date: {', '.join(drifted)}; run 'labrecord schema export --out {out}'")
    click.echo("schemas are up to date")
