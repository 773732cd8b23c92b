"""``labrecord rxn package`` and ``labrecord rxn collect`` (registered by ``labrecord/cli/rxn.py``)."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json


@click.command("package", context_settings=CONTEXT_SETTINGS)
@click.argument("figures_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--gold", "gold", required=True, type=click.Path(exists=True), help="Gold documents (file or folder).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the task packages.")
@click.option("--agent-timeout-s", type=float, default=3600.0, show_default=True, help="Time limit of a system run.")
@click.option("--verifier-timeout-s", type=float, default=600.0, show_default=True, help="Time limit of the verifier.")
@click.option("--cpus", type=int, default=1, show_default=True, help="CPUs of a task container.")
@click.option("--memory-mb", type=int, default=4096, show_default=True, help="Memory of a task container.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def package(figures_dir: str, gold: str, out_dir: str, agent_timeout_s: float, verifier_timeout_s: float, cpus: int,
            memory_mb: int, as_json: bool) -> None:
    """Write one Harbor-layout task folder per gold figure.

    The system sees instruction.md and the container of environment/ (pinned chemistry
    stack and the figure); task.toml, tests/ (reference and scorer) and solution/ stay
    with the harness.

    \b
    Example:
      labrecord rxn render reactions.smi --out figures/
      labrecord rxn package figures/ --gold figures/ --out tasks/
      labrecord rxn collect tasks/ --out answers/ --system my-agent
      labrecord rxn score --gold figures/ --pred answers/
    """
    from labrecord.chemdata.benchmark_tasks import package_tasks
    from labrecord.safeio import check_apart

    check_apart(out_dir, [figures_dir, gold], what="--out")

    summary = package_tasks(figures_dir, gold, out_dir, agent_timeout_s=agent_timeout_s,
                            verifier_timeout_s=verifier_timeout_s, cpus=cpus, memory_mb=memory_mb)
    if as_json:
        echo_json(summary)
        return
    click.echo(f"wrote {len(summary['tasks'])} task packages to {out_dir}")
    if summary["images_without_gold"]:
        click.echo(f"warning: {len(summary['images_without_gold'])} image(s) without a gold record were not packaged: "
                   f"{', '.join(summary['images_without_gold'][:5])}", err=True)


@click.command("collect", context_settings=CONTEXT_SETTINGS)
@click.argument("tasks_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the answer records.")
@click.option("--system", default="system", show_default=True, help="System name written in every record.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def collect(tasks_dir: str, out_dir: str, system: str, as_json: bool) -> None:
    """Gather each task's answer (TASK/run/answer.json, TASK/run/status.json) as records.

    Every task gives one record: a timeout, tool error, malformed or missing answer keeps
    the figure with zero credit and its failure status, and an unreadable run file marks
    only its own figure malformed.  A task whose figure id is missing or not a safe file
    name (letters, digits, . _ -) is refused: no record, a line on stderr, exit 1.

    \b
    Example:
      labrecord rxn collect tasks/ --out answers/ --system my-agent
      labrecord rxn score --gold figures/ --pred answers/
      labrecord rxn judge --gold figures/ --pred answers/ --out judgments/ \\
          --model-endpoint http://127.0.0.1:8000/v1 --model judge-vl
    """
    from labrecord.chemdata.benchmark_tasks import collect_answers
    from labrecord.safeio import check_apart

    check_apart(out_dir, [tasks_dir], what="--out")

    summary = collect_answers(tasks_dir, out_dir, system=system)
    if as_json:
        echo_json(summary)
    else:
        statuses = ", ".join(f"{k} {v}" for k, v in summary["status"].items())
        click.echo(f"collected {summary['figures']} answers ({statuses}) into {out_dir}")
        for entry in summary["refused"]:
            click.echo(f"refused {entry['task']}: {entry['error']}", err=True)
    if summary["refused"]:
        raise click.ClickException(f"{len(summary['refused'])} task(s) refused (no record written); see above"
                                   if not as_json else f"{len(summary['refused'])} task(s) refused (no record written)")
