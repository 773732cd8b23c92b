"""Feedback-weighing episodes in the embedded MuJoCo bench, one run directory per episode.

:func:`run_weighing` is the library entry point behind ``labrecord sim weighing``: it
draws instances from the weighing contract's generator (task-state and layout seeds kept
apart), registers them as population ``weighing-<condition>-s<seed>``
(``<out>/populations/<name>.jsonl``: an instance and a ``d0`` checkpoint per episode,
merged with what is already there), runs each through the step owner with the chosen
baseline policy, and writes ``run.json``, the event and observation logs, measurements, scores, videos and
``demo.hdf5`` through :class:`~labrecord.rundir.RunWriter`.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.sim.fanout import check_request, headless_rendering, refuse_existing, run_specs
from labrecord.models import (
    Assets, Budget, Evaluation, Intervention, ObservationSpec, Physics, Population, RunManifest, Seeds, System, Task,
)
from labrecord.rundir import DEMO_FILE, RunWriter, utc_now
from labrecord.registry import register_population  # noqa: F401  (offered here to the study commands)

CONDITIONS = ("basic", "extended")
SCENE = "labrecord.sim.assets/weighing.xml"
#: the default response deadline of each family, simulated seconds from the opportunity
#: (about twice the time the reference policy takes to show its first choice on the basic
#: condition: 2.4-2.6 s weighing, 9.1 s centrifuge, 9.4 s rack).  C_id then counts a choice
#: identified within that budget, not merely before the episode ended.
DEFAULT_DEADLINE_S: dict[str, float] = {"weighing": 10.0, "centrifuge": 20.0, "rack": 20.0}
#: simulated-time budget per episode (s): reading, transfers, settling and the 3 s dwell
MAX_TIME_S = {"basic": 20.0, "extended": 45.0}
#: extra simulated time for a policy that fails on purpose and recovers (s)
EXTRA_TIME_S = {"clumsy": 15.0}


@dataclasses.dataclass(frozen=True)
class EpisodeSpec:
    """Everything one worker needs to run one episode (picklable)."""

    out_dir: str
    condition: str
    policy: str
    index: int
    seed: int
    instance: Any
    cameras: bool = True
    size: int | None = 224
    max_time_s: float | None = None
    policy_options: tuple[tuple[str, Any], ...] = ()
    deadline_s: float | None = DEFAULT_DEADLINE_S["weighing"]
    deadline_clock: str = "sim"
    #: set by a study (labrecord.sim.study): run id, population, instance and intervention record
    run_id: str | None = None
    population: str | None = None
    instance_id: str | None = None
    intervention: Any = None
    #: plan rows a scripted policy returns per query, and rows of each chunk executed
    #: before the next query (None: the whole chunk) — recorded in run.json ``harness``
    chunk_length: int = 1
    actions_per_query: int | None = None


def instances(condition: str, episodes: int, seed: int) -> list[Any]:
    """The contract's balanced instances; task-state and layout draws use separate streams.

    Drawn in blocks of one full stratum cycle (basic: 3 targets x 4 answers = 12,
    extended: 3 targets x 10 goal subsets = 30), each block from its own
    ``(seed, stream, block)`` generators, so episode ``i`` of a seed is the same instance
    whatever ``episodes`` is: runs of different policies or lengths on one seed share
    their registered instances.  Every full block is exactly balanced, the last one at
    every prefix.
    """
    from labrecord.scorers.contracts.weighing import (
        BASIC_TARGETS_G, EXTENDED_TARGETS_G, STANDARDS, generate_basic, generate_extended, goal_subsets,
    )

    check_request(condition, CONDITIONS, episodes)
    if condition == "basic":
        generate, block = generate_basic, len(BASIC_TARGETS_G) * len(STANDARDS)
    else:
        generate, block = generate_extended, len(EXTENDED_TARGETS_G) * len(goal_subsets())
    out: list[Any] = []
    for b in range(-(-episodes // block)):
        out += generate(block, np.random.default_rng([seed, 0, b]), np.random.default_rng([seed, 1, b]))
    return out[:episodes]


def population_name(condition: str, seed: int) -> str:
    return f"weighing-{condition}-s{seed}"


def instance_id_of(index: int) -> str:
    return f"i{index:03d}"


#: the first registered decision of every weighing episode (which standard to add or remove)
CHECKPOINT_DECISION = "d0"


def population_records(condition: str, seed: int, drawn: list[Any]) -> list[Any]:
    """``Instance`` + ``Checkpoint(decision="d0")`` per episode.

    ``Instance.fields`` holds the drawn task state and seeds (the bench's empty-pan force
    is calibrated per run and left out), so a registry can tell whether a run folder is
    being mixed with differently drawn instances.  No ``FixedStart``: E_fixed needs starts
    whose correct operation is given to the system, while these episodes leave the choice
    to the policy.
    """
    return instance_records(f"weighing-{condition}", condition, drawn, CHECKPOINT_DECISION,
                            fields=lambda inst: {k: v for k, v in inst.variant().items() if k != "f_empty_n"})


def instance_records(task_id: str, condition: str, drawn: list[Any], decision: str,
                     fields: Callable[[Any], dict[str, Any]] | None = None) -> list[Any]:
    """``Instance`` + ``Checkpoint(decision)`` per drawn instance, episode ``i`` as instance
    :func:`instance_id_of` ``(i)``; an instance's ``fields`` are its variant unless ``fields``
    says otherwise."""
    from labrecord.models import Checkpoint, Instance

    records: list[Any] = []
    for index, inst in enumerate(drawn):
        records.append(Instance(instance_id=instance_id_of(index), task_id=task_id, condition=condition,
                                fields=fields(inst) if fields is not None else inst.variant()))
        records.append(Checkpoint(instance_id=instance_id_of(index), decision=decision))
    return records


def run_weighing(out_dir: str | os.PathLike[str], condition: str = "basic", policy: str = "reference",
                 episodes: int = 20, seed: int = 0, workers: int = 1, *, cameras: bool = True, size: int | None = None,
                 max_time_s: float | None = None, progress: Callable[[int], None] | None = None,
                 executor: str = "local", address: str | None = None, deadline_s: float | None = None,
                 deadline_clock: str = "sim", chunk_length: int = 1, actions_per_query: int | None = None,
                 **policy_options: Any) -> list[Path]:
    """Run ``episodes`` weighing episodes; returns the run directories in episode order.

    Episodes run on ``workers`` processes of ``executor`` (:func:`labrecord.parallel.map`:
    ``local`` or ``ray``, with a Ray cluster ``address``); each episode's seeds depend on its
    index only, so every executor writes the same runs.

    ``policy`` is a scripted baseline (:data:`labrecord.sim.policies.POLICIES`) or a served
    policy (``openpi``, ``http``, ``lerobot``; ``policy_options`` are the keywords of
    :func:`labrecord.sim.serving.connect`).  ``size`` defaults to 224 px, or the served
    profile's render size.  ``chunk_length`` makes a scripted policy return that many plan
    rows per query; ``actions_per_query`` executes only the first rows of each chunk before
    the next query (both recorded in run.json ``harness``).  A served policy that stops
    answering mid-episode leaves that
    run with status ``service_fault`` (unresolved); the remaining episodes are still run
    and fault in turn if the service stays away.

    Example::

        runs = run_weighing("runs", "basic", "reference", episodes=4, seed=0)
        runs = run_weighing("runs", "basic", "openpi", episodes=2, url="ws://127.0.0.1:8000", profile="libero")
    """
    from labrecord.sim.policies import make_policy
    from labrecord.sim.serving import EXTERNAL, connect

    if deadline_clock not in ("sim", "wall"):
        raise LabrecordError(f"deadline clock {deadline_clock!r}: expected sim or wall")
    if deadline_s is None:
        deadline_s = DEFAULT_DEADLINE_S["weighing"]
    if not deadline_s > 0:
        raise LabrecordError(f"deadline {deadline_s!r} s: expected a positive number of seconds")
    if chunk_length < 1 or (actions_per_query is not None and actions_per_query < 1):
        raise LabrecordError(f"chunk length {chunk_length} / actions per query {actions_per_query}: expected at least 1")
    if chunk_length != 1 and policy in EXTERNAL:
        raise LabrecordError(f"--chunk-length applies to the scripted policies; {policy} returns its own chunks")
    served = None
    if policy in EXTERNAL:
        if workers > 1 or executor != "local":
            raise LabrecordError(f"--policy {policy}: a served policy runs its episodes in turn over one connection; "
                                 "use --workers 1 and the local executor")
        served = connect(policy, **policy_options)  # the capability preflight, before anything is written
        size = size or served.render_size
    else:
        make_policy(policy, seed, **policy_options)  # fail fast on a bad name or option
    timing = EpisodeTiming(max_time_s, deadline_s, deadline_clock)
    try:
        return _run_all(out_dir, condition, policy, episodes, seed, workers, cameras, size or 224, timing, progress,
                        served, policy_options if served is None else {}, executor, address,
                        chunks=(chunk_length, actions_per_query))
    finally:
        if served is not None:
            served.close()


class EpisodeTiming(NamedTuple):
    """The time budget of every episode of one call: the longest episode and the response deadline."""

    max_time_s: float | None
    deadline_s: float | None
    deadline_clock: str


def _run_all(out_dir: str | os.PathLike[str], condition: str, policy: str, episodes: int, seed: int, workers: int,
             cameras: bool, size: int, timing: EpisodeTiming, progress: Callable[[int], None] | None,
             served: Any, policy_options: dict[str, Any], executor: str, address: str | None,
             chunks: tuple[int, int | None] = (1, None)) -> list[Path]:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    drawn = instances(condition, episodes, seed)
    specs = [EpisodeSpec(str(out_dir), condition, policy, i, seed, inst, cameras, size, timing.max_time_s,
                         tuple(sorted(policy_options.items())), timing.deadline_s, timing.deadline_clock,
                         chunk_length=chunks[0], actions_per_query=chunks[1])
             for i, inst in enumerate(drawn)]
    refuse_existing(out_dir, map(run_id_of, specs))
    # registered before any episode runs: the population fixes the denominators
    register_population(out_dir, population_name(condition, seed), population_records(condition, seed, drawn))
    if served is not None:  # one connection, episodes in turn (a connection is not picklable)
        return run_specs(specs, lambda spec: run_episode(spec, served), 1, progress)
    return run_specs(specs, run_episode, workers, progress, executor=executor, address=address)


def run_id_of(spec: EpisodeSpec) -> str:
    if spec.run_id is not None:
        return spec.run_id
    return f"weighing-{spec.condition}-{spec.policy}-s{spec.seed}-e{spec.index:03d}"


def instruction_of(instance: Any) -> str:
    return f"Bring the balance reading to {instance.target_g:.0f} g using the labeled standards, then stop."


def run_episode(spec: EpisodeSpec, served: Any = None) -> Path:
    """One episode, one run directory (``<out_dir>/<run_id>``); ``served`` is a connected
    policy (:class:`labrecord.sim.serving.Served`), else ``spec.policy`` names a baseline."""
    from labrecord.sim.policies import make_policy

    if served is not None:
        return record_with(spec, served.policy, served)
    policy = make_policy(spec.policy, spec.seed * 100003 + spec.index, **dict(spec.policy_options))
    if spec.chunk_length != 1:
        policy.use_chunks(spec.chunk_length)
    return record_with(spec, policy)


def record_with(spec: EpisodeSpec, policy: Any, served: Any = None) -> Path:
    """Record ``spec``'s episode driven by ``policy`` (already made and hooked); an episode
    that raises is closed with status ``aborted`` and the error goes on."""
    episode = open_episode(spec, policy, served)
    try:
        episode.owner.run_episode(0)
    except BaseException:
        episode.abort()
        raise
    return episode.close()


@dataclasses.dataclass
class OpenEpisode:
    """A run directory being written by its step owner (see :func:`open_episode`)."""

    spec: EpisodeSpec
    owner: Any
    writer: RunWriter
    env: Any

    def close(self) -> Path:
        """Scores, measurements and ``demo.hdf5``; the run's final status."""
        try:
            scores = self.owner.finish()
            _write_demo(self.writer, self.owner, self.owner.logs[-1], self.spec, scores)
        except BaseException:
            self.abort()
            raise
        self.writer.close(self.owner.status)
        return self.writer.dir

    def abort(self) -> None:
        self.writer.close("aborted")
        _BENCHES.clear()
        self.env.close()


def open_episode(spec: EpisodeSpec, policy: Any, served: Any = None) -> OpenEpisode:
    """Set the bench up for ``spec``'s instance and open its run directory with a step owner
    for ``policy``; the caller drives the owner (``run_episode`` or the push-mode calls)."""
    headless_rendering()
    from labrecord.recorders.loop import StepOwner
    from labrecord.recorders.online import ContractScorer
    from labrecord.scorers.contracts import get_contract
    from labrecord.sim.env import CAMERAS
    from labrecord.sim.scene import Placement, random_layout

    contract = get_contract("weighing")
    # cameras the policy reads are rendered even without videos
    cameras = CAMERAS if spec.cameras else tuple(c for c in CAMERAS if c in policy.capabilities.channels)
    env = _bench(policy.capabilities.action_spec, cameras, spec.size or 224)
    instance = dataclasses.replace(spec.instance, f_empty_n=env.f_empty_n)
    layout = random_layout(instance.start, np.random.default_rng(instance.layout_seed))
    env.reset(Placement(sample_g=instance.sample_g, initially_on_pan=instance.start, layout=layout))
    manifest = _manifest(spec, instance, policy, contract, layout, served)
    manifest.harness = harness_of(spec, policy, env, served)
    max_time = spec.max_time_s or MAX_TIME_S[spec.condition] + EXTRA_TIME_S.get(spec.policy, 0.0)
    scorer = ContractScorer(contract, instance, columns=contract_columns(), window_s=spec.deadline_s)
    env.display = scorer.display
    writer = RunWriter.create(spec.out_dir, manifest)
    try:
        owner = StepOwner(env, policy, scorer, writer, instruction=instruction_of(instance), max_time_s=max_time,
                          video=spec.cameras, tools=served.tools if served is not None else None,
                          deadline_s=spec.deadline_s, deadline_clock=spec.deadline_clock,
                          actions_per_query=spec.actions_per_query)
    except BaseException:
        writer.close("aborted")
        raise
    return OpenEpisode(spec, owner, writer, env)


#: one calibrated bench per process and configuration, reused across episodes (the model
#: load and the empty-pan calibration are the same for every episode)
_BENCHES: dict[tuple[str, tuple[str, ...], int], Any] = {}


def _bench(action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
    from labrecord.fileio import dumps
    from labrecord.sim.env import WeighingEnv

    key = (dumps(action_spec).decode(), cameras, size)
    env = _BENCHES.get(key)
    if env is None:
        env = _BENCHES[key] = WeighingEnv(action_spec, cameras=cameras, size=size)
        env.calibrate_empty()
    return env


def contract_columns() -> tuple[str, ...]:
    """The columns the weighing contract reads: ``step``, ``t``, the family's registered
    columns and the optional ``{w}_over_pan``, ``{w}_on_table``, ``{w}_z``, ``arm_speed``
    and ``robot_balance_force_n`` this bench writes (the audit reads them too)."""
    from labrecord.measurements import COMMON_COLUMNS, FAMILY_COLUMNS, WEIGHING_STANDARDS

    return (*COMMON_COLUMNS, *FAMILY_COLUMNS["weighing"],
            *(f"{w}_{name}" for w in WEIGHING_STANDARDS for name in ("over_pan", "on_table", "z")), "arm_speed",
            "robot_balance_force_n")


def harness_of(spec: EpisodeSpec, policy: Any, env: Any, served: Any = None) -> Any:
    """run.json ``harness``: how the chunks were executed and what the policy was shown
    (``spec`` of any family; only weighing episodes set the chunk options).

    ``chunk_length`` is known for the scripted policies (their plan rows per query) and
    left unknown for a served one; ``actions_per_query`` is the step owner's setting, else
    the whole accepted chunk (at most ``max_chunk`` rows)."""
    from labrecord.models import Harness

    caps = policy.capabilities
    cameras = [c for c in env.cameras if c in caps.channels]
    robot = env.public_state().get("robot") or {}
    profile = getattr(getattr(served, "policy", None), "profile", None)
    executed = getattr(spec, "actions_per_query", None)
    return Harness(actions_per_query=executed or caps.action_spec.max_chunk,
                   chunk_length=None if served is not None else getattr(spec, "chunk_length", 1),
                   cameras=cameras, image_size=[spec.size or 224] * 2 if cameras else None,
                   state_convention=getattr(profile, "state", None) or "robot:" + "+".join(sorted(robot)),
                   renderer=os.environ.get("MUJOCO_GL", "default") if cameras or spec.cameras else "none",
                   parallel_envs=1)  # each episode steps its own bench, whatever --workers is


def _manifest(spec: EpisodeSpec, instance: Any, policy: Any, contract: Any, layout: Any, served: Any = None) -> RunManifest:
    import mujoco

    from labrecord.sim.env import PHYSICS_HZ

    caps = policy.capabilities
    from labrecord.sim.assets import asset_revision, layout_revision
    from labrecord.sim.scene import PAN_SPOTS, TABLE_SPOTS

    return RunManifest(
        run_id=run_id_of(spec), created_at=utc_now(),
        task=Task(family="weighing", task_id=f"weighing-{spec.condition}", version=contract.version,
                  condition=spec.condition, variant=instance.variant(), contract_hash=contract.contract_hash()),
        system=System(name=caps.name, kind=caps.kind, revision=caps.revision, action_spec=caps.action_spec,  # type: ignore[arg-type]
                      observation=ObservationSpec(channels=list(caps.channels)), memory=caps.memory,
                      tools=list(served.preflight.hooks) if served is not None else [],
                      preflight=served.preflight if served is not None else None),
        intervention=(spec.intervention if spec.intervention is not None
                      else served.intervention if served is not None else Intervention()),
        evaluation=Evaluation(version="1", population=Population(name=spec.population or population_name(spec.condition, spec.seed),
                                                                 instance_id=spec.instance_id or instance_id_of(spec.index)),
                              budget=Budget(clock=spec.deadline_clock, max_steps=None,  # type: ignore[arg-type]
                                            response_deadline_s=spec.deadline_s)),
        seeds=Seeds(task_state=instance.task_seed, layout=instance.layout_seed, appearance=None,
                    policy=spec.seed * 100003 + spec.index),
        assets=Assets(scene=SCENE, revision=asset_revision(SCENE),
                      layout_hash=layout_revision(repr(("weighing", TABLE_SPOTS, PAN_SPOTS)))),
        physics=Physics(engine=f"mujoco-{mujoco.__version__}", physics_hz=PHYSICS_HZ,
                        control_hz=caps.action_spec.control_hz),
    )


def _write_demo(writer: RunWriter, owner: Any, log: Any, spec: EpisodeSpec, scores: Any, family: str = "weighing") -> None:
    """Pre-action obs, applied action, next obs per control step into ``demo.hdf5``."""
    from labrecord.demos import DemoWriter
    from labrecord.recorders.loop import flatten_state, privileged_keys

    final = flatten_state(owner.env.public_state())
    obs_rows = log.obs + [final]
    keys = sorted(obs_rows[0])
    obs = {k: np.stack([row[k] for row in obs_rows[:-1]]) for k in keys}
    next_obs = {k: np.stack([row[k] for row in obs_rows[1:]]) for k in keys}
    n = len(log.actions)
    success = scores.episodes[0]["physical_complete"] if scores.episodes else False
    dones = np.zeros(n, dtype=bool)
    dones[-1] = True
    rewards = np.zeros(n)
    rewards[-1] = float(success)
    t = np.asarray([ts[0] for ts in log.timestamps])
    caps = owner.caps
    with DemoWriter(writer.path(DEMO_FILE), {"env_name": f"labrecord-{family}-{spec.condition}",
                                             "labrecord": {"run_id": writer.manifest.run_id}}) as demo:
        demo.begin(writer.manifest.run_id, 0, control_hz=caps.action_spec.control_hz, action_units=caps.action_spec.units,
                   privileged_obs=privileged_keys(keys))
        demo.add_steps(obs, np.stack(log.actions), next_obs, rewards, dones,
                       timestamps={"t": t, "acquired": t, "delivered": t},
                       control_mask=np.asarray(log.control_mask))
        demo.end(bool(success), diagnostics={"scores": scores.episodes[0] if scores.episodes else {},
                                             "run_id": writer.manifest.run_id},
                 reason=scores.episodes[0]["reason"] if scores.episodes else None)
