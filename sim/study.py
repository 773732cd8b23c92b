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

Supports built (:data:`IMPLEMENTED`), each bound to the supported opportunity and its
evidence version, its payload checked by the task contract's
:meth:`~labrecord.scorers.contracts.base.TaskContract.payload_scope` before delivery:

* ``decision:replace`` — the committed operation is substituted by the contract's
  recommendation (the registered selection rule: the first operation of the sorted legal
  set) through the system's commit hook;
* ``decision:assist`` — that recommendation is delivered as structured data in the
  Oracle context of the observation (``state["oracle"]["decision"]``); the system still
  chooses;
* ``semantic:assist`` — the displayed reading and its stability indicator at the handoff
  (``state["oracle"]["semantic"]``);
* ``skill:replace`` — the reference executor (:func:`labrecord.sim.weighing.executor.transfer_plan`)
  carries out the operation the system selected at the supported opportunity — right or
  wrong — through the system's executor hook, instead of the system's own motion (an
  execution-supported condition, part of the result identity);
* ``geometry:assist`` — every authorized candidate frame (the contract's
  ``geometry_frames``: the standards' and the pan's positions at the handoff, never the
  sample's) as structured data (``state["oracle"]["geometry"]["frames"]``); the system
  still localizes and chooses;
* ``geometry:replace`` — the target the system selected at the supported opportunity is
  kept and only its localization is corrected: through the system's geometry hook its
  own estimate of that target's position (the original) is replaced by the true frame
  (the substituted) before its executor plans the transfer.  The estimate is also written
  as the system's ``geometry`` report of the target, so ``score`` gives its e_p.

Assist payloads ride on every query of the supported opportunity until its first choice;
the receipt is the first delivered observation that carried them.  Each delivery is an
``intervention`` event and an entry of the run's ``intervention.supports`` list (payload
id, original and substituted outputs, receipt, first subsequent choice).  A system
declares the supports it can consume (``oracle_inputs``); any other (site, mode) gets a
``not_compatible`` :class:`~labrecord.models.preflight.Compatibility` record and no
registered pair.  Given two compatible supports at two sites, the study also runs their
*joint* branch, so the interaction contrast has complete matched sets.

Populations: ``oracle-weighing-basic-<policy>-s<seed>`` holds, per instance, the base
instance ``iNNN`` and one supported instance ``iNNN.<site>-<mode>`` per support (a joint
one: ``iNNN.<site>-<mode>.<site>-<mode>``; same drawn fields), a ``d0`` checkpoint for
each, and the ``oracle_pair`` records — all registered before any episode runs, so
``score`` reports Δ (``gain.*``), agreement and substitution share unchanged.
"""
from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.recorders.loop import EpisodeObserver
from labrecord.recorders.policy import ORACLE_CHANNEL
from labrecord.sim.fanout import refuse_existing, run_specs
from labrecord.families import MODES, SITES
from labrecord.fileio import atomic_write_bytes, dumps_pretty

#: the supports this bench delivers -> (oracle name, the interface it goes through)
IMPLEMENTED: dict[tuple[str, str], tuple[str, str]] = {
    ("decision", "replace"): ("contract-legal", "commit_hook"),
    ("decision", "assist"): ("contract-recommendation", "oracle_context"),
    ("semantic", "assist"): ("displayed-reading", "oracle_context"),
    ("skill", "replace"): ("reference-executor", "executor_hook"),
    ("geometry", "assist"): ("candidate-frames", "oracle_context"),
    ("geometry", "replace"): ("target-localization", "geometry_hook"),
}
STUDIES_DIR = "studies"
CONDITION = "basic"
#: the bench the answer-changing-pair and fixed-start studies run on (their partners and
#: subgoals are the weighing contract's); Oracle studies run on every family whose
#: registry entry declares supports
FAMILY = "weighing"

Support = tuple[str, str]
#: a branch's supports: () base, one support, or a joint pair of two
Branch = tuple[Support, ...]


def check_family(family: str, study: str) -> Any:
    """The registry entry of ``family``, refused unless it declares ``study``."""
    from labrecord.families import family as entry

    registered = entry(family)
    if study not in registered.studies:
        raise LabrecordError(f"{family}: no {study} study is built on this bench (its registry entry declares "
                             f"{', '.join(registered.studies) or 'none'})")
    return registered


def parse_support(text: str) -> Support:
    """``SITE:MODE`` -> (site, mode); a (site, mode) this bench does not deliver is refused."""
    site, sep, mode = text.partition(":")
    if not sep or site not in SITES or mode not in MODES:
        raise LabrecordError(f"support {text!r}: expected SITE:MODE with SITE in {'|'.join(SITES)} "
                             f"and MODE in {'|'.join(MODES)}")
    if (site, mode) not in IMPLEMENTED:
        built = ", ".join(f"{s}:{m}" for s, m in IMPLEMENTED)
        raise LabrecordError(f"support {text}: not built on the weighing bench (built: {built})")
    return site, mode


def compatibility(policy: Any, site: str, mode: str) -> Any:
    """The compatibility record of ``policy`` for one support: what the system declares it
    can consume (``oracle_inputs``) and the hook the support needs."""
    from labrecord.models.preflight import Compatibility

    name = policy.capabilities.name
    implemented = IMPLEMENTED.get((site, mode))
    if implemented is None:
        return Compatibility(system=name, site=site, mode=mode, status="not_compatible",
                             reason=f"{site}:{mode} is not delivered by this bench")
    _, interface = implemented
    accepted: frozenset[tuple[str, str]] = getattr(policy, "oracle_inputs", frozenset())
    if (site, mode) not in accepted or (interface.endswith("_hook") and not hasattr(policy, interface)):
        return Compatibility(system=name, site=site, mode=mode, status="not_compatible", interface=interface,
                             reason=f"system {name!r} declares no input for {site}:{mode}")
    return Compatibility(system=name, site=site, mode=mode, status="compatible", interface=interface)


def joint_compatibility(policy: Any, branch: Branch) -> Any:
    """A joint support is compatible when each of its parts is."""
    from labrecord.models.preflight import Compatibility

    parts = [compatibility(policy, site, mode) for site, mode in branch]
    refused = [c for c in parts if c.status != "compatible"]
    return Compatibility(system=policy.capabilities.name, site="+".join(s for s, _ in branch),
                         mode="+".join(m for _, m in branch),
                         status="not_compatible" if refused else "compatible",
                         interface="+".join(c.interface or "" for c in parts),
                         reason=refused[0].reason if refused else None)


def population_of(family: str, condition: str, policy: str, seed: int) -> str:
    return f"oracle-{family}-{condition}-{policy}-s{seed}"


def branch_key(branch: Branch) -> str:
    """``semantic:assist`` or, joint, ``semantic:assist+decision:replace``."""
    return "+".join(f"{site}:{mode}" for site, mode in branch)


def supported_instance(base: str, branch: Branch) -> str:
    return ".".join([base, *(f"{site}-{mode}" for site, mode in branch)])


def pair_id_of(base: str, branch: Branch) -> str:
    return f"{base}/{branch_key(branch)}"


def oracle_of(branch: Branch) -> str:
    return "+".join(IMPLEMENTED[s][0] for s in branch)


def branches_of(supports: list[Support] | tuple[Support, ...]) -> list[Branch]:
    """The supported branches of a study: each support alone and, for two supports at two
    sites, their joint branch."""
    branches: list[Branch] = [(s,) for s in supports]
    if len(supports) == 2 and supports[0][0] != supports[1][0]:
        branches.append(tuple(supports))
    return branches


@dataclasses.dataclass(frozen=True)
class StudyTask:
    """One instance of a study (picklable: runs in a worker)."""

    out_dir: str
    policy: str
    seed: int
    index: int
    instance: Any
    branches: tuple[Branch, ...]
    policy_options: tuple[tuple[str, Any], ...] = ()
    verify_periods: int = 10
    family: str = FAMILY
    condition: str = CONDITION
    max_time_s: float | None = None


def run_oracle_study(out_dir: str | Path, policy: str, supports: list[Support], instances: int = 16,
                     seed: int = 0, workers: int = 1, *, progress: Callable[[int], None] | None = None,
                     verify_periods: int | None = None, executor: str = "local", address: str | None = None,
                     family: str = FAMILY, max_time_s: float | None = None,
                     served: dict[str, Any] | None = None, **policy_options: Any) -> dict[str, Any]:
    """Run a matched Oracle study; returns the study summary (also written to
    ``<out>/studies/<population>.json``).

    ``policy`` may be a served policy (``openpi``; ``served`` holds the keywords of
    :func:`labrecord.sim.serving.connect`) whose preflight declares it stateless between
    queries; any other is refused naming why.  Its instances run in turn over one
    connection; each checkpoint also holds the adapter's client session, verification
    re-queries the server over the window and compares the actions with the recorded ones.

    Example::

        summary = run_oracle_study("runs", "fixed-preference", [("decision", "replace")], instances=4)
    """
    from labrecord.recorders.checkpoint import VERIFY_PERIODS
    from labrecord.registry import register_population
    from labrecord.sim.episodes import bench_task

    from labrecord.families import SERVED_POLICIES

    registered = check_family(family, "oracle")
    bench = bench_task(family)
    if policy not in registered.policies and policy not in SERVED_POLICIES:
        raise LabrecordError(f"--policy {policy}: expected a scripted system ({', '.join(registered.policies)}) "
                             f"or a served one ({', '.join(SERVED_POLICIES)})")
    if not supports:
        raise LabrecordError("give at least one --support SITE:MODE")
    if len(set(supports)) != len(supports):
        raise LabrecordError("a --support is given twice")
    for site, mode in supports:
        parse_support(f"{site}:{mode}")
        if (site, mode) not in registered.supports:
            built = ", ".join(f"{s}:{m}" for s, m in registered.supports)
            raise LabrecordError(f"support {site}:{mode}: not built on the {family} bench (built: {built})")
    connection = None
    if policy in SERVED_POLICIES:
        connection = _served(policy, family, workers, executor, served or {})
        probe = connection.policy
    else:
        probe = bench.make_policy(policy, seed, **policy_options)
    branches = branches_of(supports)
    compat = [compatibility(probe, *b[0]) if len(b) == 1 else joint_compatibility(probe, b) for b in branches]
    usable = tuple(b for b, c in zip(branches, compat) if c.status == "compatible")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    condition = registered.study_condition
    population = population_of(family, condition, policy, seed)
    drawn, base_records = bench.population(condition, instances, seed)
    tasks = [StudyTask(str(out), policy, seed, i, inst, usable, tuple(sorted(policy_options.items())),
                       verify_periods or VERIFY_PERIODS, family, condition, max_time_s) for i, inst in enumerate(drawn)]
    try:
        refuse_existing(out, (run_id for task in tasks for run_id in _run_ids(task)))
        register_population(out, population, _population_records(drawn, usable, base_records))
        if connection is not None:  # one connection, instances in turn (a connection is not picklable)
            results = run_specs(tasks, lambda task: run_instance(task, connection), 1, progress)
        else:
            results = run_specs(tasks, run_instance, workers, progress, executor=executor, address=address)
    finally:
        if connection is not None:
            connection.close()
    summary = _summary(population, policy, seed, condition, list(zip(branches, compat)), results)
    folder = out / STUDIES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / f"{population}.json", dumps_pretty(summary))
    return summary


def _served(policy: str, family: str, workers: int, executor: str, options: dict[str, Any]) -> Any:
    """Connect a served policy for a study; refused unless its preflight declares it
    stateless between queries (a branch from a checkpoint re-queries it, so nothing the
    checkpoint cannot hold may carry over from earlier queries)."""
    from labrecord.sim.episodes import bench_task
    from labrecord.sim.serving import connect

    if workers > 1 or executor != "local":
        raise LabrecordError(f"--policy {policy}: a served policy runs its instances in turn over one connection; "
                             "use --workers 1 and the local executor")
    task = bench_task(family)
    connection = connect(policy, cameras=task.cameras, skill=None, **options)
    preflight = connection.preflight
    if preflight.session != "stateless":
        connection.close()
        declared = preflight.session or "nothing"
        raise LabrecordError(f"--policy {policy}: a study branches from checkpoints and needs a policy stateless "
                             f"between queries; its preflight declares {declared}"
                             + (f" ({preflight.session_reason})" if preflight.session_reason else ""))
    return connection


def _population_records(drawn: list[Any], branches: tuple[Branch, ...], base_records: list[Any]) -> list[Any]:
    """The family's population records (an instance and its checkpoint each, and any pairs
    of the family's own), each instance and checkpoint again per supported branch, and an
    Oracle pair per instance and branch."""
    from labrecord.models import Checkpoint, Instance, OraclePair
    from labrecord.sim.episodes import instance_id_of

    records: list[Any] = []
    for record in base_records:
        records.append(record)
        if isinstance(record, Checkpoint):
            for branch in branches:
                records.append(Checkpoint(instance_id=supported_instance(record.instance_id, branch),
                                          decision=record.decision))
        elif isinstance(record, Instance):
            for branch in branches:
                records.append(Instance(instance_id=supported_instance(record.instance_id, branch),
                                        task_id=record.task_id, condition=record.condition, fields=record.fields))
    for index in range(len(drawn)):
        base_id = instance_id_of(index)
        for branch in branches:
            records.append(OraclePair(pair_id=pair_id_of(base_id, branch), base=base_id,
                                      supported=supported_instance(base_id, branch),
                                      mode="+".join(m for _, m in branch), oracle=oracle_of(branch),
                                      site="+".join(s for s, _ in branch)))
    return records


def _stem(task: StudyTask) -> str:
    return f"oracle-{task.family}-{task.policy}-s{task.seed}-e{task.index:03d}"


def _run_id(task: StudyTask, branch: Branch) -> str:
    """``<stem>-base``, ``<stem>-decision-replace``, ``<stem>-semantic-assist.decision-replace``."""
    return f"{_stem(task)}-" + (".".join(f"{site}-{mode}" for site, mode in branch) or "base")


def _run_ids(task: StudyTask) -> list[str]:
    return [_run_id(task, ())] + [_run_id(task, b) for b in task.branches]


def _spec(task: StudyTask, branch: Branch) -> Any:
    from labrecord.models import Intervention, Support as SupportRecord
    from labrecord.sim.episodes import EpisodeSpec, instance_id_of

    base_id = instance_id_of(task.index)
    if not branch:
        instance_id = base_id
        intervention = Intervention(pair_id=None, branch="base")
    else:
        instance_id = supported_instance(base_id, branch)
        intervention = Intervention(supports=[SupportRecord(site=site, mode=mode, oracle=IMPLEMENTED[(site, mode)][0])  # type: ignore[arg-type]
                                              for site, mode in branch],
                                    pair_id=pair_id_of(base_id, branch), branch="supported")
    return EpisodeSpec(task.out_dir, task.condition, task.policy, task.index, task.seed, task.instance, cameras=False,
                       size=64, max_time_s=task.max_time_s, policy_options=task.policy_options,
                       run_id=_run_id(task, branch),
                       population=population_of(task.family, task.condition, task.policy, task.seed),
                       instance_id=instance_id, intervention=intervention, family=task.family)


class _AtDecision(EpisodeObserver):
    """Watches an episode for the first opportunity of the registered decision: calls
    ``on_open(observation)`` once when it opens at a boundary; ``before_act(observation)``
    before every query (the Oracle context goes in there) and ``after_step()`` after every
    control period."""

    def __init__(self, owner: Any, decision: str, on_open: Callable[[Any], None],
                 after_step: Callable[[], None] | None = None, before_act: Callable[[Any], None] | None = None) -> None:
        self.owner, self.decision, self.on_open = owner, decision, on_open
        self._after_step, self._before_act = after_step, before_act
        self.fired = False
        self.before: Any = None

    def before_observe(self) -> None:
        self.before = self.owner.scorer.tracker.current

    def observed(self, observation: Any) -> None:
        current = self.owner.scorer.tracker.current
        if (observation is not None and not self.fired and current is not None and current is not self.before
                and current.decision == self.decision):
            self.fired = True
            self.on_open(observation)

    def before_query(self, observation: Any) -> None:
        if self._before_act is not None:
            self._before_act(observation)

    def after_step(self) -> None:
        if self._after_step is not None:
            self._after_step()


def run_instance(task: StudyTask, served: Any = None) -> dict[str, Any]:
    """Base branch + checkpoint + verification + supported branches of one instance
    (``served``: the connected served policy, else the task's scripted one)."""
    from labrecord.sim.episodes import bench_task, instance_id_of, policy_seed as seed_of

    bench = bench_task(task.family)
    policy_seed = seed_of(task.seed, task.index)
    policy = served.policy if served is not None else bench.make_policy(task.policy, policy_seed, task.instance,
                                                                         **dict(task.policy_options))
    base = run_verified(_spec(task, ()), policy, instance_id_of(task.index), task.verify_periods,
                        bench.checkpoint_decision, served)
    result: dict[str, Any] = {"index": task.index, "instance_id": instance_id_of(task.index), "base": base.path.name,
                              "checkpoint": None, "verified": False, "branches": {}}
    if base.checkpoint is None:
        result["reason"] = f"the registered decision {bench.checkpoint_decision} never opened in the base branch"
        return result
    checkpoint = base.checkpoint
    result.update(checkpoint=str(base.checkpoint_path), verified=checkpoint.header.verified,
                  verification=_builtins(checkpoint.header.verification))
    if not checkpoint.header.verified:
        result["reason"] = "checkpoint failed verification: no supported branch started"
        return result
    for branch in task.branches:
        result["branches"][branch_key(branch)] = _supported_branch(task, branch, checkpoint, policy_seed, served)
    return result


@dataclasses.dataclass
class VerifiedRun:
    """A run whose registered decision was checkpointed and verified: its folder, the
    checkpoint (None when the decision never opened) and where it was written."""

    path: Path
    checkpoint: Any = None
    checkpoint_path: Path | None = None


def run_verified(spec: Any, policy: Any, instance_id: str, verify_periods: int, decision: str,
                 served: Any = None) -> VerifiedRun:
    """Run ``spec``'s episode with ``policy``; when ``decision`` opens its first opportunity the
    step owner's complete state is captured, and after the episode the checkpoint is
    verified (restored and re-stepped with the recorded actions over ``verify_periods``
    control periods), written to ``<out>/checkpoints/<run_id>.ckpt`` and its verification
    recorded in the run's manifest (``evaluation.checkpoints``).  A ``served`` policy is
    also re-queried over the window from the checkpoint's client session, its actions
    compared with the recorded ones."""
    from labrecord.recorders.checkpoint import CHECKPOINTS_DIR, Requery, capture, verify, write_checkpoint
    from labrecord.sim.episodes import open_episode

    episode = open_episode(spec, policy, served)
    import mujoco  # after open_episode chose the offscreen renderer

    engine = f"mujoco-{mujoco.__version__}"
    owner = episode.owner
    taken: dict[str, Any] = {}

    def on_open(observation: Any) -> None:
        taken["checkpoint"] = capture(owner, observation, instance_id=instance_id, engine=engine)
        taken["blocks0"], taken["actions0"] = owner.cursor.blocks, owner.cursor.actions

    def after_step() -> None:
        if "blocks0" in taken and "tracker_after" not in taken and len(owner.blocks) >= taken["blocks0"] + verify_periods:
            taken["tracker_after"] = copy.deepcopy(owner.scorer.tracker.state)

    try:
        owner.run_episode(0, _AtDecision(owner, decision, on_open, after_step))
    except BaseException:
        episode.abort()
        raise
    path = episode.close()
    checkpoint = taken.get("checkpoint")
    if checkpoint is None:
        return VerifiedRun(path)
    k0, a0 = taken["blocks0"], taken["actions0"]
    recorded = owner.blocks[k0:k0 + verify_periods]
    blocks = [{k: v for k, v in b.items() if not k.startswith("cmd_")} for b in recorded]
    # the applied rows exactly, from the command columns (the demonstration keeps them as float32)
    dim = len(owner.logs[-1].actions[a0]) if recorded else 0
    actions = [np.array([b[f"cmd_{i}"][0] for i in range(dim)]) for b in recorded]
    tracker_after = taken.get("tracker_after", owner.scorer.tracker.state)
    requery = Requery(policy, owner.instruction, spec.actions_per_query) if served is not None else None
    checkpoint.header.verification = verify(episode.env, owner.scorer, checkpoint, actions, blocks, tracker_after,
                                            owner.steps_per_control, requery=requery)
    written = write_checkpoint(Path(spec.out_dir) / CHECKPOINTS_DIR / f"{path.name}.ckpt", checkpoint)
    _record_handoff(path, checkpoint, written)
    return VerifiedRun(path, checkpoint, written)


def handoff_check(checkpoint: Any, path: Path) -> Any:
    """The manifest's record of a checkpoint handoff: its decision, verification and file
    (relative to the study folder, where ``score`` finds it beside the runs)."""
    from labrecord.models import HandoffCheck

    verification = checkpoint.header.verification
    reason = None
    if not checkpoint.header.verified:
        if verification is not None and not verification.handoff_ready:
            reason = "handoff not ready"
        elif verification is not None and verification.bitwise and verification.actions_equal is False:
            reason = (f"re-queried actions differ from the recorded ones from control period "
                      f"{verification.first_action_mismatch_period} (a nondeterministic server)")
        else:
            reason = "replay differs from the recording"
    return HandoffCheck(decision=checkpoint.header.decision, verified=checkpoint.header.verified,
                        file=f"{path.parent.name}/{path.name}", reason=reason)


def _record_handoff(run_dir: Path, checkpoint: Any, path: Path) -> None:
    """Add the verification of the checkpoint taken in ``run_dir`` to its (closed) manifest."""
    from labrecord.rundir import RUN_FILE, read_manifest

    document = read_manifest(run_dir)
    document.manifest.evaluation.checkpoints.append(handoff_check(checkpoint, path))
    atomic_write_bytes(run_dir / RUN_FILE, document.to_bytes())


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


class _Delivery:
    """The supports of one branch at its supported opportunity: payloads built at the
    handoff and scope-checked by the contract, assist payloads put in the Oracle context of
    each query until the opportunity's first choice, the commit hook for *replace*, an
    ``intervention`` event per delivery and the run's ``intervention.supports`` entries."""

    def __init__(self, owner: Any, policy: Any, branch: Branch, checkpoint: Any, records: list[Any]) -> None:
        self.owner, self.policy, self.branch, self.records = owner, policy, branch, records
        header = checkpoint.header
        self.opp, self.version = header.opp, header.evidence_version
        self.payload_stem = f"{header.run_id}/{header.opp}"
        self.assist: dict[str, Any] = {}

    def start(self) -> None:
        """At the handoff (physics restored): build, check and arm every support."""
        owner = self.owner
        contract = owner.scorer.contract
        legal = list(owner.scorer.legal.get(self.opp) or [])
        for (site, mode), record in zip(self.branch, self.records):
            record.opp, record.evidence_version = self.opp, self.version
            if site == "skill":
                # the operation is the system's own selection: its scope is checked when it comes
                record.payload_id = f"{self.payload_stem}/reference-executor"
                self.policy.executor_hook = self._executor(record, contract, legal)
                continue
            if (site, mode) == ("geometry", "replace"):
                # the target is the system's own selection: its frame is checked when it comes
                record.payload_id = f"{self.payload_stem}/target-frame"
                self.policy.geometry_hook = self._localization(record, contract, legal)
                continue
            if site == "decision":
                payload: Any = legal[0] if legal else None
                record.payload_id = f"{self.payload_stem}/legal[0]"
            elif site == "geometry":
                payload = candidate_frames(owner.env, contract)
                record.payload_id = f"{self.payload_stem}/candidate-frames"
            else:
                shown = owner.scorer.readouts()["display_reading"]
                payload = {name: shown.get(name) for name in sorted(contract.semantic_fields)}
                record.payload_id = f"{self.payload_stem}/display"
            refused = contract.payload_scope(site, payload, legal)
            if refused is not None:
                record.delivered, record.refused = False, refused
                continue
            if mode == "replace":
                record.substituted = payload
                self.policy.commit_hook = self._hook(record, payload)
            else:
                record.payload = payload
                self.assist[site] = (record, payload)

    def before_act(self, observation: Any) -> None:
        """Put the armed assist payloads in this query's Oracle context while the supported
        opportunity is current and has no first choice yet; the first query that carries
        one is its receipt."""
        if not self.assist or not self._at_opportunity() or self._chosen():
            return
        context = {}
        for site, (record, payload) in self.assist.items():
            context[site] = {"payload_id": record.payload_id, **(
                {"recommended": payload} if site == "decision" else
                {"frames": dict(payload)} if site == "geometry" else dict(payload))}
            if record.receipt is None:
                record.receipt, record.delivered = observation.obs_id, True
                self._emit(record, payload=payload, obs_id=observation.obs_id)
        observation.state[ORACLE_CHANNEL] = context

    def _at_opportunity(self) -> bool:
        """Whether the supported opportunity is the current one."""
        current = self.owner.scorer.tracker.current
        return current is not None and current.opp == self.opp

    def _chosen(self) -> bool:
        return any(c["opp"] == self.opp for c in self.owner.scorer.first_choices)

    def _hook(self, record: Any, substituted: Any) -> Callable[[Any, Any], Any]:
        def hook(op: Any, observation: Any) -> Any:
            if record.delivered or not self._at_opportunity():
                return op
            record.original, record.receipt, record.delivered = op, observation.obs_id, True
            self._emit(record, original=op, substituted=substituted, obs_id=observation.obs_id)
            return substituted

        return hook

    def _executor(self, record: Any, contract: Any, legal: list[Any]) -> Callable[[Any, Any, Any], Any]:
        from labrecord.sim.weighing.executor import transfer_plan

        def executor(op: Any, poses: Any, observation: Any) -> Any:
            if record.delivered is not None or not self._at_opportunity():
                return None
            refused = contract.payload_scope("skill", op, legal)
            if refused is not None:
                record.delivered, record.refused = False, refused
                return None
            record.original, record.substituted, record.receipt, record.delivered = op, op, observation.obs_id, True
            self._emit(record, original=op, substituted=op, obs_id=observation.obs_id)
            return transfer_plan(op.object, poses, op.kind == "add")

        return executor

    def _localization(self, record: Any, contract: Any, legal: list[Any]) -> Callable[[Any, Any, Any], Any]:
        def hook(op: Any, frames: Any, observation: Any) -> Any:
            if record.delivered is not None or not self._at_opportunity() or op.object not in frames:
                return frames
            # the selected target is kept; only its localization is corrected (its true
            # frame now, from the bench, whatever channels the system declares)
            payload = {op.object: self.owner.env.scene.object_poses().get(op.object)}
            refused = contract.payload_scope("geometry", payload, legal)
            if refused is not None:
                record.delivered, record.refused = False, refused
                return frames
            original = {op.object: list(frames[op.object])}
            record.original, record.substituted, record.receipt, record.delivered = (
                original, payload, observation.obs_id, True)
            # the replaced output stays scorable (sec. 6.2): the system's estimate as its
            # geometry report of the target (e_p in ``score``), then the substitution
            self._report_geometry(op.object, original[op.object], payload[op.object])
            self._emit(record, original=original, substituted=payload, obs_id=observation.obs_id)
            return {**frames, **payload}

        return hook

    def _report_geometry(self, target: str, p_hat: list[float], p_ref: list[float]) -> None:
        from labrecord.models.events import Geometry

        self.owner.emit(Geometry, t=self.owner.env.time, fields={
            "opp": self.opp, "target": target, "p_hat": [float(v) for v in p_hat],
            "p_ref": [float(v) for v in p_ref], "evidence_version": self.version})

    def _emit(self, record: Any, **fields: Any) -> None:
        from labrecord.models.events import InterventionEvent

        self.owner.emit(InterventionEvent, t=self.owner.env.time, fields={
            "opp": self.opp, "evidence_version": self.version, "mode": record.mode, "site": record.site,
            "payload_id": record.payload_id, "delivered": True, **fields})

    def finish(self) -> None:
        """The first native choice at the supported opportunity, after the delivery."""
        chosen = [c["op"] for c in self.owner.scorer.first_choices if c["opp"] == self.opp]
        for record in self.records:
            if record.delivered:
                record.first_choice = _operation(chosen[0]) if chosen else None


def candidate_frames(env: Any, contract: Any) -> dict[str, list[float]]:
    """The authorized candidate frames at the handoff (geometry:assist): the position of
    each frame the contract authorizes (``geometry_frames``) that the bench has — the
    standards' from the ``object_poses`` channel and the pan's body frame — in sorted
    order; other objects (the sample box) are never included."""
    scene = env.scene
    known = dict(scene.object_poses())
    known["pan"] = [round(float(v), 5) for v in scene.data.xpos[scene.body_id["pan"]]]
    return {name: known[name] for name in sorted(contract.geometry_frames) if name in known}


def _operation(text: str) -> Any:
    """The operation of its printed form ``kind(object, dest)`` (how the online scorer keeps choices)."""
    from labrecord.models import Operation

    kind, _, rest = text.partition("(")
    return Operation(kind, *[part.strip() for part in rest.rstrip(")").split(",") if part.strip()])  # type: ignore[arg-type]


def _supported_branch(task: StudyTask, branch: Branch, checkpoint: Any, policy_seed: int,
                      served: Any = None) -> dict[str, Any]:
    from labrecord.recorders.checkpoint import CHECKPOINTS_DIR, restore_physics, restore_session
    from labrecord.sim.episodes import bench_task, open_episode

    bench = bench_task(task.family)
    policy = (served.policy if served is not None
              else bench.make_policy(task.policy, policy_seed, task.instance, **dict(task.policy_options)))
    episode = open_episode(_spec(task, branch), policy, served)
    owner = episode.owner
    records = episode.writer.document.manifest.intervention.supports
    delivery = _Delivery(owner, policy, branch, checkpoint, records)
    outcome: dict[str, Any] = {"run": episode.writer.dir.name, "started": False}

    def on_open(observation: Any) -> None:
        mismatch = _start_mismatch(owner, checkpoint)
        if mismatch is not None:
            outcome["reason"] = f"branch start differs from the verified checkpoint: {mismatch}"
            raise _BranchRefused(mismatch)
        restore_physics(owner.env, checkpoint)
        if served is not None:  # the adapter's client session from the checkpoint; the server is asked anew
            restore_session(policy, checkpoint)
        outcome["started"] = True
        owner.writer.document.manifest.evaluation.checkpoints.append(
            handoff_check(checkpoint, Path(task.out_dir) / CHECKPOINTS_DIR / f"{checkpoint.header.run_id}.ckpt"))
        delivery.start()

    try:
        owner.run_episode(0, _AtDecision(owner, bench.checkpoint_decision, on_open, before_act=delivery.before_act))
    except _BranchRefused:
        episode.abort()
        return outcome
    except BaseException:
        episode.abort()
        raise
    delivery.finish()
    episode.close()
    outcome["supports"] = [_builtins(r) for r in records]
    return outcome


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
              ("observation cursor", owner.cursor.observations, header.observations),
              ("physics step", owner.cursor.step, header.step)]
    for name, have, want in checks:
        if have != want:
            return f"{name} {have!r} != {want!r}"
    if pickle.dumps(owner.scorer.tracker.state) != pickle.dumps(checkpoint.state["scorer"]["tracker"].state):
        return "tracker state"
    session = getattr(owner.policy, "session_state", None)
    if callable(session) and pickle.dumps(session()) != pickle.dumps(checkpoint.state.get("session")):
        return "client session of the served policy"
    return None


def _summary(population: str, policy: str, seed: int, condition: str, branches: list[tuple[Branch, Any]],
             results: list[dict[str, Any]]) -> dict[str, Any]:
    """Compatibility, delivery, agreement and substitution per support (sec. 6.3): agreement
    under decision:assist, substitution share under replace (agreement null there).  The
    scorer computes the same shares from the stored runs (``labrecord score``)."""
    import msgspec

    supports = {}
    for branch, c in branches:
        key = branch_key(branch)
        if c.status != "compatible":
            supports[key] = {"status": "not compatible", "reason": c.reason}
            continue
        outcomes = [r["branches"].get(key) for r in results]
        started = [b for b in outcomes if b and b["started"]]
        entry: dict[str, Any] = {"status": "compatible", "pairs": len(results), "started": len(started),
                                 "delivered": sum(1 for b in started if all(s.get("delivered") for s in b["supports"]))}
        for index, (site, mode) in enumerate(branch):
            records = [b["supports"][index] for b in started if b["supports"][index].get("delivered")]
            if mode == "replace" and site in ("geometry", "decision"):
                changed = sum(1 for r in records if r.get("original") != r.get("substituted"))
                entry.update(substituted=changed, substitution_share=changed / len(records) if records else None)
                if site == "geometry":
                    errors = [_frame_error(r.get("original"), r.get("substituted")) for r in records]
                    entry.update(localization_error_m=[e for e in errors if e is not None])
                else:
                    entry.update(agreement=None)
            elif site == "decision":
                agreed = sum(1 for r in records if r.get("first_choice") == r.get("payload"))
                entry.update(agreed=agreed, agreement=agreed / len(records) if records else None)
        supports[key] = entry
    return {"population": population, "policy": policy, "seed": seed, "condition": condition,
            "compatibility": [msgspec.to_builtins(c) for _, c in branches], "supports": supports,
            "checkpoints_verified": sum(1 for r in results if r["verified"]), "instances": len(results),
            "results": results}


def _frame_error(original: Any, substituted: Any) -> float | None:
    """e_p (sec. 6.1, eq. 2) of the replaced target's position: ‖p̂ − p*‖₂ in metres."""
    if not original or not substituted or set(original) != set(substituted):
        return None
    (name,) = original
    return round(float(np.linalg.norm(np.subtract(original[name], substituted[name]))), 6)


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
                    family: str = FAMILY, **policy_options: Any) -> dict[str, Any]:
    """Answer-changing pairs for P_state: per drawn basic instance ``iNNN`` its partner
    (:func:`partner_of`) as members ``iNNN.a`` / ``iNNN.b`` of pair ``pNNN``; the population
    ``pairs-weighing-basic-s<seed>`` (instances, ``d0`` checkpoints, ``pair`` records) is
    registered before any episode runs; one ordinary run folder per member.

    Example::

        summary = run_pairs_study("runs", "fixed-preference", pairs=4)
    """
    from labrecord.models import Checkpoint, Instance, Intervention, Pair
    from labrecord.registry import register_population
    from labrecord.sim.episodes import EpisodeSpec, run_episode, run_id_of
    from labrecord.sim.weighing.policies import POLICIES
    from labrecord.sim.weighing.task import instances as draw

    check_family(family, "pairs")
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
                                     population=population, instance_id=instance_id, intervention=Intervention(),
                                     family=FAMILY))
        records.append(Pair(pair_id=f"p{index:03d}", members=members, kind="answer_changing"))
    refuse_existing(out, map(run_id_of, specs))
    register_population(out, population, records)
    runs = [path.name for path in run_specs(specs, run_episode, workers, progress, executor=executor, address=address)]
    return {"population": population, "policy": policy, "seed": seed, "pairs": pairs, "runs": runs}


# -- fixed-subgoal starts (K, E_fixed) ----------------------------------------------------
FIXED_ORACLE = "fixed-subgoal"


def fixed_population_of(seed: int) -> str:
    """One start population per seed, shared by every system of the study (the same start
    ids and seeds), so E_fixed compares systems on the same K."""
    return f"fixed-weighing-{CONDITION}-s{seed}"


class _SupplySubgoal:
    """A commit hook that hands the system its correct subgoal as its first committed
    operation; later commitments are the system's own.  (A class, not a closure: the start
    is checkpointed with the policy and its hooks.)"""

    def __init__(self, subgoal: Any) -> None:
        self.subgoal, self.given = subgoal, False

    def __call__(self, op: Any, observation: Any) -> Any:
        if self.given:
            return op
        self.given = True
        return self.subgoal


class _ReferenceFrame:
    """The standard geometry of a fixed start: the subgoal target's true position (the
    bench's ``object_poses`` channel at planning time) in place of the system's own
    localization of it."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __call__(self, op: Any, frames: Any, observation: Any) -> Any:
        if op.object != self.target:
            return frames
        return {**frames, self.target: list(observation.state["object_poses"][self.target])}


def run_fixed_episode(spec: Any) -> Path:
    """One fixed-start episode: the system's commit hook receives the correct subgoal and
    its executor the reference frame of that subgoal's standard; the start (the opening of
    ``d0``) is checkpointed and verified like an Oracle checkpoint and its verification
    recorded in the manifest, so an unverified start is an unresolved member of K."""
    from labrecord.models import Operation
    from labrecord.recorders.checkpoint import VERIFY_PERIODS
    from labrecord.sim.episodes import policy_seed
    from labrecord.sim.weighing.policies import make_policy
    from labrecord.sim.weighing.task import CHECKPOINT_DECISION

    policy = make_policy(spec.policy, policy_seed(spec.seed, spec.index), **dict(spec.policy_options))
    (goal,) = spec.instance.goal
    policy.commit_hook = _SupplySubgoal(Operation("add", goal, "pan"))
    policy.reference_geometry = _ReferenceFrame(goal)
    return run_verified(spec, policy, spec.instance_id, VERIFY_PERIODS, CHECKPOINT_DECISION).path


def run_fixed_starts_study(out_dir: str | Path, policy: str, starts: int = 8, seed: int = 0, workers: int = 1, *,
                           progress: Callable[[int], None] | None = None, executor: str = "local",
                           address: str | None = None, family: str = FAMILY, **policy_options: Any) -> dict[str, Any]:
    """Fixed-subgoal starts K for E_fixed (eq. 6): per drawn basic instance a
    ``fixed_start`` whose subgoal is the obligation ``add:<goal>``; the correct subgoal is
    supplied through the system's commit hook (intervention ``replace`` / ``decision`` /
    ``fixed-subgoal``) with the reference frame of its standard, and the physical execution
    is observed: E_fixed counts the runs with a ``confirm`` of that obligation.  Every
    system of a seed shares one start population ``fixed-weighing-basic-s<seed>`` (the same
    start ids, task, layout and policy seeds); each start is verified like a checkpoint.

    Example::

        summary = run_fixed_starts_study("runs", "reference", starts=4)
    """
    from labrecord.models import FixedStart, Instance, Intervention
    from labrecord.registry import register_population
    from labrecord.sim.episodes import EpisodeSpec, run_id_of
    from labrecord.sim.weighing.policies import POLICIES
    from labrecord.sim.weighing.task import instances as draw

    check_family(family, "fixed-starts")
    if policy not in POLICIES:
        raise LabrecordError(f"--policy {policy}: a fixed-start study needs a system with a commit hook "
                             f"({', '.join(POLICIES)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    population = fixed_population_of(seed)
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
                                 instance_id=instance_id, family=FAMILY,
                                 intervention=Intervention(mode="replace", site="decision", oracle=FIXED_ORACLE)))
    refuse_existing(out, map(run_id_of, specs))
    register_population(out, population, records)
    runs = [path.name for path in run_specs(specs, run_fixed_episode, workers, progress, executor=executor, address=address)]
    return {"population": population, "policy": policy, "seed": seed, "starts": starts, "runs": runs}
