"""``labrecord sim``: run episodes in the embedded MuJoCo simulator."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, progress


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
@click.option("--policy", type=click.Choice(["reference", "fixed-preference", "random"]), default="reference", show_default=True)
@click.option("--denomination", type=click.Choice(["w10", "w20", "w50", "w100"]), default=None,
              help="Standard the fixed-preference policy always transfers (default w50).")
@click.option("--episodes", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster).")
@click.option("--size", type=click.IntRange(min=16), default=224, show_default=True, help="Camera width and height (px).")
def weighing(condition: str, policy: str, denomination: str | None, episodes: int, seed: int, out_dir: str,
             workers: int, no_cameras: bool, size: int) -> None:
    """Feedback weighing: one run directory per episode under --out.

    \b
    Example:
      labrecord sim weighing --condition basic --policy reference --episodes 20 --seed 0 --out runs/
      labrecord sim weighing --policy fixed-preference --denomination w20 --episodes 8 --out runs/ --workers 2
    """
    from labrecord.sim import run_weighing

    options = {"denomination": denomination} if denomination and policy == "fixed-preference" else {}
    with progress(episodes, f"weighing {condition} / {policy}") as advance:
        paths = run_weighing(out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras, size=size,
                             progress=advance, **options)
    click.echo(f"wrote {len(paths)} run(s) under {out_dir}")


@sim.command(context_settings=CONTEXT_SETTINGS)
@click.option("--condition", type=click.Choice(["basic", "extended"]), default="basic", show_default=True,
              help="basic: one tube seated, one to place; extended: both tubes to place.")
@click.option("--policy", type=click.Choice(["reference", "fixed-preference", "random", "clumsy"]), default="reference",
              show_default=True)
@click.option("--slot", type=click.IntRange(0, 11), default=None,
              help="Local slot the fixed-preference policy always chooses (default 0; the next free one when taken).")
@click.option("--episodes", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster).")
@click.option("--size", type=click.IntRange(min=16), default=224, show_default=True, help="Camera width and height (px).")
def centrifuge(condition: str, policy: str, slot: int | None, episodes: int, seed: int, out_dir: str, workers: int,
               no_cameras: bool, size: int) -> None:
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
    click.echo(f"wrote {len(paths)} run(s) under {out_dir}")


@sim.command(context_settings=CONTEXT_SETTINGS)
@click.option("--condition", type=click.Choice(["basic", "extended"]), default="basic", show_default=True,
              help="basic: empty rack, stationary occlusion; extended: three same-cap distractors, rack moved and turned.")
@click.option("--policy", type=click.Choice(["reference", "fixed-preference", "random", "clumsy"]), default="reference",
              show_default=True)
@click.option("--slot", type=click.Choice([f"{r}{c}" for r in "ABC" for c in range(1, 5)]), default=None,
              help="Slot the fixed-preference policy places into and retrieves from (default A1).")
@click.option("--episodes", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes in parallel processes.")
@click.option("--no-cameras", is_flag=True, help="Skip rendering and videos (faster).")
@click.option("--size", type=click.IntRange(min=16), default=224, show_default=True, help="Camera width and height (px).")
def rack(condition: str, policy: str, slot: str | None, episodes: int, seed: int, out_dir: str, workers: int,
         no_cameras: bool, size: int) -> None:
    """Placement recall: place a tube, the rack is moved under occlusion, retrieve it.

    \b
    Example:
      labrecord sim rack --condition basic --policy reference --episodes 8 --seed 0 --out runs/
      labrecord sim rack --condition extended --policy fixed-preference --slot B3 --episodes 8 --out runs/
    """
    from labrecord.sim.rack import run_rack

    options = {"slot": slot} if slot is not None and policy == "fixed-preference" else {}
    with progress(episodes, f"rack {condition} / {policy}") as advance:
        paths = run_rack(out_dir, condition, policy, episodes, seed, workers, cameras=not no_cameras, size=size,
                         progress=advance, **options)
    click.echo(f"wrote {len(paths)} run(s) under {out_dir}")
