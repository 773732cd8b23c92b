"""``labrecord study``: diagnostic studies run in the embedded simulator."""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options, progress

#: the scripted weighing systems a study runs (labrecord.sim.policies.POLICIES)
SCRIPTED = ["reference", "clumsy", "fixed-preference", "random", "noisy-localizer"]


def executor_options(func: Any) -> Any:
    """``--executor local|ray`` and ``--ray-address``: where the episodes run (labrecord.parallel.map)."""
    func = click.option("--ray-address", default=None,
                        help="Ray cluster address (default: RAY_ADDRESS, else a local instance of --workers CPUs).")(func)
    return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="local processes, or Ray tasks (the [ray] extra).")(func)


@click.group(context_settings=CONTEXT_SETTINGS)
def study() -> None:
    """Run diagnostic studies (matched Oracle pairs from verified checkpoints) in the simulator.

    \b
    Example:
      labrecord study oracle weighing --policy fixed-preference --support decision:replace --instances 16 --out runs/
    """


@study.group(context_settings=CONTEXT_SETTINGS)
def oracle() -> None:
    """Matched Oracle pairs: base and supported branches from one verified checkpoint.

    \b
    Example:
      labrecord study oracle weighing --policy fixed-preference --support decision:replace --instances 16 --out runs/
    """


@oracle.command(context_settings=CONTEXT_SETTINGS)
@click.option("--policy", type=click.Choice(SCRIPTED),
              default="reference", show_default=True, help="A scripted system (its state is checkpointable).")
@click.option("--support", "supports", multiple=True, required=True, metavar="SITE:MODE",
              help="A support: sites semantic|decision|geometry|skill, modes assist|replace.  Repeatable: each "
                   "is a matched pair; two at different sites also run their joint branch (interaction contrast).  "
                   "Built: semantic:assist, decision:assist, decision:replace, skill:replace, geometry:assist, "
                   "geometry:replace.")
@click.option("--denomination", type=click.Choice(["w10", "w20", "w50", "w100"]), default=None,
              help="Standard the fixed-preference policy always transfers (default w50).")
@click.option("--instances", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Instances in parallel processes.")
@executor_options
@click.option("--verify-periods", type=click.IntRange(min=1), default=10, show_default=True,
              help="Control periods re-stepped from each checkpoint to verify it.")
@output_options(csv=False, json_help="Print the study summary (compatibility, checkpoints, delivery, agreement, substitution share).")
def weighing(policy: str, supports: tuple[str, ...], denomination: str | None, instances: int, seed: int, out_dir: str,
             workers: int, executor: str, ray_address: str | None, verify_periods: int, as_json: bool) -> None:
    """Feedback weighing (basic condition): base + supported run folders, checkpoints and populations under --out.

    \b
    Example:
      labrecord study oracle weighing --policy fixed-preference --support decision:replace --instances 16 --seed 0 --out runs/
      labrecord study oracle weighing --policy random --support decision:assist --out runs/
      labrecord study oracle weighing --policy reference --support semantic:assist --support decision:replace --out runs/
      labrecord study oracle weighing --policy noisy-localizer --support geometry:replace --instances 8 --out runs/
      labrecord score runs/            # gain.* (Δ), agreement, substitution_share, interaction.*
    """
    from labrecord.sim.study import parse_support, run_oracle_study

    parsed = [parse_support(s) for s in supports]
    options = {"denomination": denomination} if denomination and policy == "fixed-preference" else {}
    with progress(instances, f"oracle study / {policy}") as advance:
        summary = run_oracle_study(out_dir, policy, parsed, instances, seed, workers, progress=advance,
                                   verify_periods=verify_periods, executor=executor, address=ray_address, **options)
    if as_json:
        echo_json(summary)
        return
    rows = []
    for key, entry in summary["supports"].items():
        if entry["status"] != "compatible":
            rows.append((key, "not compatible", "", "", "", "", entry["reason"]))
            continue
        agreement, share = entry.get("agreement"), entry.get("substitution_share")
        rows.append((key, "compatible", f"{entry['started']}/{entry['pairs']}", entry["delivered"],
                     "" if agreement is None else f"{agreement:.0%}", "" if share is None else f"{share:.0%}", ""))
    echo_table(("support", "status", "branches started", "delivered", "agreement", "substitution share", "note"), rows,
               title=f"{summary['population']}: {summary['checkpoints_verified']}/{summary['instances']} checkpoints verified")
    click.echo(f"wrote runs, checkpoints/ and populations/{summary['population']}.jsonl under {out_dir}; "
               f"`labrecord score {out_dir}` reports gain.* (Δ), delivery, agreement, substitution_share, interaction.*")


@study.group(context_settings=CONTEXT_SETTINGS)
def pairs() -> None:
    """Answer-changing pairs (B) for P_state: two instances whose only difference changes the legal answer.

    \b
    Example:
      labrecord study pairs weighing --policy fixed-preference --pairs 8 --seed 0 --out runs/
    """


@pairs.command("weighing", context_settings=CONTEXT_SETTINGS)
@click.option("--policy", type=click.Choice(SCRIPTED),
              default="reference", show_default=True)
@click.option("--denomination", type=click.Choice(["w10", "w20", "w50", "w100"]), default=None,
              help="Standard the fixed-preference policy always transfers (default w50).")
@click.option("--pairs", "n_pairs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@executor_options
@output_options(csv=False, json_help='Print {"population", "policy", "seed", "pairs", "runs"}.')
def pairs_weighing(policy: str, denomination: str | None, n_pairs: int, seed: int, out_dir: str, workers: int,
                   executor: str, ray_address: str | None, as_json: bool) -> None:
    """Feedback weighing (basic): per pair, the drawn instance and its partner whose sample mass needs the next standard.

    \b
    Example:
      labrecord study pairs weighing --policy fixed-preference --pairs 8 --seed 0 --out runs/
      labrecord score runs/            # P_state over the registered pairs
    """
    from labrecord.sim.study import run_pairs_study

    options = {"denomination": denomination} if denomination and policy == "fixed-preference" else {}
    with progress(2 * n_pairs, f"answer-changing pairs / {policy}") as advance:
        summary = run_pairs_study(out_dir, policy, n_pairs, seed, workers, progress=advance, executor=executor,
                                  address=ray_address, **options)
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"wrote {len(summary['runs'])} run(s) and populations/{summary['population']}.jsonl under {out_dir}; "
                   f"`labrecord score {out_dir}` reports P_state")


@study.group("fixed-starts", context_settings=CONTEXT_SETTINGS)
def fixed_starts() -> None:
    """Fixed-subgoal starts (K) for E_fixed: the correct subgoal supplied, physical execution observed.

    \b
    Example:
      labrecord study fixed-starts weighing --policy reference --starts 8 --seed 0 --out runs/
    """


@fixed_starts.command("weighing", context_settings=CONTEXT_SETTINGS)
@click.option("--policy", type=click.Choice(SCRIPTED),
              default="reference", show_default=True)
@click.option("--starts", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@executor_options
@output_options(csv=False, json_help='Print {"population", "policy", "seed", "starts", "runs"}.')
def fixed_starts_weighing(policy: str, starts: int, seed: int, out_dir: str, workers: int, executor: str,
                          ray_address: str | None, as_json: bool) -> None:
    """Feedback weighing (basic): one run per registered fixed start, its subgoal add:<goal> given to the system.

    \b
    Example:
      labrecord study fixed-starts weighing --policy reference --starts 8 --seed 0 --out runs/
      labrecord score runs/            # E_fixed over the registered starts
    """
    from labrecord.sim.study import run_fixed_starts_study

    with progress(starts, f"fixed-subgoal starts / {policy}") as advance:
        summary = run_fixed_starts_study(out_dir, policy, starts, seed, workers, progress=advance, executor=executor,
                                         address=ray_address)
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"wrote {len(summary['runs'])} run(s) and populations/{summary['population']}.jsonl under {out_dir}; "
                   f"`labrecord score {out_dir}` reports E_fixed")
