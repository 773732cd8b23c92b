"""The one episode pipeline of every simulated family and study.

:func:`run_episodes` is the library entry point behind ``labrecord sim <family>``: it
draws the family's instances (its :class:`BenchTask`), registers them as population
``<family>-<condition>-s<seed>`` (``<out>/populations/<name>.jsonl``: an instance and a
checkpoint per episode, merged with what is already there) after every run folder is known
to be new, then fans the episodes out through the one parallel map
(:func:`labrecord.sim.fanout.run_specs`).  Each episode (:func:`open_episode`) takes the
family's calibrated bench for its configuration, resets it to the instance, opens the run
directory with a step owner and the family's scorer, and on closing writes scores,
measurements and ``demo.hdf5``.  The policy is a scripted baseline of the family (seeded
by :func:`policy_seed`), a served one (``openpi``, ``http``, ``lerobot``:
:mod:`labrecord.sim.serving`) or one whose actions are pushed in from outside
(:mod:`labrecord.sim.pushed`); the studies (:mod:`labrecord.sim.study`) open their
branches through the same :func:`open_episode`.

A family plugs in with one :class:`BenchTask` (``sim/<family>/task.py``), named by its
registry entry (:mod:`labrecord.families`).
"""
from __future__ import annotations

import dataclasses
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import RunManifest
from labrecord.registry import register_population
from labrecord.rundir import DEMO_FILE, RunWriter
from labrecord.sim.fanout import check_request, headless_rendering, refuse_existing, run_specs

DEFAULT_SIZE = 224


def policy_seed(seed: int, index: int) -> int:
    """The seed of episode ``index``'s policy in a call with ``seed``: ``seed · 100003 + index``."""
    return seed * 100003 + index


def instance_id_of(index: int) -> str:
    return f"i{index:03d}"


def population_name(family: str, condition: str, seed: int) -> str:
    return f"{family}-{condition}-s{seed}"


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
    size: int | None = DEFAULT_SIZE
    max_time_s: float | None = None
    policy_options: tuple[tuple[str, Any], ...] = ()
    deadline_s: float | None = None
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
    family: str = dataclasses.field(kw_only=True)


def run_id_of(spec: EpisodeSpec) -> str:
    if spec.run_id is not None:
        return spec.run_id
    return f"{spec.family}-{spec.condition}-{spec.policy}-s{spec.seed}-e{spec.index:03d}"


class BenchTask(ABC):
    """A family's bench as the pipeline uses it (``sim/<family>/task.py`` defines one,
    named by the family's registry entry).  Subclasses fill in the instance draw, the
    bench, its reset, the scorer and the instruction."""

    #: the family's name (its registry key and contract)
    name = ""
    #: the bench's registered cameras
    cameras: tuple[str, ...] = ()
    #: the decision a population's checkpoints are registered at
    checkpoint_decision = "d0"

    @abstractmethod
    def population(self, condition: str, episodes: int, seed: int) -> tuple[list[Any], list[Any]]:
        """``episodes`` drawn instances and the records registered for them (episode ``i``
        of a seed is the same instance for any episode count)."""

    @abstractmethod
    def max_time_s(self, condition: str, policy: str) -> float:
        """The simulated-time budget of one episode (s)."""

    @abstractmethod
    def make_policy(self, name: str, seed: int, instance: Any = None, **options: Any) -> Any:
        """The scripted baseline ``name`` seeded ``seed`` (for ``instance``, when it reads one)."""

    def bench_key(self, instance: Any) -> Hashable:
        """What the bench model depends on besides its action spec, cameras and size."""
        return None

    @abstractmethod
    def make_bench(self, instance: Any, action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
        """A new calibrated bench for ``instance``'s configuration."""

    def prepare(self, env: Any, instance: Any) -> Any:
        """Reset ``env`` to ``instance``; the instance as it is scored (with what the bench
        calibrated)."""
        env.reset(instance)
        return instance

    def scorer(self, contract: Any, instance: Any, columns: tuple[str, ...], window_s: float | None) -> Any:
        from labrecord.recorders.online import ContractScorer

        return ContractScorer(contract, instance, columns=columns, window_s=window_s)

    @abstractmethod
    def instruction(self, instance: Any) -> str:
        """The natural-language instruction of ``instance``."""

    @abstractmethod
    def layout_description(self) -> str:
        """The family's layout description written out: the candidate spots and regions its
        layout generator draws from (its revision goes into ``run.json``; the realized layout
        of one instance follows from the layout seed and is not a revision)."""

    def columns(self) -> tuple[str, ...]:
        """The measurement columns the contract reads (and the optional ones this bench writes)."""
        from labrecord.measurements import COMMON_COLUMNS, FAMILY_COLUMNS

        return (*COMMON_COLUMNS, *FAMILY_COLUMNS[self.name])

    def reference_executor(self) -> Callable[[Any, dict[str, Any]], Any] | None:
        """What starts the reference executor on an operation for an agent's ``call_skill``
        (``(op, state) -> SkillRun``), or None: the bench has none."""
        return None


def bench_task(family: str) -> BenchTask:
    """The :class:`BenchTask` of a registered family."""
    from labrecord.families import family as entry, load

    task = load(entry(family).bench)
    assert isinstance(task, BenchTask), task
    return task


# -- a call: many episodes -----------------------------------------------------------------

class EpisodeTiming(NamedTuple):
    """The time budget of every episode of one call: the longest episode and the response deadline."""

    max_time_s: float | None
    deadline_s: float | None
    deadline_clock: str


def run_episodes(family: str, out_dir: str | os.PathLike[str], condition: str = "basic", policy: str = "reference",
                 episodes: int | None = None, seed: int = 0, workers: int = 1, *, cameras: bool = True,
                 size: int | None = None, max_time_s: float | None = None,
                 progress: Callable[[int], None] | None = None, executor: str = "local", address: str | None = None,
                 deadline_s: float | None = None, deadline_clock: str = "sim", chunk_length: int = 1,
                 actions_per_query: int | None = None, **policy_options: Any) -> list[Path]:
    """Run ``episodes`` episodes of ``family`` (default: its registry entry's count);
    returns the run directories in episode order.

    Episodes run on ``workers`` processes of ``executor`` (:func:`labrecord.parallel.map`:
    ``local`` or ``ray``, with a Ray cluster ``address``); each episode's seeds depend on its
    index only, so every executor writes the same runs.

    ``policy`` is a scripted baseline of the family (its registry entry lists them) or a
    served policy (``openpi``, ``http``, ``lerobot``; ``policy_options`` are the keywords of
    :func:`labrecord.sim.serving.connect`).  ``size`` defaults to 224 px, or the served
    profile's render size.  ``chunk_length`` makes a scripted policy return that many plan
    rows per query (a family whose baselines can chunk); ``actions_per_query`` executes only
    the first rows of each chunk before the next query (both recorded in run.json
    ``harness``).  A served policy that stops answering mid-episode leaves that run with
    status ``service_fault`` (unresolved); the remaining episodes are still run and fault in
    turn if the service stays away.

    Example::

        runs = run_episodes("weighing", "runs", "basic", "reference", episodes=4, seed=0)
        runs = run_episodes("rack", "runs", "extended", "openpi", episodes=2, url="ws://127.0.0.1:8000")
    """
    from labrecord.families import SERVED_POLICIES, family as entry
    from labrecord.sim.serving import connect

    registered = entry(family)
    task = bench_task(family)
    if episodes is None:
        episodes = registered.default_episodes
    if deadline_clock not in ("sim", "wall"):
        raise LabrecordError(f"deadline clock {deadline_clock!r}: expected sim or wall")
    if deadline_s is not None and not deadline_s > 0:
        raise LabrecordError(f"deadline {deadline_s!r} s: expected a positive number of seconds")
    if chunk_length < 1 or (actions_per_query is not None and actions_per_query < 1):
        raise LabrecordError(f"chunk length {chunk_length} / actions per query {actions_per_query}: expected at least 1")
    if chunk_length != 1 and policy in SERVED_POLICIES:
        raise LabrecordError(f"--chunk-length applies to the scripted policies; {policy} returns its own chunks")
    check_request(condition, registered.conditions, episodes)
    if deadline_s is None:
        deadline_s = registered.default_deadline_s
    served = None
    if policy in SERVED_POLICIES:
        if workers > 1 or executor != "local":
            raise LabrecordError(f"--policy {policy}: a served policy runs its episodes in turn over one connection; "
                                 "use --workers 1 and the local executor")
        # the capability preflight, before anything is written
        served = connect(policy, cameras=task.cameras, skill=task.reference_executor(), **policy_options)
        size = size or served.render_size
    else:
        registered.policy(policy)
        probe = task.make_policy(policy, seed, **policy_options)  # fail fast on a bad option
        if chunk_length != 1 and not hasattr(probe, "use_chunks"):
            raise LabrecordError(f"--chunk-length: the {family} baselines return one plan row per query")
    timing = EpisodeTiming(max_time_s, deadline_s, deadline_clock)
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        drawn, records = task.population(condition, episodes, seed)
        specs = [EpisodeSpec(str(out_dir), condition, policy, i, seed, inst, cameras, size or DEFAULT_SIZE,
                             timing.max_time_s, tuple(sorted(policy_options.items())) if served is None else (),
                             timing.deadline_s, timing.deadline_clock, chunk_length=chunk_length,
                             actions_per_query=actions_per_query, family=family)
                 for i, inst in enumerate(drawn)]
        refuse_existing(out_dir, map(run_id_of, specs))
        # registered before any episode runs: the population fixes the denominators
        register_population(out_dir, population_name(family, condition, seed), records)
        if served is not None:  # one connection, episodes in turn (a connection is not picklable)
            return run_specs(specs, lambda spec: record_with(spec, served.policy, served), 1, progress)
        return run_specs(specs, run_episode, workers, progress, executor=executor, address=address)
    finally:
        if served is not None:
            served.close()


def run_episode(spec: EpisodeSpec) -> Path:
    """One episode of a scripted baseline, one run directory (``<out_dir>/<run_id>``)."""
    task = bench_task(spec.family)
    policy = task.make_policy(spec.policy, policy_seed(spec.seed, spec.index), spec.instance,
                              **dict(spec.policy_options))
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


# -- one episode ---------------------------------------------------------------------------

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
            write_demo(self.writer, self.owner, self.owner.logs[-1], self.spec, scores)
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
    """Set the family's bench up for ``spec``'s instance and open its run directory with a
    step owner for ``policy``; the caller drives the owner (``run_episode`` or the
    push-mode calls)."""
    headless_rendering()
    from labrecord.families import family as entry
    from labrecord.recorders.loop import StepOwner
    from labrecord.scorers.contracts import get_contract

    if spec.deadline_s is None:  # every episode has a response deadline: the family's by default
        spec = dataclasses.replace(spec, deadline_s=entry(spec.family).default_deadline_s)
    task = bench_task(spec.family)
    contract = get_contract(spec.family)
    # cameras the policy looks at are rendered even without videos
    looks_at = getattr(policy, "looks_at", policy.capabilities.channels)
    cameras = task.cameras if spec.cameras else tuple(c for c in task.cameras if c in looks_at)
    env = bench_for(task, spec.instance, policy.capabilities.action_spec, cameras, spec.size or DEFAULT_SIZE)
    instance = task.prepare(env, spec.instance)
    manifest = episode_manifest(spec, task, instance, policy, contract, served)
    manifest.harness = harness_of(spec, policy, env, served)
    max_time = spec.max_time_s or task.max_time_s(spec.condition, spec.policy)
    scorer = task.scorer(contract, instance, task.columns(), spec.deadline_s)
    writer = RunWriter.create(spec.out_dir, manifest)
    try:
        owner = StepOwner(env, policy, scorer, writer, instruction=task.instruction(instance), max_time_s=max_time,
                          video=spec.cameras, tools=served.tools if served is not None else None,
                          deadline_s=spec.deadline_s, deadline_clock=spec.deadline_clock,
                          actions_per_query=spec.actions_per_query)
    except BaseException:
        writer.close("aborted")
        raise
    return OpenEpisode(spec, owner, writer, env)


#: one calibrated bench per process and configuration, reused across episodes (the model
#: load and calibration are the same for every episode of a configuration)
_BENCHES: dict[Hashable, Any] = {}


def bench_for(task: BenchTask, instance: Any, action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
    """The process's bench of ``task`` for this configuration (made on first use)."""
    from labrecord.fileio import dumps

    key = (task.name, task.bench_key(instance), dumps(action_spec).decode(), cameras, size)
    env = _BENCHES.get(key)
    if env is None:
        env = _BENCHES[key] = task.make_bench(instance, action_spec, cameras, size)
    return env


def episode_manifest(spec: EpisodeSpec, task: BenchTask, instance: Any, policy: Any, contract: Any,
                     served: Any = None) -> RunManifest:
    """The run manifest of an episode: task, system (with a served policy's preflight),
    intervention, population, budget, seeds (policy seed :func:`policy_seed`), the scene
    with its asset revision and the layout revision of the family's layout description,
    and the physics rates."""
    import mujoco

    from labrecord.models import (
        Assets, Budget, Evaluation, Intervention, ObservationSpec, Physics, Population, Seeds, System, Task,
    )
    from labrecord.rundir import utc_now
    from labrecord.sim.assets import asset_revision, layout_revision
    from labrecord.sim.bench.scene import PHYSICS_HZ

    caps = policy.capabilities
    family = spec.family
    scene = f"labrecord.sim.assets/{family}.xml"
    return RunManifest(
        run_id=run_id_of(spec), created_at=utc_now(),
        task=Task(family=family, task_id=f"{family}-{spec.condition}", version=contract.version,
                  condition=spec.condition,  # type: ignore[arg-type]
                  variant=instance.variant(), contract_hash=contract.contract_hash()),
        system=System(name=caps.name, kind=caps.kind, revision=caps.revision, action_spec=caps.action_spec,
                      observation=ObservationSpec(channels=list(caps.channels)), memory=caps.memory,
                      tools=list(served.preflight.hooks) if served is not None else [],
                      preflight=served.preflight if served is not None else None),
        intervention=(spec.intervention if spec.intervention is not None
                      else served.intervention if served is not None else Intervention()),
        evaluation=Evaluation(version="1", population=Population(
            name=spec.population or population_name(family, spec.condition, spec.seed),
            instance_id=spec.instance_id or instance_id_of(spec.index)),
            budget=Budget(clock=spec.deadline_clock, max_steps=None,  # type: ignore[arg-type]
                          response_deadline_s=spec.deadline_s)),
        seeds=Seeds(task_state=instance.task_seed, layout=instance.layout_seed, appearance=None,
                    policy=policy_seed(spec.seed, spec.index)),
        assets=Assets(scene=scene, revision=asset_revision(scene), layout_hash=layout_revision(task.layout_description())),
        physics=Physics(engine=f"mujoco-{mujoco.__version__}", physics_hz=PHYSICS_HZ,
                        control_hz=caps.action_spec.control_hz),
    )


def harness_of(spec: EpisodeSpec, policy: Any, env: Any, served: Any = None) -> Any:
    """run.json ``harness``: how the chunks were executed and what the policy was shown.

    ``chunk_length`` is known for the scripted policies (their plan rows per query) and
    left unknown for a served one; ``actions_per_query`` is the step owner's setting, else
    the whole accepted chunk (at most ``max_chunk`` rows)."""
    from labrecord.models import Harness

    caps = policy.capabilities
    cameras = [c for c in env.cameras if c in caps.channels]
    robot = env.public_state().get("robot") or {}
    profile = getattr(getattr(served, "policy", None), "profile", None)
    return Harness(actions_per_query=spec.actions_per_query or caps.action_spec.max_chunk,
                   chunk_length=None if served is not None else spec.chunk_length,
                   cameras=cameras, image_size=[spec.size or DEFAULT_SIZE] * 2 if cameras else None,
                   state_convention=getattr(profile, "state", None) or "robot:" + "+".join(sorted(robot)),
                   renderer=os.environ.get("MUJOCO_GL", "default") if cameras or spec.cameras else "none",
                   parallel_envs=1)  # each episode steps its own bench, whatever --workers is


def write_demo(writer: RunWriter, owner: Any, log: Any, spec: EpisodeSpec, scores: Any) -> None:
    """Pre-action obs, applied action, next obs per control step into ``demo.hdf5``."""
    from labrecord.demos import DemoWriter
    from labrecord.recorders.loop import flatten_state, privileged_keys

    final = flatten_state(owner.public_state())
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
    with DemoWriter(writer.path(DEMO_FILE), {"env_name": f"labrecord-{spec.family}-{spec.condition}",
                                             "labrecord": {"run_id": writer.manifest.run_id}}) as demo:
        demo.begin(writer.manifest.run_id, 0, control_hz=caps.action_spec.control_hz, action_units=caps.action_spec.units,
                   privileged_obs=privileged_keys(keys))
        demo.add_steps(obs, np.stack(log.actions), next_obs, rewards, dones,
                       timestamps={"t": t, "acquired": t, "delivered": t},
                       control_mask=np.asarray(log.control_mask))
        demo.end(bool(success), diagnostics={"scores": scores.episodes[0] if scores.episodes else {},
                                             "run_id": writer.manifest.run_id},
                 reason=scores.episodes[0]["reason"] if scores.episodes else None)


# -- populations ---------------------------------------------------------------------------

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
