"""``labrecord sim``: run episodes in the embedded MuJoCo simulator.

One command per registered family (:mod:`labrecord.families`), built from its entry: its
conditions, its scripted policies and their options, and the served policies every bench
takes.
"""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, output_options, progress
from labrecord.families import FAMILIES, SERVED_POLICIES, Family


@click.group(context_settings=CONTEXT_SETTINGS)
def sim() -> None:
    """Run episodes in the embedded MuJoCo simulator (one command per task family)."""


def _policy_options(entry: Family) -> dict[str, Any]:
    """The scripted policies' keyword options of a family, by name (one click option each)."""
    options: dict[str, Any] = {}
    for policy in entry.policies.values():
        for option in policy.options:
            options.setdefault(option.name, option)
    return options


def _first_example(entry: Family) -> str:
    conditions, policies = list(entry.conditions), list(entry.policies)
    return (f"labrecord sim {entry.name} --condition {conditions[0]} --policy {policies[0]} "
            f"--episodes {entry.default_episodes} --seed 0 --out runs/")


def _examples(entry: Family) -> str:
    name, conditions, policies = entry.name, list(entry.conditions), list(entry.policies)
    lines = [_first_example(entry),
             f"labrecord sim {name} --condition {conditions[-1]} --policy {policies[-1]} --episodes 4 "
             "--out runs/ --no-cameras"]
    for policy in entry.policies.values():
        for option in policy.options:
            lines.append(f"labrecord sim {name} --policy {policy.name} --{option.name} {option.choices[-1]} "
                         "--episodes 8 --out runs/ --workers 2")
    lines += [f"labrecord sim {name} --episodes 100 --out runs/ --executor ray --ray-address auto",
              f"labrecord sim {name} --policy openpi --policy-url ws://127.0.0.1:8000 --profile libero --episodes 4 "
              "--out runs/",
              f"labrecord sim {name} --policy http --policy-url http://127.0.0.1:8080/act --episodes 4 --out runs/",
              f"labrecord sim {name} --policy lerobot --policy-path outputs/act/checkpoints/last/pretrained_model "
              "--episodes 4 --out runs/"]
    return "\n".join("  " + line for line in lines)


def _family_command(entry: Family) -> click.Command:
    conditions = "; ".join(f"{name}: {text}" for name, text in entry.conditions.items())
    scripted = "; ".join(f"{name}: {policy.help}" for name, policy in entry.policies.items())
    served = "; ".join(f"{name}: {text}" for name, text in SERVED_POLICIES.items())
    extra = _policy_options(entry)

    def command(condition: str, policy: str, policy_url: str | None, profile: str, policy_path: str | None,
                convention: str, tools: str | None, timeout_s: float, episodes: int, seed: int, out_dir: str,
                workers: int, executor: str, ray_address: str | None, no_cameras: bool, size: int | None,
                deadline_s: float | None, deadline_clock: str, chunk_length: int, actions_per_query: int | None,
                as_json: bool, **chosen: str | None) -> None:
        from labrecord.sim import run_episodes

        options: dict[str, Any] = {}
        if policy in SERVED_POLICIES:
            options = {"url": policy_url, "profile": profile, "path": policy_path, "convention": convention,
                       "timeout_s": timeout_s}
            if tools is not None:
                options["tools"] = tuple(t.strip() for t in tools.split(",") if t.strip())
        else:
            takes = {option.name for option in entry.policies[policy].options}
            options = {name: extra[name].convert(value) for name, value in chosen.items()
                       if value is not None and name in takes}
        with progress(episodes, f"{entry.name} {condition} / {policy}") as advance:
            paths = run_episodes(entry.name, out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras,
                                 size=size, progress=advance, executor=executor, address=ray_address,
                                 deadline_s=deadline_s, deadline_clock=deadline_clock, chunk_length=chunk_length,
                                 actions_per_query=actions_per_query, **options)
        from labrecord.rundir import read_manifest

        faulted = sum(read_manifest(path).manifest.status == "service_fault" for path in paths)
        if as_json:
            echo_json({"out": out_dir, "runs": [str(p) for p in paths], "service_faults": faulted})
        else:
            note = f" ({faulted} with a service fault: unresolved)" if faulted else ""
            click.echo(f"wrote {len(paths)} run(s) under {out_dir}{note}")

    command.__doc__ = f"{entry.title}  One run directory per episode under --out.\n\n\b\nExample:\n{_examples(entry)}"
    decorators = [
        click.option("--condition", type=click.Choice(list(entry.conditions)), default=next(iter(entry.conditions)),
                     show_default=True, help=conditions),
        click.option("--policy", type=click.Choice([*entry.policies, *SERVED_POLICIES]),
                     default=next(iter(entry.policies)),
                     show_default=True, help=f"A scripted baseline ({scripted}), or a served policy ({served})."),
        click.option("--policy-url", default=None, help="openpi: ws://HOST:PORT; http: http://HOST:PORT/PATH."),
        click.option("--profile", type=click.Choice(["libero", "droid"]), default="libero", show_default=True,
                     help="openpi: how observations are fed and chunks executed."),
        click.option("--policy-path", type=click.Path(exists=True, file_okay=False), default=None,
                     help="lerobot: a directory saved by PreTrainedPolicy.save_pretrained."),
        click.option("--convention", type=click.Choice(["eef_delta", "joint_pos", "joint_vel"]), default="eef_delta",
                     show_default=True, help="http: the action convention the agent's rows are in."),
        click.option("--tools", default=None, help="http: comma-separated tools offered (default all the bench "
                     "supports; call_skill makes the system execution-supported)."),
        click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
                     help="Seconds a served policy may take to answer before a transport fault."),
        *(click.option(f"--{option.name}", type=click.Choice(list(option.choices)), default=None, help=option.help)
          for option in extra.values()),
        click.option("--episodes", type=click.IntRange(min=1), default=entry.default_episodes, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True),
        click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Episodes in parallel processes."),
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="ray runs the episodes on a Ray cluster (pip install 'labrecord[ray]')."),
        click.option("--ray-address", default=None,
                     help="Ray cluster address (default: RAY_ADDRESS, else a local instance of --workers CPUs)."),
        click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster)."),
        click.option("--size", type=click.IntRange(min=16), default=None,
                     help="Camera width and height (px; default 224, or the openpi profile's render size)."),
        click.option("--deadline-s", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Response deadline from an observation's delivery (s); a later choice is not identified "
                          f"(default: {entry.default_deadline_s:g} s simulated)."),
        click.option("--deadline-clock", type=click.Choice(["sim", "wall"]), default="sim", show_default=True,
                     help="Clock of the deadline: wall also refuses chunks whose inference outlasts it "
                          "(physics pauses meanwhile)."),
        click.option("--chunk-length", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Plan rows a scripted policy returns per query (open-loop after the first; a family "
                          "whose baselines can chunk)."),
        click.option("--actions-per-query", type=click.IntRange(min=1), default=None,
                     help="Rows of each returned chunk executed before the next query (default: the whole chunk)."),
        output_options(csv=False, json_help='Print {"out": DIR, "runs": [RUN_DIR, ...], "service_faults": N}.'),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return click.command(entry.name, context_settings=CONTEXT_SETTINGS)(command)


for _entry in FAMILIES.values():
    sim.add_command(_family_command(_entry))
sim.help = (f"{sim.help}\n\n\b\nExample:\n"
            + "\n".join("  " + _first_example(entry) for entry in FAMILIES.values()))
