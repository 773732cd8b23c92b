"""``labrecord study``: diagnostic studies run in the embedded simulator.

One command per study and registered family whose entry declares that study
(:func:`labrecord.families.with_study`), built from that entry: its scripted policies,
their options and the supports built on its bench.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options, progress
from labrecord.families import SERVED_POLICIES as SERVED, Family, with_study


def executor_options(func: Any) -> Any:
    """``--executor local|ray`` and ``--ray-address``: where the episodes run (labrecord.parallel.map)."""
    func = click.option("--ray-address", default=None,
                        help="Ray cluster address (default: RAY_ADDRESS, else a local instance of --workers CPUs).")(func)
    return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="local processes, or Ray tasks (the [ray] extra).")(func)


def _examples(lines: list[str]) -> str:
    return "\n\n\b\nExample:\n" + "\n".join("  " + line for line in lines)


def _first(entry: Family) -> str:
    return next(iter(entry.policies))


def _optioned(entry: Family) -> str:
    """A policy with options (its choices are its own), else the first."""
    return next((p.name for p in entry.policies.values() if p.options), _first(entry))


def _supports_text(entry: Family) -> str:
    return ", ".join(f"{site}:{mode}" for site, mode in entry.supports)


def _oracle_example(entry: Family) -> str:
    policy = entry.policies[_optioned(entry)]
    site, mode = next((s for s in entry.supports if s in policy.oracle_inputs), entry.supports[0])
    return (f"labrecord study oracle {entry.name} --policy {policy.name} --support {site}:{mode} "
            "--instances 16 --out runs/")


def _policy_options(entry: Family) -> list[Any]:
    """One ``--<option>`` per keyword of the family's scripted policies."""
    seen: dict[str, Any] = {}
    for policy in entry.policies.values():
        for option in policy.options:
            seen.setdefault(option.name, option)
    return [click.option(f"--{option.name}", type=click.Choice(list(option.choices)), default=None, help=option.help)
            for option in seen.values()]


def _chosen(entry: Family, policy: str, values: dict[str, str | None]) -> dict[str, Any]:
    """The options given for ``policy`` (those it takes), converted."""
    takes = {option.name: option for option in entry.policies[policy].options}
    return {name: takes[name].convert(value) for name, value in values.items() if value is not None and name in takes}


def _placement(workers_help: str) -> list[Any]:
    """``--seed``, ``--out``, ``--workers`` and where the episodes run: every study's options."""
    return [click.option("--seed", type=int, default=0, show_default=True),
            click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True),
            click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help=workers_help),
            executor_options]


def _wrote(summary: dict[str, Any], out_dir: str, metric: str, as_json: bool) -> None:
    """A runs study's summary: as JSON, or one line naming what was written and what to score."""
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"wrote {len(summary['runs'])} run(s) and populations/{summary['population']}.jsonl under "
                   f"{out_dir}; `labrecord score {out_dir}` reports {metric}")


def _decorate(command: Callable[..., None], decorators: list[Any]) -> Callable[..., None]:
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@click.group(context_settings=CONTEXT_SETTINGS)
def study() -> None:
    """Run diagnostic studies (matched Oracle pairs from verified checkpoints) in the simulator."""


@study.group(context_settings=CONTEXT_SETTINGS)
def oracle() -> None:
    """Matched Oracle pairs: base and supported branches from one verified checkpoint."""


@study.group(context_settings=CONTEXT_SETTINGS)
def pairs() -> None:
    """Answer-changing pairs (B) for P_state: two instances whose only difference changes the legal answer."""


@study.group("fixed-starts", context_settings=CONTEXT_SETTINGS)
def fixed_starts() -> None:
    """Fixed-subgoal starts (K) for E_fixed: the correct subgoal supplied, physical execution observed."""


def _oracle_command(entry: Family) -> click.Command:
    def command(policy: str, supports: tuple[str, ...], instances: int, seed: int, out_dir: str, workers: int,
                executor: str, ray_address: str | None, verify_periods: int, as_json: bool, policy_url: str | None,
                profile: str, policy_path: str | None, timeout_s: float, max_time_s: float | None,
                **values: str | None) -> None:
        from labrecord.families import SERVED_POLICIES
        from labrecord.sim.study import parse_support, run_oracle_study

        parsed = [parse_support(s) for s in supports]
        served = None
        if policy in SERVED_POLICIES:
            served = {"url": policy_url, "profile": profile, "path": policy_path, "timeout_s": timeout_s}
        options = _chosen(entry, policy, values) if served is None else {}
        with progress(instances, f"oracle study / {policy}") as advance:
            summary = run_oracle_study(out_dir, policy, parsed, instances, seed, workers, progress=advance,
                                       verify_periods=verify_periods, executor=executor, address=ray_address,
                                       family=entry.name, max_time_s=max_time_s, served=served, **options)
        if as_json:
            echo_json(summary)
            return
        rows = []
        for key, result in summary["supports"].items():
            if result["status"] != "compatible":
                rows.append((key, "not compatible", "", "", "", "", result["reason"]))
                continue
            agreement, share = result.get("agreement"), result.get("substitution_share")
            rows.append((key, "compatible", f"{result['started']}/{result['pairs']}", result["delivered"],
                         "" if agreement is None else f"{agreement:.0%}", "" if share is None else f"{share:.0%}", ""))
        echo_table(("support", "status", "branches started", "delivered", "agreement", "substitution share", "note"),
                   rows, title=f"{summary['population']}: {summary['checkpoints_verified']}/{summary['instances']} "
                               "checkpoints verified")
        click.echo(f"wrote runs, checkpoints/ and populations/{summary['population']}.jsonl under {out_dir}; "
                   f"`labrecord score {out_dir}` reports gain.* (Δ), delivery, agreement, substitution_share, interaction.*")

    (site0, mode0), (site1, mode1) = entry.supports[0], entry.supports[-1]
    command.__doc__ = (f"{entry.title.split(':')[0]} ({entry.study_condition} condition): base + supported run "
                       "folders, checkpoints and populations under --out." + _examples([
                           _oracle_example(entry).replace("--out", "--seed 0 --out"),
                           f"labrecord study oracle {entry.name} --policy {_first(entry)} --support {site0}:{mode0} "
                           f"--support {site1}:{mode1} --out runs/",
                           "labrecord score runs/            # gain.* (Δ), agreement, substitution_share, interaction.*"]))
    decorated = _decorate(command, [
        click.option("--policy", type=click.Choice([*entry.policies, *SERVED]), default=_first(entry),
                     show_default=True, help="A scripted system (its state is checkpointable), or a served policy "
                                             "whose preflight declares it stateless between queries (openpi)."),
        click.option("--policy-url", default=None, help="A served policy's endpoint (ws://HOST:PORT for openpi)."),
        click.option("--profile", type=click.Choice(["libero", "droid"]), default="libero", show_default=True,
                     help="OpenPI profile."),
        click.option("--policy-path", default=None, help="A saved LeRobot policy directory."),
        click.option("--timeout", "timeout_s", type=float, default=60.0, show_default=True,
                     help="Seconds a served policy may take to answer."),
        click.option("--max-time-s", type=float, default=None, help="Simulated seconds per episode (default: the "
                                                                    "condition's budget)."),
        click.option("--support", "supports", multiple=True, required=True, metavar="SITE:MODE",
                     help="A support: sites semantic|decision|geometry|skill, modes assist|replace.  Repeatable: each "
                          "is a matched pair; two at different sites also run their joint branch (interaction "
                          f"contrast).  Built: {_supports_text(entry)}."),
        *_policy_options(entry),
        click.option("--instances", type=click.IntRange(min=1), default=16, show_default=True),
        *_placement("Instances in parallel processes."),
        click.option("--verify-periods", type=click.IntRange(min=1), default=10, show_default=True,
                     help="Control periods re-stepped from each checkpoint to verify it."),
        output_options(csv=False, json_help="Print the study summary (compatibility, checkpoints, delivery, agreement, "
                                            "substitution share)."),
    ])
    return click.command(entry.name, context_settings=CONTEXT_SETTINGS)(decorated)


def _pairs_command(entry: Family) -> click.Command:
    def command(policy: str, n_pairs: int, seed: int, out_dir: str, workers: int, executor: str,
                ray_address: str | None, as_json: bool, **values: str | None) -> None:
        from labrecord.sim.study import run_pairs_study

        with progress(2 * n_pairs, f"answer-changing pairs / {policy}") as advance:
            summary = run_pairs_study(out_dir, policy, n_pairs, seed, workers, progress=advance, executor=executor,
                                      address=ray_address, family=entry.name, **_chosen(entry, policy, values))
        _wrote(summary, out_dir, "P_state", as_json)

    command.__doc__ = (f"{entry.title.split(':')[0]} ({entry.study_condition}): per pair, the drawn instance and its "
                       "partner whose only difference changes the legal answer." + _examples([
                           f"labrecord study pairs {entry.name} --policy {_optioned(entry)} --pairs 8 --seed 0 --out runs/",
                           "labrecord score runs/            # P_state over the registered pairs"]))
    decorated = _decorate(command, [
        click.option("--policy", type=click.Choice(list(entry.policies)), default=_first(entry), show_default=True),
        *_policy_options(entry),
        click.option("--pairs", "n_pairs", type=click.IntRange(min=1), default=8, show_default=True),
        *_placement("Episodes in parallel processes."),
        output_options(csv=False, json_help='Print {"population", "policy", "seed", "pairs", "runs"}.'),
    ])
    return click.command(entry.name, context_settings=CONTEXT_SETTINGS)(decorated)


def _fixed_starts_command(entry: Family) -> click.Command:
    def command(policy: str, starts: int, seed: int, out_dir: str, workers: int, executor: str,
                ray_address: str | None, as_json: bool) -> None:
        from labrecord.sim.study import run_fixed_starts_study

        with progress(starts, f"fixed-subgoal starts / {policy}") as advance:
            summary = run_fixed_starts_study(out_dir, policy, starts, seed, workers, progress=advance,
                                             executor=executor, address=ray_address, family=entry.name)
        _wrote(summary, out_dir, "E_fixed", as_json)

    command.__doc__ = (f"{entry.title.split(':')[0]} ({entry.study_condition}): one run per registered fixed start, "
                       "its correct subgoal given to the system." + _examples([
                           f"labrecord study fixed-starts {entry.name} --policy {_first(entry)} --starts 8 --seed 0 "
                           "--out runs/",
                           "labrecord score runs/            # E_fixed over the registered starts"]))
    decorated = _decorate(command, [
        click.option("--policy", type=click.Choice(list(entry.policies)), default=_first(entry), show_default=True),
        click.option("--starts", type=click.IntRange(min=1), default=8, show_default=True),
        *_placement("Episodes in parallel processes."),
        output_options(csv=False, json_help='Print {"population", "policy", "seed", "starts", "runs"}.'),
    ])
    return click.command(entry.name, context_settings=CONTEXT_SETTINGS)(decorated)


for _entry in with_study("oracle"):
    oracle.add_command(_oracle_command(_entry))
for _entry in with_study("pairs"):
    pairs.add_command(_pairs_command(_entry))
for _entry in with_study("fixed-starts"):
    fixed_starts.add_command(_fixed_starts_command(_entry))

study.help = f"{study.help}" + _examples([_oracle_example(entry) for entry in with_study("oracle")])
oracle.help = f"{oracle.help}" + _examples([_oracle_example(entry) for entry in with_study("oracle")])
pairs.help = f"{pairs.help}" + _examples(
    [f"labrecord study pairs {entry.name} --policy {_optioned(entry)} --pairs 8 --seed 0 --out runs/"
     for entry in with_study("pairs")])
fixed_starts.help = f"{fixed_starts.help}" + _examples(
    [f"labrecord study fixed-starts {entry.name} --policy {_first(entry)} --starts 8 --seed 0 --out runs/"
     for entry in with_study("fixed-starts")])
