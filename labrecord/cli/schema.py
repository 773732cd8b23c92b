"""``labrecord schema export | check``."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, output_options


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
@output_options(csv=False, json_help='Print {"written": [PATH, ...]}.')
def export_cmd(out: str, as_json: bool) -> None:
    """Write schemas/*.schema.json from the models.

    \b
    Example:
      labrecord schema export --out schemas/
    """
    from labrecord.schema_export import export_schemas

    written = [str(path) for path in export_schemas(out)]
    if as_json:
        echo_json({"written": written})
        return
    for path in written:
        click.echo(path)


@schema.command("check", context_settings=CONTEXT_SETTINGS)
@click.option("--out", default="schemas", show_default=True, type=click.Path(file_okay=False))
@output_options(csv=False, json_help='Print {"up_to_date": true} (a drift is an error, exit 1).')
def check_cmd(out: str, as_json: bool) -> None:
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
    echo_json({"up_to_date": True}) if as_json else click.echo("schemas are up to date")
