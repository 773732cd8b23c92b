"""``labrecord rxn extract`` and ``labrecord rxn render`` (registered by ``labrecord/cli/rxn.py``)."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options, progress


@click.command("extract", context_settings=CONTEXT_SETTINGS)
@click.argument("figures_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the records.")
@click.option("--system", default="labrecord-rules", show_default=True, help="System name written in every record.")
@click.option("--budget-s", type=float, default=300.0, show_default=True,
              help="Wall-clock budget per figure; a stage still running when it is spent is stopped.")
@click.option("--max-pixels", type=int, default=16_000_000, show_default=True,
              help="Refuse a figure of more pixels than this (it fails at 'input').")
@click.option("--readers", default=None, metavar="NAMES",
              help="Structure readers, comma-separated: osra, decimer (default: osra,decimer when the [ocsr] "
                   "extra is installed, else osra).")
@click.option("--tool-timeout-s", type=float, default=120.0, show_default=True, help="Limit for one tool or model call.")
@click.option("--workers", type=int, default=1, show_default=True, help="Local worker processes.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray distributes figures over a Ray cluster (pip install 'labrecord[ray]').")
@click.option("--ray-address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local instance).")
@click.option("--model-endpoint", default=None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", default=None, help="Model name sent to --model-endpoint.")
@click.option("--api-key-env", default=None, help="Environment variable holding the endpoint's API key.")
@click.option("--model-stages", default=None, metavar="STAGES",
              help="Stages the model takes over, comma-separated: layout, recognition, association "
                   "(default: association).")
@click.option("--osra", "osra_command", default="osra", show_default=True, help="osra executable.")
@click.option("--tesseract", "tesseract_command", default="tesseract", show_default=True, help="tesseract executable.")
@output_options(csv=False, json_help="Print the run summary as JSON.")
def extract(figures_dir: str, out_dir: str, system: str, budget_s: float, max_pixels: int, readers: str | None,
            tool_timeout_s: float, workers: int,
            executor: str, ray_address: str | None, model_endpoint: str | None, model: str | None,
            api_key_env: str | None, model_stages: str | None, osra_command: str, tesseract_command: str,
            as_json: bool) -> None:
    """Extract reaction records from a folder of figures (osra, DECIMER, tesseract, rules).

    Writes OUT/<figure_id>.json per figure (status ok | failed | timeout, never skipped)
    and OUT/trajectories/<figure_id>.ndjson with every tool call and model message.

    \b
    Example:
      labrecord rxn render reactions.smi --out figures/
      labrecord rxn extract figures/ --out records/ --workers 2
      labrecord rxn extract figures/ --out records/ --readers osra
      labrecord rxn extract figures/ --out records/ --executor ray
      labrecord rxn extract figures/ --out records/ --model-endpoint http://127.0.0.1:8000/v1 --model qwen-vl
      labrecord rxn extract figures/ --out records/ --model-endpoint http://127.0.0.1:8000/v1 --model qwen-vl \\
          --model-stages layout,recognition
      labrecord rxn score --gold figures/ --pred records/
    """
    from labrecord.chemdata.extract import decimer
    from labrecord.chemdata.extract.endpoint import parse_stages
    from labrecord.chemdata.extract.readers import default_readers, parse_readers
    from labrecord.chemdata.extract.runner import ExtractConfig, list_figures, run_extraction
    from labrecord.errors import LabrecordError

    from labrecord.safeio import check_apart

    check_apart(out_dir, [figures_dir], what="--out")
    if model_stages is not None and not model_endpoint:
        raise LabrecordError("--model-stages needs --model-endpoint and --model")
    try:
        stages = parse_stages(model_stages) if model_stages is not None else ("association",)
    except ValueError as exc:
        raise LabrecordError(f"--model-stages: {exc}") from None
    if readers is None:
        chosen = default_readers()
        if "decimer" not in chosen:
            click.echo(f"note: reading structures with osra only ({decimer.missing_reason()})", err=True)
    else:
        chosen = parse_readers(readers)
    config = ExtractConfig(system=system, budget_s=budget_s, max_pixels=max_pixels, readers=chosen,
                           tool_timeout_s=tool_timeout_s,
                           osra_command=(osra_command,), tesseract_command=(tesseract_command,),
                           model_endpoint=model_endpoint, model=model, api_key_env=api_key_env, model_stages=stages)
    total = len(list_figures(figures_dir))
    with progress(total, "extracting") as advance:
        summary = run_extraction(figures_dir, out_dir, config, workers=workers, executor=executor,
                                 ray_address=ray_address, on_figure=lambda _: advance(1))
    if as_json:
        echo_json(summary)
        return
    rows = [["figures", summary["figures"]], ["reactions", summary["reactions"]]]
    rows += [[f"status {k}", v] for k, v in summary["status"].items()]
    rows += [[f"failures {k}", v] for k, v in summary["failure_kinds"].items()]
    echo_table(["", "count"], rows, title=f"extract -> {out_dir}")


@click.command("render", context_settings=CONTEXT_SETTINGS)
@click.argument("reactions_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for figures and gold records.")
@output_options(csv=False, json_help='Print {"out": DIR, "figures": N}.')
def render(reactions_file: str, out_dir: str, as_json: bool) -> None:
    """Draw reaction figures from reaction SMILES, with the gold record beside each.

    Lines: "REACTANTS>>PRODUCTS [id]", multi-step "A>>B>>C [id]", or a scope
    "@scope-table TEMPLATE_RXN R1=Me,OMe,Cl [id]" ("@scope-grid" draws the products).

    \b
    Example:
      labrecord rxn render reactions.smi --out figures/
      labrecord rxn extract figures/ --out records/
      labrecord rxn score --gold figures/ --pred records/
    """
    from labrecord.chemdata.render import render as render_figures
    from labrecord.safeio import check_apart

    check_apart(out_dir, [reactions_file], what="--out")

    written = render_figures(reactions_file, out_dir)
    if as_json:
        echo_json({"out": out_dir, "figures": len(written)})
    else:
        click.echo(f"wrote {len(written)} figures with gold records to {out_dir}")
