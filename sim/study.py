"""Matched Oracle studies on the weighing bench (Labference sec. 6, eq. 3).

:func:`run_oracle_study` is the library entry point behind ``labrecord study oracle
weighing``.  For each drawn instance (basic condition):

1. the *base branch* runs with no support; when the registered decision ``d0`` opens
   its first opportunity, the step owner's complete state is captured
   (:mod:`labrecord.recorders.checkpoint`); the run continues to its end, and the actions
   and measurement blocks of the next :data:`~labrecord.recorders.checkpoint.VERIFY_PERIODS`
   control periods are kept;
2. the checkpoint is *verified*: restored into the bench and re-stepped with those
   actions — every measurement column must be bitwise equal, the tracker state equal,
   the handoff reading valid and stable — and written with the result to
   ``<out>/checkpoints/<run_id>.ckpt``;
3. for each compatible support the *supported branch* runs on the same system, sensors,
   budget and reset protocol.  Its folder is an ordinary, complete run, so its prefix is
   re-simulated from the episode start; at ``d0`` the live state must equal the verified
   checkpoint (integration vector bitwise, tracker state, evidence version, history
   cursor), the checkpoint's physics is restored, and only then is the support applied.
   A checkpoint that failed verification, or a branch whose start differs from it,
   starts no supported run (that pair stays unresolved).

Supports built: ``decision:replace`` — the committed operation at the supported
opportunity is substituted by the contract's recommendation (the first operation of the
legal set), through the system's commit hook; an ``intervention`` event records the
opportunity, evidence version, payload id, original and substituted operations.  Other
(site, mode) pairs, and systems without the hook, get a ``not_compatible``
:class:`~labrecord.models.preflight.Compatibility` record and no registered pair.

Populations: ``oracle-weighing-basic-<policy>-s<seed>`` holds, per instance, the base
instance ``iNNN`` and one supported instance ``iNNN.<site>-<mode>`` per support (same
drawn fields), a ``d0`` checkpoint for each, and the ``oracle_pair`` records — all
registered before any episode runs, so ``score`` reports Δ (``gain.*``) unchanged.
"""
from __future__ import annotations

import copy
import dataclasses
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labrecord import parallel
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_write_bytes, dumps_pretty

SITES = ("semantic", "decision", "geometry", "skill")
MODES = ("assist", "replace")
#: the supports this bench implements -> (oracle name, interface a system must offer)
IMPLEMENTED: dict[tuple[str, str], tuple[str, str]] = {("decision", "replace"): ("contract-legal", "commit_hook")}
STUDIES_DIR = "studies"
CONDITION = "basic"


def parse_support(text: str) -> tuple[str, str]:
    """``SITE:MODE`` -> (site, mode)."""
    site, sep, mode = text.partition(":")
    if not sep or site not in SITES or mode not in MODES:
        raise LabrecordError(f"support {text!r}: expected SITE:MODE with SITE in {'|'.join(SITES)} "
                             f"and MODE in {'|'.join(MODES)}")
    return site, mode


def compatibility(policy: Any, site: str, mode: str) -> Any:
    """The compatibility record of ``policy`` for one support (the system's declared hooks)."""
    from labrecord.models.preflight import Compatibility

    name = policy.capabilities.name
    implemented = IMPLEMENTED.get((site, mode))
    if implemented is None:
        return Compatibility(system=name, site=site, mode=mode, status="not_compatible",
                             reason=f"{site}:{mode} is not delivered by this bench")
    oracle, hook = implemented
    if not hasattr(policy, hook):
        return Compatibility(system=name, site=site, mode=mode, status="not_compatible", interface=hook,
                             reason=f"system {name!r} offers no {hook}")
    return Compatibility(system=name, site=site, mode=mode, status="compatible", interface=hook)


def population_of(policy: str, seed: int) -> str:
    return f"oracle-weighing-{CONDITION}-{policy}-s{seed}"


def supported_instance(base: str, site: str, mode: str) -> str:
    return f"{base}.{site}-{mode}"


def pair_id_of(base: str, site: str, mode: str) -> str:
    return f"{base}/{site}:{mode}"


@dataclasses.dataclass(frozen=True)
class StudyTask:
    """One instance of a study (picklable: runs in a worker)."""

    out_dir: str
    policy: str
    seed: int
    index: int
    instance: Any
    supports: tuple[tuple[str, str], ...]
    policy_options: tuple[tuple[str, Any], ...] = ()
    verify_periods: int = 10


def run_oracle_study(out_dir: str | Path, policy: str, supports: list[tuple[str, str]], instances: int = 16,
                     seed: int = 0, workers: int = 1, *, progress: Callable[[int], None] | None = None,
                     verify_periods: int | None = None, executor: str = "local", address: str | None = None,
                     **policy_options: Any) -> dict[str, Any]:
    """Run a matched Oracle study; returns the study summary (also written to
    ``<out>/studies/<population>.json``).

    Example::

        summary = run_oracle_study("runs", "fixed-preference", [("decision", "replace")], instances=4)
    """
    from labrecord.recorders.checkpoint import VERIFY_PERIODS
    from labrecord.sim.policies import POLICIES, make_policy
    from labrecord.sim.weighing import instance_id_of, instances as draw, population_records, register_population

    if policy not in POLICIES:
        raise LabrecordError(f"--policy {policy}: a study runs a scripted system ({', '.join(POLICIES)}); "
                             "served policies are not checkpointable here yet")
    if not supports:
        raise LabrecordError("give at least one --support SITE:MODE")
    if len(set(supports)) != len(supports):
        raise LabrecordError("a --support is given twice")
    probe = make_policy(policy, seed, **policy_options)
    compat = [compatibility(probe, site, mode) for site, mode in supports]
    usable = tuple((c.site, c.mode) for c in compat if c.status == "compatible")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    population = population_of(policy, seed)
    drawn = draw(CONDITION, instances, seed)
    tasks = [StudyTask(str(out), policy, seed, i, inst, usable, tuple(sorted(policy_options.items())),
                       verify_periods or VERIFY_PERIODS) for i, inst in enumerate(drawn)]
    for task in tasks:
        for run_id in _run_ids(task):
            if (out / run_id).exists():
                raise LabrecordError(f"{out / run_id}: run directory already exists; choose another --out or --seed")
    register_population(out, population, _population_records(drawn, usable, population_records, instance_id_of))
    advance = progress or (lambda n=1: None)
    results = []
    for result in parallel.map(run_instance, tasks, workers=workers, executor=executor, address=address):
        results.append(result)
        advance(1)
    summary = _summary(population, policy, seed, compat, results)
    folder = out / STUDIES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / f"{population}.json", dumps_pretty(summary))
    return summary


def _population_records(drawn: list[Any], supports: tuple[tuple[str, str], ...], base_records: Any,
                        instance_id_of: Any) -> list[Any]:
    from labrecord.models import Checkpoint, Instance, OraclePair

    records: list[Any] = []
    base = base_records(CONDITION, 0, drawn)  # instance + d0 checkpoint per instance
    for record in base:
        records.append(record)
        if isinstance(record, Checkpoint):
            for site, mode in supports:
                records.append(Checkpoint(instance_id=supported_instance(record.instance_id, site, mode),
                                          decision=record.decision))
        elif isinstance(record, Instance):
            for site, mode in supports:
                records.append(Instance(instance_id=supported_instance(record.instance_id, site, mode),
                                        task_id=record.task_id, condition=record.condition, fields=record.fields))
    for index in range(len(drawn)):
        base_id = instance_id_of(index)
        for site, mode in supports:
            records.append(OraclePair(pair_id=pair_id_of(base_id, site, mode), base=base_id,
                                      supported=supported_instance(base_id, site, mode), mode=mode,  # type: ignore[arg-type]
                                      oracle=IMPLEMENTED[(site, mode)][0], site=site))  # type: ignore[arg-type]
    return records


def _run_ids(task: StudyTask) -> list[str]:
    stem = f"oracle-weighing-{task.policy}-s{task.seed}-e{task.index:03d}"
    return [f"{stem}-base"] + [f"{stem}-{site}-{mode}" for site, mode in task.supports]


def _spec(task: StudyTask, site: str | None, mode: str | None) -> Any:
    from labrecord.models import Intervention
    from labrecord.sim.weighing import EpisodeSpec, instance_id_of

    base_id = instance_id_of(task.index)
    stem = f"oracle-weighing-{task.policy}-s{task.seed}-e{task.index:03d}"
    if site is None:
        run_id, instance_id = f"{stem}-base", base_id
        intervention = Intervention(mode="none", pair_id=None, branch="base")
    else:
        run_id, instance_id = f"{stem}-{site}-{mode}", supported_instance(base_id, site, mode)  # type: ignore[arg-type]
        intervention = Intervention(mode=mode, site=site, oracle=IMPLEMENTED[(site, mode)][0],  # type: ignore[arg-type]
                                    pair_id=pair_id_of(base_id, site, mode), branch="supported")  # type: ignore[arg-type]
    return EpisodeSpec(task.out_dir, CONDITION, task.policy, task.index, task.seed, task.instance, cameras=False,
                       size=64, policy_options=task.policy_options, run_id=run_id,
                       population=population_of(task.policy, task.seed), instance_id=instance_id,
                       intervention=intervention)


def _drive(owner: Any, on_open: Callable[[Any], None], after_step: Callable[[], None] | None = None) -> None:
    """``run_episode`` through the push-mode calls, with ``on_open(observation)`` called
    once when the registered decision ``d0`` opens its first opportunity."""
    from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
    from labrecord.sim.weighing import CHECKPOINT_DECISION

    owner.begin(0)
    fired = False
    while True:
        before = owner.scorer.tracker.current
        observation = owner.observe()
        current = owner.scorer.tracker.current
        if (observation is not None and not fired and current is not None and current is not before
                and current.decision == CHECKPOINT_DECISION):
            fired = True
            on_open(observation)
        if observation is not None and owner.wants_action:
            wall = time.perf_counter()
            try:
                chunk = owner.policy.act(observation)
            except InterfaceViolation as violation:
                owner.push_violation(observation, violation, time.perf_counter() - wall)
            except PolicyServiceFault as fault:
                owner.fault(fault)
                break
            else:
                owner.push(observation, chunk, time.perf_counter() - wall)
        done = owner.step()
        if after_step is not None:
            after_step()
        if done:
            break
    owner.end()


def run_instance(task: StudyTask) -> dict[str, Any]:
    """Base branch + checkpoint + verification + supported branches of one instance."""
    from labrecord.recorders.checkpoint import CHECKPOINTS_DIR, capture, verify, write_checkpoint
    from labrecord.sim.policies import make_policy
    from labrecord.sim.weighing import instance_id_of, open_episode

    base_spec = _spec(task, None, None)
    policy_seed = task.seed * 100003 + task.index
    episode = open_episode(base_spec, make_policy(task.policy, policy_seed, **dict(task.policy_options)))
    import mujoco  # after open_episode chose the offscreen renderer

    engine = f"mujoco-{mujoco.__version__}"
    owner = episode.owner
    taken: dict[str, Any] = {}

    def on_open(observation: Any) -> None:
        taken["checkpoint"] = capture(owner, observation, instance_id=instance_id_of(task.index), engine=engine)
        taken["blocks0"], taken["actions0"] = len(owner.blocks), len(owner._log.actions)

    def after_step() -> None:
        if "blocks0" in taken and "tracker_after" not in taken and len(owner.blocks) >= taken["blocks0"] + task.verify_periods:
            taken["tracker_after"] = copy.deepcopy(owner.scorer.tracker.state)

    try:
        _drive(owner, on_open, after_step)
    except BaseException:
        episode.abort()
        raise
    base_path = episode.close()
    result: dict[str, Any] = {"index": task.index, "instance_id": instance_id_of(task.index), "base": base_path.name,
                              "checkpoint": None, "verified": False, "branches": {}}
    checkpoint = taken.get("checkpoint")
    if checkpoint is None:
        result["reason"] = "the registered decision d0 never opened in the base branch"
        return result
    k0, a0 = taken["blocks0"], taken["actions0"]
    recorded = owner.blocks[k0:k0 + task.verify_periods]
    blocks = [{k: v for k, v in b.items() if not k.startswith("cmd_")} for b in recorded]
    # the applied rows exactly, from the command columns (the demonstration keeps them as float32)
    dim = len(owner.logs[-1].actions[a0]) if recorded else 0
    actions = [np.array([b[f"cmd_{i}"][0] for i in range(dim)]) for b in recorded]
    tracker_after = taken.get("tracker_after", owner.scorer.tracker.state)
    checkpoint.header.verification = verify(episode.env, owner.scorer, checkpoint, actions, blocks, tracker_after,
                                            owner.steps_per_control)
    path = write_checkpoint(Path(task.out_dir) / CHECKPOINTS_DIR / f"{base_path.name}.ckpt", checkpoint)
    result.update(checkpoint=str(path), verified=checkpoint.header.verified,
                  verification=_builtins(checkpoint.header.verification))
    if not checkpoint.header.verified:
        result["reason"] = "checkpoint failed verification: no supported branch started"
        return result
    for site, mode in task.supports:
        result["branches"][f"{site}:{mode}"] = _supported_branch(task, site, mode, checkpoint, policy_seed)
    return result


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def _supported_branch(task: StudyTask, site: str, mode: str, checkpoint: Any, policy_seed: int) -> dict[str, Any]:
    from labrecord.models.events import InterventionEvent
    from labrecord.recorders.checkpoint import restore_physics
    from labrecord.sim.policies import make_policy
    from labrecord.sim.weighing import open_episode

    policy = make_policy(task.policy, policy_seed, **dict(task.policy_options))
    episode = open_episode(_spec(task, site, mode), policy)
    owner = episode.owner
    record: dict[str, Any] = {"run": episode.writer.dir.name, "started": False}

    def on_open(observation: Any) -> None:
        mismatch = _start_mismatch(owner, checkpoint)
        if mismatch is not None:
            record["reason"] = f"branch start differs from the verified checkpoint: {mismatch}"
            raise _BranchRefused(mismatch)
        restore_physics(owner.env, checkpoint)
        record["started"] = True
        opp, version = checkpoint.header.opp, checkpoint.header.evidence_version

        def hook(op: Any, seen: Any) -> Any:
            current = owner.scorer.tracker.current
            if "original" in record or current is None or current.opp != opp:
                return op
            legal = owner.scorer.legal.get(opp) or []
            if not legal:
                return op
            recommended = legal[0]
            record.update(original=str(op), substituted=str(recommended), substitution=op != recommended)
            owner.emit(InterventionEvent, t=owner.env.time, fields={
                "opp": opp, "evidence_version": version, "mode": mode, "site": site,
                "payload_id": f"{checkpoint.header.run_id}/{opp}/legal[0]", "original": op,
                "substituted": recommended, "delivered": True})
            return recommended

        policy.commit_hook = hook

    try:
        _drive(owner, on_open)
    except _BranchRefused:
        episode.abort()
        return record
    except BaseException:
        episode.abort()
        raise
    episode.close()
    record.setdefault("substitution", None)
    # the first native choice at the supported opportunity after the delivery
    chosen = [c["op"] for c in owner.scorer.first_choices if c["opp"] == checkpoint.header.opp]
    record["first_choice"] = chosen[0] if chosen else None
    return record


class _BranchRefused(Exception):
    pass


def _start_mismatch(owner: Any, checkpoint: Any) -> str | None:
    """Why the live state at the branch start is not the checkpoint's, or None."""
    import hashlib

    header = checkpoint.header
    live = hashlib.sha256(np.ascontiguousarray(owner.env.state_vector()).tobytes()).hexdigest()
    current = owner.scorer.tracker.current
    checks = [("physics state", live, header.physics_sha256),
              ("configuration", owner.env.state_digest(), header.config_digest),
              ("opportunity", current.opp if current else None, header.opp),
              ("evidence version", int(current.evidence_version) if current else None, header.evidence_version),
              ("event cursor", owner.writer.next_seq, header.next_seq),
              ("observation cursor", owner._obs_count, header.observations),
              ("physics step", owner._step, header.step)]
    for name, have, want in checks:
        if have != want:
            return f"{name} {have!r} != {want!r}"
    if pickle.dumps(owner.scorer.tracker.state) != pickle.dumps(checkpoint.state["scorer"]["tracker"].state):
        return "tracker state"
    return None


def _summary(population: str, policy: str, seed: int, compat: list[Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Delivery and substitution beside the pairs (sec. 6.3): agreement is null under replace."""
    import msgspec

    supports = {}
    for c in compat:
        key = f"{c.site}:{c.mode}"
        if c.status != "compatible":
            supports[key] = {"status": "not compatible", "reason": c.reason}
            continue
        branches = [r["branches"].get(key) for r in results]
        started = [b for b in branches if b and b["started"]]
        delivered = [b for b in started if "original" in b]
        substituted = sum(1 for b in delivered if b["substitution"])
        supports[key] = {
            "status": "compatible", "pairs": len(results), "started": len(started), "delivered": len(delivered),
            "substitution_share": substituted / len(delivered) if delivered else None,
            "substituted": substituted, "agreement": None,
        }
    return {"population": population, "policy": policy, "seed": seed, "condition": CONDITION,
            "compatibility": [msgspec.to_builtins(c) for c in compat], "supports": supports,
            "checkpoints_verified": sum(1 for r in results if r["verified"]), "instances": len(results),
            "results": results}


# -- answer-changing pairs (B, P_state) ---------------------------------------------------
def pairs_population_of(seed: int) -> str:
    return f"pairs-weighing-{CONDITION}-s{seed}"


def partner_of(instance: Any) -> Any:
    """The answer-changing partner of a basic instance: the same target, layout and seeds,
    the sample mass changed so that the needed standard is the next one in
    ``w10 → w20 → w50 → w100 → w10`` order — the only difference, and it changes the
    legal set at ``d0`` from ``[add(goal)]`` to ``[add(next)]`` (disjoint)."""
    from labrecord.scorers.contracts.weighing import MASS_G, STANDARDS

    (goal,) = instance.goal
    other = STANDARDS[(STANDARDS.index(goal) + 1) % len(STANDARDS)]
    return dataclasses.replace(instance, goal=frozenset({other}), sample_g=float(instance.target_g - MASS_G[other]))


def run_pairs_study(out_dir: str | Path, policy: str, pairs: int = 8, seed: int = 0, workers: int = 1, *,
                    progress: Callable[[int], None] | None = None, executor: str = "local", address: str | None = None,
                    **policy_options: Any) -> dict[str, Any]:
    """Answer-changing pairs for P_state: per drawn basic instance ``iNNN`` its partner
    (:func:`partner_of`) as members ``iNNN.a`` / ``iNNN.b`` of pair ``pNNN``; the population
    ``pairs-weighing-basic-s<seed>`` (instances, ``d0`` checkpoints, ``pair`` records) is
    registered before any episode runs; one ordinary run folder per member.

    Example::

        summary = run_pairs_study("runs", "fixed-preference", pairs=4)
    """
    from labrecord.models import Checkpoint, Instance, Intervention, Pair
    from labrecord.sim.policies import POLICIES
    from labrecord.sim.weighing import EpisodeSpec, instances as draw, register_population, run_episode

    if policy not in POLICIES:
        raise LabrecordError(f"--policy {policy}: expected one of {', '.join(POLICIES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    population = pairs_population_of(seed)
    records: list[Any] = []
    specs = []
    for index, base in enumerate(draw(CONDITION, pairs, seed)):
        members = []
        for side, inst in (("a", base), ("b", partner_of(base))):
            instance_id = f"i{index:03d}.{side}"
            members.append(instance_id)
            fields = {k: v for k, v in inst.variant().items() if k != "f_empty_n"}
            records += [Instance(instance_id=instance_id, task_id=f"weighing-{CONDITION}", condition=CONDITION, fields=fields),
                        Checkpoint(instance_id=instance_id, decision="d0")]
            specs.append(EpisodeSpec(str(out), CONDITION, policy, index, seed, inst, cameras=False, size=64,
                                     policy_options=tuple(sorted(policy_options.items())),
                                     run_id=f"pairs-weighing-{policy}-s{seed}-e{index:03d}{side}",
                                     population=population, instance_id=instance_id, intervention=Intervention()))
        records.append(Pair(pair_id=f"p{index:03d}", members=members, kind="answer_changing"))
    for spec in specs:
        if (out / spec.run_id).exists():
            raise LabrecordError(f"{out / spec.run_id}: run directory already exists; choose another --out or --seed")
    register_population(out, population, records)
    advance = progress or (lambda n=1: None)
    runs = []
    for path in parallel.map(run_episode, specs, workers=workers, executor=executor, address=address):
        runs.append(path.name)
        advance(1)
    return {"population": population, "policy": policy, "seed": seed, "pairs": pairs, "runs": runs}


# -- fixed-subgoal starts (K, E_fixed) ----------------------------------------------------
FIXED_ORACLE = "fixed-subgoal"


def fixed_population_of(policy: str, seed: int) -> str:
    return f"fixed-weighing-{CONDITION}-{policy}-s{seed}"


def _supply_subgoal(subgoal: Any) -> Callable[[Any, Any], Any]:
    """A commit hook that hands the system its correct subgoal as its first committed
    operation (standard geometry: the system's own executor carries it out); later
    commitments are the system's own."""
    given: list[Any] = []

    def hook(op: Any, observation: Any) -> Any:
        if given:
            return op
        given.append(op)
        return subgoal

    return hook


def run_fixed_episode(spec: Any) -> Path:
    """One fixed-start episode: the system's commit hook receives the correct subgoal."""
    from labrecord.models import Operation
    from labrecord.sim.policies import make_policy
    from labrecord.sim.weighing import open_episode

    policy = make_policy(spec.policy, spec.seed * 100003 + spec.index, **dict(spec.policy_options))
    (goal,) = spec.instance.goal
    policy.commit_hook = _supply_subgoal(Operation("add", goal, "pan"))
    episode = open_episode(spec, policy)
    try:
        episode.owner.run_episode(0)
    except BaseException:
        episode.abort()
        raise
    return episode.close()


def run_fixed_starts_study(out_dir: str | Path, policy: str, starts: int = 8, seed: int = 0, workers: int = 1, *,
                           progress: Callable[[int], None] | None = None, executor: str = "local",
                           address: str | None = None, **policy_options: Any) -> dict[str, Any]:
    """Fixed-subgoal starts K for E_fixed (eq. 6): per drawn basic instance a
    ``fixed_start`` whose subgoal is the obligation ``add:<goal>``; the correct subgoal is
    supplied through the system's commit hook (intervention ``replace`` / ``decision`` /
    ``fixed-subgoal``) and the physical execution is observed: E_fixed counts the runs
    with a ``confirm`` of that obligation.

    Example::

        summary = run_fixed_starts_study("runs", "reference", starts=4)
    """
    from labrecord.models import FixedStart, Instance, Intervention
    from labrecord.sim.policies import POLICIES
    from labrecord.sim.weighing import EpisodeSpec, instances as draw, register_population

    if policy not in POLICIES:
        raise LabrecordError(f"--policy {policy}: a fixed-start study needs a system with a commit hook "
                             f"({', '.join(POLICIES)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    population = fixed_population_of(policy, seed)
    records: list[Any] = []
    specs = []
    for index, inst in enumerate(draw(CONDITION, starts, seed)):
        instance_id = f"i{index:03d}"
        (goal,) = inst.goal
        fields = {k: v for k, v in inst.variant().items() if k != "f_empty_n"}
        records += [Instance(instance_id=instance_id, task_id=f"weighing-{CONDITION}", condition=CONDITION, fields=fields),
                    FixedStart(instance_id=instance_id, subgoal=f"add:{goal}")]
        specs.append(EpisodeSpec(str(out), CONDITION, policy, index, seed, inst, cameras=False, size=64,
                                 policy_options=tuple(sorted(policy_options.items())),
                                 run_id=f"fixed-weighing-{policy}-s{seed}-e{index:03d}", population=population,
                                 instance_id=instance_id,
                                 intervention=Intervention(mode="replace", site="decision", oracle=FIXED_ORACLE)))
    for spec in specs:
        if (out / spec.run_id).exists():
            raise LabrecordError(f"{out / spec.run_id}: run directory already exists; choose another --out or --seed")
    register_population(out, population, records)
    advance = progress or (lambda n=1: None)
    runs = []
    for path in parallel.map(run_fixed_episode, specs, workers=workers, executor=executor, address=address):
        runs.append(path.name)
        advance(1)
    return {"population": population, "policy": policy, "seed": seed, "starts": starts, "runs": runs}
