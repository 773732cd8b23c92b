"""``labrecord sim``: run episodes in the embedded MuJoCo simulator."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, output_options, progress


@click.group(context_settings=CONTEXT_SETTINGS)
def sim() -> None:
    """Run episodes in the embedded MuJoCo simulator.

    \b
    Example:
      labrecord sim weighing --condition basic --policy reference --episodes 20 --seed 0 --out runs/
      labrecord sim centrifuge --condition basic --policy reference --episodes 8 --seed 0 --out runs/
      labrecord sim rack --condition extended --policy reference --episodes 8 --seed 0 --out runs/
    """


@sim.command(context_settings=CONTEXT_SETTINGS)
@click.option("--condition", type=click.Choice(["basic", "extended"]), default="basic", show_default=True)
@click.option("--policy", type=click.Choice(["reference", "clumsy", "fixed-preference", "random", "openpi", "http", "lerobot"]),
              default="reference", show_default=True,
              help="A scripted baseline (clumsy: the reference policy that drops its first carried standard and "
                   "recovers it), or a served policy: openpi (websocket), http (agent bridge), lerobot (saved policy).")
@click.option("--policy-url", default=None, help="openpi: ws://HOST:PORT; http: http://HOST:PORT/PATH.")
@click.option("--profile", type=click.Choice(["libero", "droid"]), default="libero", show_default=True,
              help="openpi: how observations are fed and chunks executed.")
@click.option("--policy-path", type=click.Path(exists=True, file_okay=False), default=None,
              help="lerobot: a directory saved by PreTrainedPolicy.save_pretrained.")
@click.option("--convention", type=click.Choice(["eef_delta", "joint_pos", "joint_vel"]), default="eef_delta",
              show_default=True, help="http: the action convention the agent's rows are in.")
@click.option("--tools", default=None, help="http: comma-separated tools offered (default all five; "
              "call_skill makes the system execution-supported).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds a served policy may take to answer before a transport fault.")
@click.option("--denomination", type=click.Choice(["w10", "w20", "w50", "w100"]), default=None,
              help="Standard the fixed-preference policy always transfers (default w50).")
@click.option("--episodes", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray runs the episodes on a Ray cluster (pip install 'labrecord[ray]').")
@click.option("--ray-address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local instance of --workers CPUs).")
@click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster).")
@click.option("--size", type=click.IntRange(min=16), default=None,
              help="Camera width and height (px; default 224, or the openpi profile's render size).")
@click.option("--deadline-s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Response deadline from an observation's delivery (s); a later choice is not identified (default: 10 s simulated).")
@click.option("--deadline-clock", type=click.Choice(["sim", "wall"]), default="sim", show_default=True,
              help="Clock of the deadline: wall also refuses chunks whose inference outlasts it (physics pauses meanwhile).")
@click.option("--chunk-length", type=click.IntRange(min=1), default=1, show_default=True,
              help="Plan rows a scripted policy returns per query (open-loop after the first).")
@click.option("--actions-per-query", type=click.IntRange(min=1), default=None,
              help="Rows of each returned chunk executed before the next query (default: the whole chunk).")
@output_options(csv=False, json_help='Print {"out": DIR, "runs": [RUN_DIR, ...], "service_faults": N}.')
def weighing(condition: str, policy: str, policy_url: str | None, profile: str, policy_path: str | None, convention: str,
             tools: str | None, timeout_s: float, denomination: str | None, episodes: int, seed: int, out_dir: str,
             workers: int, executor: str, ray_address: str | None, no_cameras: bool, size: int | None,
             deadline_s: float | None, deadline_clock: str, chunk_length: int, actions_per_query: int | None,
             as_json: bool) -> None:
    """Feedback weighing: one run directory per episode under --out.

    \b
    Example:
      labrecord sim weighing --condition basic --policy reference --episodes 20 --seed 0 --out runs/
      labrecord sim weighing --policy fixed-preference --denomination w20 --episodes 8 --out runs/ --workers 2
      labrecord sim weighing --episodes 100 --out runs/ --executor ray --ray-address auto
      labrecord sim weighing --policy clumsy --episodes 8 --deadline-s 5 --deadline-clock wall --out runs/
      labrecord sim weighing --policy openpi --policy-url ws://127.0.0.1:8000 --profile libero --episodes 4 --out runs/
      labrecord sim weighing --policy http --policy-url http://127.0.0.1:8080/act --episodes 4 --out runs/
      labrecord sim weighing --policy lerobot --policy-path outputs/act/checkpoints/last/pretrained_model --episodes 4 --out runs/
      labrecord sim weighing --chunk-length 8 --actions-per-query 1 --episodes 4 --no-cameras --out runs-first-row/
    """
    from labrecord.sim import run_weighing
    from labrecord.sim.serving import EXTERNAL

    options: dict = {"denomination": denomination} if denomination and policy == "fixed-preference" else {}
    if policy in EXTERNAL:
        options = {"url": policy_url, "profile": profile, "path": policy_path, "convention": convention,
                   "timeout_s": timeout_s}
        if tools is not None:
            options["tools"] = tuple(t.strip() for t in tools.split(",") if t.strip())
    with progress(episodes, f"weighing {condition} / {policy}") as advance:
        paths = run_weighing(out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras, size=size,
                             progress=advance, executor=executor, address=ray_address, deadline_s=deadline_s,
                             deadline_clock=deadline_clock, chunk_length=chunk_length,
                             actions_per_query=actions_per_query, **options)
    from labrecord.rundir import read_manifest

    faulted = sum(read_manifest(path).manifest.status == "service_fault" for path in paths)
    if as_json:
        echo_json({"out": out_dir, "runs": [str(p) for p in paths], "service_faults": faulted})
    else:
        note = f" ({faulted} with a service fault: unresolved)" if faulted else ""
        click.echo(f"wrote {len(paths)} run(s) under {out_dir}{note}")


def _episode_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options every scripted-family command shares: episodes, seed, output folder,
    workers, cameras and the ``--json`` output."""
    for option in reversed([
        click.option("--episodes", type=click.IntRange(min=1), default=8, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True),
        click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Episodes in parallel processes."),
        click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster)."),
        click.option("--size", type=click.IntRange(min=16), default=224, show_default=True,
                     help="Camera width and height (px)."),
        output_options(csv=False, json_help='Print {"out": DIR, "runs": [RUN_DIR, ...]}.'),
    ]):
        command = option(command)
    return command


@sim.command(context_settings=CONTEXT_SETTINGS)
@click.option("--condition", type=click.Choice(["basic", "extended"]), default="basic", show_default=True,
              help="basic: one tube seated, one to place; extended: both tubes to place.")
@click.option("--policy", type=click.Choice(["reference", "fixed-preference", "random", "clumsy"]), default="reference",
              show_default=True)
@click.option("--slot", type=click.IntRange(0, 11), default=None,
              help="Local slot the fixed-preference policy always chooses (default 0; the next free one when taken).")
@_episode_options
def centrifuge(condition: str, policy: str, slot: int | None, episodes: int, seed: int, out_dir: str, workers: int,
               no_cameras: bool, size: int, as_json: bool) -> None:
    """Centrifuge loading: one run directory per episode under --out.

    \b
    Example:
      labrecord sim centrifuge --condition basic --policy reference --episodes 8 --seed 0 --out runs/
      labrecord sim centrifuge --condition extended --policy clumsy --episodes 4 --out runs/ --no-cameras
      labrecord sim centrifuge --policy fixed-preference --slot 3 --episodes 8 --out runs/
    """
    from labrecord.sim.centrifuge import run_centrifuge

    options = {"slot": slot} if slot is not None and policy == "fixed-preference" else {}
    with progress(episodes, f"centrifuge {condition} / {policy}") as advance:
        paths = run_centrifuge(out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras, size=size,
                               progress=advance, **options)
    _wrote(out_dir, paths, as_json)


@sim.command(context_settings=CONTEXT_SETTINGS)
@click.option("--condition", type=click.Choice(["basic", "extended"]), default="basic", show_default=True,
              help="basic: empty rack, stationary occlusion; extended: three same-cap distractors, rack moved and turned.")
@click.option("--policy", type=click.Choice(["reference", "fixed-preference", "random", "clumsy"]), default="reference",
              show_default=True)
@click.option("--slot", type=click.Choice([f"{r}{c}" for r in "ABC" for c in range(1, 5)]), default=None,
              help="Slot the fixed-preference policy places into and retrieves from (default A1).")
@_episode_options
def rack(condition: str, policy: str, slot: str | None, episodes: int, seed: int, out_dir: str, workers: int,
         no_cameras: bool, size: int, as_json: bool) -> None:
    """Placement recall: place a tube, the rack is moved under occlusion, retrieve it.

    \b
    Example:
      labrecord sim rack --condition basic --policy reference --episodes 8 --seed 0 --out runs/
      labrecord sim rack --condition extended --policy fixed-preference --slot B3 --episodes 8 --out runs/
    """
    from labrecord.sim.rack import run_rack

    options: dict[str, Any] = {"slot": slot} if slot is not None and policy == "fixed-preference" else {}
    with progress(episodes, f"rack {condition} / {policy}") as advance:
        paths = run_rack(out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras, size=size,
                         progress=advance, **options)
    _wrote(out_dir, paths, as_json)


def _wrote(out_dir: str, paths: list, as_json: bool) -> None:
    if as_json:
        echo_json({"out": out_dir, "runs": [str(p) for p in paths]})
    else:
        click.echo(f"wrote {len(paths)} run(s) under {out_dir}")
