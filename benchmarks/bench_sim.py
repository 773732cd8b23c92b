"""Simulated seconds per CPU second of the weighing bench, four ways, in one run.

1. bare physics: a Python loop of ``mj_step`` on the scene model (the Panda arm, the
   bench, its load cell and per-pair contact sensors) replaying the actuator commands
   the recorded run held at every physics step (the ramped joint targets and the
   gripper), nothing read out; it must end in exactly the recorded joint state (printed),
   so both sides simulate the same trajectory.  A second row shows the same model
   without the contact sensors;
2. physics + recorder without cameras: the step owner with the reference policy (a
   scripted system reading proprioception and the declared evaluator-state channels, no
   camera, so nothing is rendered), i.e. the policy's own planning, its end-effector
   deltas through the differential-IK controller, the stepping, the measurement columns,
   the online contract scorer, receipts, logs, and — for whole runs — scores, the
   measurements file and the demonstration;
3. the same with the three registered cameras (default 224×224) rendered at the control
   rate and encoded to MP4;
4. IK controller + physics: the recorded action rows replayed through the arm controller
   and a Python ``mj_step`` loop of its ramped joint targets — the closed loop a user
   would run without measuring, scoring or logging (the policy's planning left out); it
   must also end in exactly the recorded joint state.

The ratio "vs bare" is (simulated s per CPU s of the row) / (the same of the baseline):
the share of bare-physics speed the whole closed loop keeps; the target is ≥ 0.8 for (2),
and with 3 cameras ≥ 10 simulated s per CPU s at 128×128 (≥ 5 at 224×224).
It charges the policy and the IK controller to the recorder side, since the baseline
replays the controller's output.  Times are CPU seconds of this process
(``time.process_time``, all its threads): on a shared machine wall time mostly measures
the other processes, and even CPU time moves with their load (run ``--repeat`` passes;
the fastest of each configuration counts in the table, and since the machine's speed
drifts between passes, each pass also measures the recorder and the replays back to back:
the median and range of those per-pass ratios are printed too).  ``--breakdown`` adds where the loop's time
goes per control period.  Also measured: how close the settled display comes to the true load.

The other scenes (``--scenes centrifuge,rack``; all by default) are measured the same way on
their reference episodes without cameras: the recorded runs against their applied
actions replayed through the arm controller and ``mj_step`` alone (the baseline, same
process, same commands).

    python benchmarks/bench_sim.py --episodes 3
    python benchmarks/bench_sim.py --episodes 2 --scenes centrifuge,rack
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402


def recorded(episodes: int, seed: int, cameras: bool, size: int,
             record_controls: bool = False) -> tuple[float, float, float, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """(simulated s, CPU s, CPU s inside the control loop, per episode the actuator
    commands of every physics step, the final joint state and the applied action rows)
    of recorded reference episodes; the loop time leaves out per-run set-up and file
    writes.  Capturing wraps ``WeighingEnv.advance`` and ``WeighingEnv.apply`` (left out
    of timed passes)."""
    from labrecord.recorders.loop import StepOwner
    from labrecord.rundir import read_events
    from labrecord.sim import run_episodes

    from labrecord.sim.weighing.env import WeighingEnv

    loop_wall = [0.0]
    original = StepOwner.run_episode
    original_advance, original_apply = WeighingEnv.advance, WeighingEnv.apply
    controls: list[list[np.ndarray]] = []
    finals: list[np.ndarray] = []
    actions: list[list[np.ndarray]] = []

    def capture_action(self: WeighingEnv, action: np.ndarray) -> None:
        if self.scene.time == 0.0 and len(actions) == len(controls):
            actions.append([])
        actions[-1].append(np.array(action, dtype=float))
        original_apply(self, action)

    def capture(self: WeighingEnv, steps: int) -> None:
        if self.scene.time == 0.0:
            controls.append([])
            finals.append(np.zeros(0))
        original_advance(self, steps)
        controls[-1].append(self._controls[:steps, :self.scene.model.nu].copy())  # ctrl leads the user inputs
        finals[-1] = self.scene.data.qpos.copy()

    def timed(self: StepOwner, episode: int) -> object:
        start = time.process_time()
        try:
            return original(self, episode)
        finally:
            loop_wall[0] += time.process_time() - start

    StepOwner.run_episode = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as out:
        wall = time.process_time()
        try:
            if record_controls:
                WeighingEnv.advance = capture  # type: ignore[method-assign]
                WeighingEnv.apply = capture_action  # type: ignore[method-assign]
            runs = run_episodes("weighing", out, "basic", "reference", episodes, seed, cameras=cameras, size=size)
        finally:
            StepOwner.run_episode = original  # type: ignore[method-assign]
            WeighingEnv.advance, WeighingEnv.apply = original_advance, original_apply  # type: ignore[method-assign]
        wall = time.process_time() - wall
        sim_s = sum(read_events(run)[-1].t for run in runs)
    return sim_s, wall, loop_wall[0], [(np.concatenate(c), q, np.array(a))
                                       for c, q, a in zip(controls, finals, actions)]


def _equal_runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """(first row, length) of each run of equal consecutive rows."""
    change = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]).any(axis=1), True])
    return [(int(a), int(b - a)) for a, b in zip(change[:-1], change[1:])]


def _replay(env: Any, controls: list[tuple[np.ndarray, np.ndarray, np.ndarray]], seed: int,
            episode: Callable[[int], None]) -> tuple[float, float, bool]:
    """Each recorded episode from its instance's start on ``env``, stepped by the timed
    ``episode(index)``; (simulated s, CPU s, whether every episode ended in exactly the
    recorded joint state)."""
    from labrecord.sim.weighing.scene import Placement, random_layout
    from labrecord.sim.weighing.task import instances

    env.calibrate_empty()
    scene = env.scene
    sim_s = wall = 0.0
    same = True
    for index, (inst, (_, final, _)) in enumerate(zip(instances("basic", len(controls), seed), controls)):
        env.reset(Placement(inst.sample_g, inst.start, random_layout(inst.start, np.random.default_rng(inst.layout_seed))))
        start = time.process_time()
        episode(index)
        wall += time.process_time() - start
        sim_s += scene.time
        same = same and np.array_equal(scene.data.qpos, final)
    return sim_s, wall, same


def bare(controls: list[tuple[np.ndarray, np.ndarray, np.ndarray]], seed: int,
         contact_sensors: bool = True) -> tuple[float, float, bool]:
    """Replay the same actuator commands, step by step, with a plain Python loop of
    ``mj_step`` (no controller, no measurement, no scorer); (simulated s, CPU s, whether
    every episode ended in exactly the recorded joint state).

    The command is assigned only where it changes (the ramp's sub-steps), as the
    recorder's own stepping does.  With ``contact_sensors=False`` the model is rebuilt
    without its per-pair contact sensors, to show what MuJoCo spends evaluating them
    inside ``mj_step`` (that trajectory is not compared).
    """
    import mujoco

    from labrecord.sim.weighing.env import WeighingEnv
    from labrecord.sim.bench.scene import build_model
    from labrecord.sim.weighing.scene import scene_xml

    env = WeighingEnv(cameras=())
    if not contact_sensors:
        text = scene_xml()
        start, end = text.index('<contact name='), text.index("</sensor>")
        env.scene.model = build_model(text[:start] + text[end:])
        env.scene.data = mujoco.MjData(env.scene.model)
    runs = [[(commands[first], count) for first, count in _equal_runs(commands)] for commands, _, _ in controls]

    def episode(index: int) -> None:
        mj_step, model, data = mujoco.mj_step, env.scene.model, env.scene.data
        for command, count in runs[index]:
            data.ctrl[:] = command
            for _ in range(count):
                mj_step(model, data)

    return _replay(env, controls, seed, episode)


def controlled(controls: list[tuple[np.ndarray, np.ndarray, np.ndarray]], seed: int) -> tuple[float, float, bool]:
    """Replay the recorded action rows through the arm controller (differential IK for
    the reference policy's end-effector deltas) and a plain Python loop of ``mj_step``
    with the controller's ramped joint targets — a closed loop without labrecord's
    measuring, scoring and logging (the policy's own planning left out); (simulated s,
    CPU s, whether every episode ended in exactly the recorded joint state)."""
    import mujoco

    from labrecord.sim.bench.env import _ramp_fraction
    from labrecord.sim.weighing.env import WeighingEnv

    env = WeighingEnv(cameras=())
    fraction = _ramp_fraction(int(round(env.physics_hz / env.control_hz)))
    stairs = _equal_runs(fraction)

    def episode(index: int) -> None:
        mj_step, model, data, arm = mujoco.mj_step, env.scene.model, env.scene.data, env.scene.arm_ctrl
        for action in controls[index][2]:
            env.apply(action)
            first, delta = env._ramp  # type: ignore[misc]
            ramp = first + delta * fraction
            for row, count in stairs:
                data.ctrl[arm] = ramp[row]
                for _ in range(count):
                    mj_step(model, data)

    return _replay(env, controls, seed, episode)


def breakdown(episodes: int, seed: int, size: int, bare_ms: float) -> None:
    """CPU ms per control period of the loop's parts, from one more pass without cameras
    (each part wrapped in a ``process_time`` accumulator, which itself costs a little);
    ``bare_ms`` is the baseline's fastest pass per control period, for comparison with
    the same physics stepped inside the loop."""
    from labrecord.recorders.loop import StepOwner
    from labrecord.recorders.online import ContractScorer
    from labrecord.sim.weighing.env import WeighingEnv

    parts = {"physics steps (rollout)": (WeighingEnv, "advance"), "IK controller (mink)": (WeighingEnv, "apply"),
             "measurement columns": (WeighingEnv, "end_block"), "online contract scorer": (ContractScorer, "update"),
             "evidence offer": (ContractScorer, "offer"), "policy query + receipt": (StepOwner, "_query"),
             "state channels": (WeighingEnv, "public_state"), "demo row": (StepOwner, "_record_demo"),
             "control loop (all)": (StepOwner, "run_episode")}
    spent = dict.fromkeys(parts, 0.0)
    originals = {name: getattr(owner, method) for name, (owner, method) in parts.items()}

    def timed(name: str, function: object) -> object:
        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.process_time()
            try:
                return function(*args, **kwargs)  # type: ignore[operator]
            finally:
                spent[name] += time.process_time() - start
        return wrapper

    try:
        for name, (owner, method) in parts.items():
            setattr(owner, method, timed(name, originals[name]))
        sim_s, *_ = recorded(episodes, seed, cameras=False, size=size)
    finally:
        for name, (owner, method) in parts.items():
            setattr(owner, method, originals[name])
    periods = sim_s * 10.0  # the reference policy's 10 Hz control periods
    total = spent["control loop (all)"]
    print(f"{'part of the control loop (no cameras)':40s} {'CPU ms/period':>14s} {'share':>7s}")
    for name, seconds in spent.items():
        print(f"{name:40s} {1000 * seconds / periods:14.3f} {seconds / total:7.1%}")
    rest = total - sum(v for k, v in spent.items() if k != "control loop (all)")
    print(f"{'rest (loop bookkeeping, snapshots)':40s} {1000 * rest / periods:14.3f} {rest / total:7.1%}")
    print(f"{'(bare physics, baseline pass)':40s} {bare_ms:14.3f}")


def display_error(configs: int, seed: int) -> float:
    """Max |settled display − true load| (g) over random samples and pan subsets."""
    from labrecord.scorers.contracts.weighing import DisplayFilter, WeighingThresholds, quantize
    from labrecord.sim.weighing.env import WeighingEnv
    from labrecord.sim.weighing.scene import STANDARD_GRAMS, STANDARDS, Placement, random_layout

    rng = np.random.default_rng(seed)
    env = WeighingEnv(cameras=())
    env.calibrate_empty()
    th = WeighingThresholds()
    worst = 0.0
    for _ in range(configs):
        sample = float(rng.uniform(40, 200))
        on_pan = frozenset(w for w in STANDARDS if rng.random() < 0.4)
        env.reset(Placement(sample, on_pan, random_layout(on_pan, rng)))
        hold = env.hold_action(None)
        blocks = []
        for _ in range(int(3.5 * env.control_hz)):
            env.apply(hold)
            env.advance(int(env.physics_hz / env.control_hz))
            blocks.append(env.end_block())
        t = np.concatenate([b["t"] for b in blocks])
        force = np.concatenate([b["pan_force_n"] for b in blocks])
        raw = (1000.0 / th.g0) * (force - env.f_empty_n)  # eq. 8
        m_bar, _ = DisplayFilter(th).block(t, raw, np.ones(len(t), dtype=bool))
        truth = sample + sum(STANDARD_GRAMS[w] for w in on_pan)
        worst = max(worst, abs(quantize(m_bar[-1], th.quantum_g) - truth))
    return worst


def _scene_runs(scene: str, out: str, episodes: int, seed: int) -> list:
    if scene == "centrifuge":
        from labrecord.sim import run_episodes

        return run_episodes("centrifuge", out, "basic", "reference", episodes, seed, cameras=False)
    if scene == "rack":
        from labrecord.sim import run_episodes

        return run_episodes("rack", out, "extended", "reference", episodes, seed, cameras=False)
    raise ValueError(scene)


def _scene_env(scene: str, instance: object) -> object:
    if scene == "centrifuge":
        from labrecord.sim.centrifuge.task import SETTLE_STEPS
        from labrecord.sim.centrifuge.scene import CentrifugeEnv

        env = CentrifugeEnv(instance.calibration, cameras=())  # type: ignore[attr-defined]
        env.reset(instance, settle_steps=SETTLE_STEPS)
        return env
    if scene == "rack":
        from labrecord.sim.rack.scene import RackEnv

        env = RackEnv(len(instance.distractors), cameras=())  # type: ignore[attr-defined]
        env.reset(instance)
        return env
    raise ValueError(scene)


def scene_rates(scene: str, episodes: int, seed: int) -> tuple[float, float, float]:
    """(simulated s, recorded wall s, replay wall s) of ``scene``'s reference episodes:
    recorded runs (no cameras) and their applied actions replayed through the controller
    and ``mj_step`` without measuring or scoring."""
    import mujoco

    from labrecord.demos import DemoReader
    from labrecord.rundir import read_events, read_manifest

    with tempfile.TemporaryDirectory() as out:
        wall = time.perf_counter()
        runs = _scene_runs(scene, out, episodes, seed)
        wall = time.perf_counter() - wall
        sim_s, replay = 0.0, 0.0
        for run in runs:
            sim_s += read_events(run)[-1].t
            with DemoReader(run / "demo.hdf5") as reader:
                actions = reader.demo(reader.demo_names[0]).actions.astype(float)
            from labrecord.scorers.contracts import get_contract

            task = read_manifest(run).manifest.task
            env = _scene_env(scene, get_contract(task.family).instance_from_task(task))
            model, data = env.scene.model, env.scene.data  # type: ignore[attr-defined]
            steps = int(round(env.physics_hz / env.control_hz))  # type: ignore[attr-defined]
            start = time.perf_counter()
            for action in actions:
                env.apply(action)  # type: ignore[attr-defined]
                for _ in range(steps):
                    mujoco.mj_step(model, data)
            replay += time.perf_counter() - start
    return sim_s, wall, replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3, help="reference episodes per configuration (size)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=224, help="camera width and height")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions; the fastest of each counts")
    parser.add_argument("--display-configs", type=int, default=10)
    parser.add_argument("--skip-cameras", action="store_true", help="leave out the camera configuration")
    parser.add_argument("--scenes", default="weighing,centrifuge,rack", help="comma-separated scenes to measure")
    parser.add_argument("--breakdown", action="store_true", help="CPU ms per control period of each part of the loop")
    args = parser.parse_args()
    scenes = args.scenes.split(",")
    if "weighing" not in scenes:
        other_scenes(scenes, args)
        return

    recorded(1, args.seed + 1, cameras=not args.skip_cameras, size=args.size)  # warm-up: imports, renderer, encoder
    # the machine is shared: interleave the configurations and keep each one's fastest pass
    rec_wall = loop_wall = bare_wall = plain_wall = cam_wall = ctl_wall = float("inf")
    *_, controls = recorded(args.episodes, args.seed, cameras=False, size=args.size, record_controls=True)
    paired: list[tuple[float, float]] = []  # per pass: (baseline CPU s / loop CPU s, controller replay CPU s / loop CPU s)
    for _ in range(args.repeat):
        rec_sim, wall, loop, _ = recorded(args.episodes, args.seed, cameras=False, size=args.size)
        rec_wall, loop_wall = min(rec_wall, wall), min(loop_wall, loop)
        bare_sim, wall, reproduced = bare(controls, args.seed)
        bare_wall = min(bare_wall, wall)
        _, ctl, replayed = controlled(controls, args.seed)
        ctl_wall = min(ctl_wall, ctl)
        paired.append((wall / loop, ctl / loop))
        _, wall, _ = bare(controls, args.seed, contact_sensors=False)
        plain_wall = min(plain_wall, wall)
        if not args.skip_cameras:
            cam_sim, wall, _, _ = recorded(args.episodes, args.seed, cameras=True, size=args.size)
            cam_wall = min(cam_wall, wall)
    base = bare_sim / bare_wall
    rows = [("bare physics (baseline)", bare_sim, bare_wall),
            ("bare physics without the contact sensors", bare_sim, plain_wall),
            ("IK controller + physics: actions replayed", bare_sim, ctl_wall),
            ("physics + recorder, no cameras: control loop", rec_sim, loop_wall),
            ("physics + recorder, no cameras: whole runs", rec_sim, rec_wall)]
    if not args.skip_cameras:
        rows.append((f"physics + recorder, 3 cameras {args.size}x{args.size}", cam_sim, cam_wall))
    print(f"{'configuration':50s} {'sim s':>8s} {'CPU s':>8s} {'sim s / CPU s':>15s} {'vs bare':>8s}")
    for name, sim_s, wall in rows:
        print(f"{name:50s} {sim_s:8.2f} {wall:8.2f} {sim_s / wall:15.1f} {sim_s / wall / base:8.2f}")
    print("vs bare = (sim s / CPU s of the row) / (the same of the baseline): the share of bare-physics speed the "
          "closed loop keeps; the baseline is a Python loop of mj_step replaying the recorded per-step commands")
    print("control loop = policy (planning + IK controller), stepping, measuring, online scoring, receipts, logs; "
          "whole runs add per-run set-up and the fsynced file writes (run.json, measurements, scores, demo)")
    print("IK controller + physics = the recorded action rows through the arm controller and a Python mj_step "
          "loop: the closed loop without labrecord's measuring, scoring and logging (policy planning left out)")
    print(f"bare replay ends in the recorded joint state of every episode: {'yes' if reproduced else 'NO'}; "
          f"controller replay: {'yes' if replayed else 'NO'}")
    vs_bare, vs_ctl = (sorted(column) for column in zip(*paired))
    print("targets: control loop vs bare >= 0.8; 3 cameras >= 10 sim s / CPU s at 128x128, >= 5 at 224x224")
    print(f"per pass, recorder loop and replays measured back to back ({len(paired)} passes): control loop vs bare "
          f"median {float(np.median(vs_bare)):.2f} (range {vs_bare[0]:.2f}–{vs_bare[-1]:.2f}); "
          f"vs IK controller + physics median {float(np.median(vs_ctl)):.2f} (range {vs_ctl[0]:.2f}–{vs_ctl[-1]:.2f})")
    if args.breakdown:
        breakdown(args.episodes, args.seed, args.size, 1000 * bare_wall / (bare_sim * 10.0))
    print(f"display: max |settled reading - true load| over {args.display_configs} loads = "
          f"{display_error(args.display_configs, args.seed):.2f} g")
    other_scenes(scenes, args)


def other_scenes(scenes: list[str], args: argparse.Namespace) -> None:
    """Rows for the scenes besides weighing, each against its own replay baseline."""
    rows = []
    for scene in (s for s in scenes if s != "weighing"):
        sim_s, wall, replay = scene_rates(scene, args.episodes, args.seed)
        rows.append((f"{scene}: controller + physics replay (baseline)", sim_s, replay, replay))
        rows.append((f"{scene}: physics + recorder, no cameras: whole runs", sim_s, wall, replay))
    if rows:
        print(f"{'configuration':50s} {'sim s':>8s} {'wall s':>8s} {'sim s / wall s':>15s} {'vs base':>8s}")
    for name, sim_s, wall, base in rows:
        print(f"{name:50s} {sim_s:8.2f} {wall:8.2f} {sim_s / wall:15.1f} {base / wall:8.2f}")


if __name__ == "__main__":
    main()
