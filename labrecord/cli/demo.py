"""``labrecord demo``."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options, progress
from labrecord.families import FAMILIES
from labrecord.parallel import usable_cpus

_DEFAULT = next(iter(FAMILIES.values()))
_CONDITIONS = list(dict.fromkeys(c for entry in FAMILIES.values() for c in entry.conditions))


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--out", default="labrecord-demo", show_default=True, type=click.Path(file_okay=False),
              help="Folder for runs, corpus, scores and report.")
@click.option("--episodes", default=None, type=click.IntRange(min=1),
              help="Episodes per policy and family (default: the family's demo count, "
                   + ", ".join(f"{name} {entry.demo_episodes}" for name, entry in FAMILIES.items())
                   + f"; {min(entry.demo_episodes for entry in FAMILIES.values())} with --family all).")
@click.option("--family", type=click.Choice([*FAMILIES, "all"]), default=_DEFAULT.name, show_default=True,
              help="Simulated task family, or all of them into one corpus.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--workers", default=None, type=click.IntRange(min=1),
              help="Episodes in parallel processes (default: the CPUs this process may use, "
                   "so a first run finishes sooner; episodes write the same runs on any count).")
@click.option("--condition", type=click.Choice(_CONDITIONS), default=_CONDITIONS[0], show_default=True)
@click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster).")
@click.option("--overwrite", is_flag=True, help="Replace an existing, non-empty --out folder.")
@output_options(csv=False, json_help="Print a JSON summary instead of tables.")
def demo(out: str, episodes: int | None, family: str, seed: int, workers: int | None, condition: str, no_cameras: bool,
         overwrite: bool, as_json: bool) -> None:
    """Run a short evaluation end to end on this machine (one family, or --family all).

    Simulates each family's demo policies in the embedded MuJoCo scenes on
    the same registered instances, validates the runs, ingests them into a DuckDB corpus,
    recomputes the metrics, replays the measurements through the task contract (audit)
    and writes a self-contained HTML report.

    \b
    Example:
      labrecord demo
      labrecord demo --episodes 20 --out demo20 --overwrite
      labrecord demo --family all --no-cameras --out demo-all
    """
    from labrecord.scorers.present import format_ci, format_provisional, format_value
    from labrecord.sim.demo import headline, run_demo

    say = (lambda line: None) if as_json else (lambda line: click.echo(line, err=True))

    @contextlib.contextmanager
    def bar(label: str, total: int) -> Iterator[Callable[[int], None]]:
        with progress(total, label) as advance:
            yield advance

    if workers is None:
        workers = usable_cpus()
    if episodes is None:
        episodes = (min(entry.demo_episodes for entry in FAMILIES.values()) if family == "all"
                    else FAMILIES[family].demo_episodes)
    result = run_demo(out, episodes=episodes, family=family, seed=seed, workers=workers, condition=condition,
                      cameras=not no_cameras, overwrite=overwrite, say=say, progress=bar)
    if as_json:
        echo_json(result.to_json())
        return
    rows = []
    for group in result.groups:
        for name, metric in headline(group).items():
            text = format_provisional(name, group["metrics"], group["coverage"]) or format_value(name, metric)
            rows.append((group["identity"].get("task_id"), group["identity"].get("system_name"), name,
                         text, format_ci(name, metric)))
    echo_table(["task", "system", "metric", "value (num/den)", "95% CI"], rows, title="headline metrics")
    click.echo(f"runs:    {result.runs_dir}")
    click.echo(f"corpus:  {result.db}   (labrecord sql \"SELECT * FROM runs\" --db {result.db})")
    click.echo(f"scores:  {result.scores}")
    click.echo(f"report:  {result.report}")
