"""Centrifuge-loading episodes in the embedded MuJoCo bench, one run directory per episode.

:func:`run_centrifuge` is the library entry point behind ``labrecord sim centrifuge``.
Instances come from the centrifuge contract (``labrecord.scorers.contracts.centrifuge``):

* ``basic`` — one tube seated, the other standing ready (``held``).  Drawn in blocks of
  four: an answer-changing pair (the first tube's actual slot differs, so the legal
  destination of the second differs) and a geometric pair (the rotor turned, the same
  local target), each from ``numpy.random.default_rng([seed, 0, block])`` (task state)
  and ``[seed, 1, block]`` (layout).  Both kinds are registered as ``pair`` records.
* ``extended`` — both tubes standing outside the rotor; any slot is legal for the first,
  the slot opposite its actual seat for the second.

The population ``centrifuge-<condition>-s<seed>`` (instances, a ``d0`` checkpoint each,
and the pairs whose members are all drawn) is registered before the first episode, as
for weighing.  Contract failures (``shallow``, ``misaligned``) are recognized from the
measured tube geometry; a later confirmed insertion of the same tube resolves them with
a ``recovery`` event.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import (
    Recovery, RunManifest,
)
from labrecord.recorders.online import ContractScorer
from labrecord.sim.episodes import cached_bench, contract_columns, family_manifest, record_episode
from labrecord.sim.fanout import refuse_existing, run_specs
from labrecord.sim.weighing import CHECKPOINT_DECISION, EpisodeSpec, instance_id_of, register_population

FAMILY = "centrifuge"
CONDITIONS = ("basic", "extended")
#: simulated-time budget per episode (s): transfers, a recovery, settling and the 3 s dwell
MAX_TIME_S = {"basic": 45.0, "extended": 80.0}
#: instances per drawn block (basic: one answer-changing and one geometric pair)
BLOCK = {"basic": 4, "extended": 4}
#: physics steps before recording starts: seated tubes come to rest on their bore floors
SETTLE_STEPS = 250


def draw_block(condition: str, seed: int, block: int) -> tuple[list[Any], list[tuple[str, list[int]]]]:
    """The instances of one block and its pairs as ``(kind, [index in block, …])``."""
    from labrecord.scorers.contracts.centrifuge import CentrifugeInstance, answer_changing_pairs, geometric_pairs

    rng_task, rng_layout = np.random.default_rng([seed, 0, block]), np.random.default_rng([seed, 1, block])
    if condition == "basic":
        (_, a0, a1), = answer_changing_pairs(1, rng_task, rng_layout)
        (_, g0, g1), = geometric_pairs(1, rng_task, rng_layout)
        return [a0, a1, g0, g1], [("answer_changing", [0, 1]), ("geometric", [2, 3])]
    out = [CentrifugeInstance(start=(), held=None, rotor_yaw=float(rng_layout.uniform(-np.pi, np.pi)), condition="extended",
                              task_seed=int(rng_task.integers(2**31 - 1)), layout_seed=int(rng_layout.integers(2**31 - 1)))
           for _ in range(BLOCK[condition])]
    return out, []


def instances(condition: str, episodes: int, seed: int) -> tuple[list[Any], list[tuple[str, list[int]]]]:
    """``episodes`` instances and the pairs among them (``(kind, [episode index, …])``);
    episode ``i`` of a seed is the same instance for any episode count."""
    if condition not in CONDITIONS:
        raise LabrecordError(f"condition {condition!r}: expected one of {', '.join(CONDITIONS)}")
    if episodes < 1:
        raise LabrecordError(f"episodes {episodes}: expected at least 1")
    drawn: list[Any] = []
    pairs: list[tuple[str, list[int]]] = []
    for b in range(-(-episodes // BLOCK[condition])):
        block, block_pairs = draw_block(condition, seed, b)
        pairs += [(kind, [len(drawn) + i for i in members]) for kind, members in block_pairs]
        drawn += block
    return drawn[:episodes], [(kind, m) for kind, m in pairs if max(m) < episodes]


def population_name(condition: str, seed: int) -> str:
    return f"{FAMILY}-{condition}-s{seed}"


def population_records(condition: str, drawn: list[Any], pairs: list[tuple[str, list[int]]]) -> list[Any]:
    """``Instance`` + ``Checkpoint(d0)`` per episode, then one ``Pair`` per complete pair."""
    from labrecord.models import Checkpoint, Instance, Pair

    records: list[Any] = []
    for index, inst in enumerate(drawn):
        records.append(Instance(instance_id=instance_id_of(index), task_id=f"{FAMILY}-{condition}", condition=condition,
                                fields=inst.variant()))
        records.append(Checkpoint(instance_id=instance_id_of(index), decision=CHECKPOINT_DECISION))
    for kind, members in pairs:
        short = "ac" if kind == "answer_changing" else "geo"
        records.append(Pair(pair_id=f"{FAMILY}-{condition}-{short}-{instance_id_of(members[0])}",
                            members=[instance_id_of(i) for i in members], kind=kind))
    return records


def run_centrifuge(out_dir: str | os.PathLike[str], condition: str = "basic", policy: str = "reference",
                   episodes: int = 8, seed: int = 0, workers: int = 1, *, cameras: bool = True, size: int = 224,
                   max_time_s: float | None = None, progress: Callable[[int], None] | None = None,
                   **policy_options: Any) -> list[Path]:
    """Run ``episodes`` centrifuge-loading episodes; returns the run directories in order.

    Example::

        runs = run_centrifuge("runs", "basic", "reference", episodes=4, seed=0)
    """
    from labrecord.sim.centrifuge_policies import make_policy

    make_policy(policy, seed, **policy_options)  # fail fast on a bad name or option
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    drawn, pairs = instances(condition, episodes, seed)
    specs = [EpisodeSpec(str(out_dir), condition, policy, i, seed, inst, cameras, size, max_time_s,
                         tuple(sorted(policy_options.items()))) for i, inst in enumerate(drawn)]
    refuse_existing(out_dir, map(run_id_of, specs))
    register_population(out_dir, population_name(condition, seed), population_records(condition, drawn, pairs))
    return run_specs(specs, run_episode, workers, progress)


def run_id_of(spec: EpisodeSpec) -> str:
    return f"{FAMILY}-{spec.condition}-{spec.policy}-s{spec.seed}-e{spec.index:03d}"


def instruction_of(instance: Any) -> str:
    if instance.start:
        return "Balance the rotor: insert the free tube into the slot opposite the loaded tube, then stop."
    return "Load both tubes into opposite slots of the rotor, then stop."


class CentrifugeScorer(ContractScorer):
    """The contract scorer plus recovery bookkeeping: a failed insertion of a tube that is
    later confirmed inserted is resolved by a ``recovery`` event (``of_seq`` the failure)."""

    def start(self, emit: Callable[..., Any], t: float) -> None:
        super().start(emit, t)
        self.open_failures: dict[str, list[int]] = {}

    def _advance(self, f: Any) -> None:
        for event in self.tracker.advance(f):
            self._count(event)
            written = event.emit(self._sink)
            op = event.fields.get("op")
            if event.type == "failure" and op is not None:
                self.open_failures.setdefault(str(op.object), []).append(written.seq)
            elif event.type == "confirm" and event.fields.get("predicate") == "seated":
                for seq in self.open_failures.pop(str(op.object), []):
                    self.emit(Recovery, t=event.t, of_seq=seq, resolved=True)
        self.advanced = f

    def display(self) -> dict[str, Any]:
        return {}


def run_episode(spec: EpisodeSpec) -> Path:
    """One episode, one run directory (``<out_dir>/<run_id>``)."""
    if sys.platform.startswith("linux"):
        os.environ.setdefault("MUJOCO_GL", "egl")
    from labrecord.scorers.contracts import get_contract
    from labrecord.sim.centrifuge_policies import make_policy
    from labrecord.sim.centrifuge_scene import CAMERAS

    contract = get_contract(FAMILY)
    instance = spec.instance
    policy = make_policy(spec.policy, spec.seed * 100003 + spec.index, calibration=instance.calibration,
                         **dict(spec.policy_options))
    env = _bench(instance.calibration, policy.capabilities.action_spec, CAMERAS if spec.cameras else (), spec.size)
    env.reset(instance, settle_steps=SETTLE_STEPS)
    manifest = _manifest(spec, instance, policy, contract)
    scorer = CentrifugeScorer(contract, instance, columns=contract_columns(FAMILY))
    return record_episode(spec, env, policy, scorer, manifest, family=FAMILY, instruction=instruction_of(instance),
                          max_time_s=spec.max_time_s or MAX_TIME_S[spec.condition], benches=_BENCHES)


_BENCHES: dict[tuple[Any, ...], Any] = {}


def _bench(calibration: Any, action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
    from labrecord.fileio import dumps
    from labrecord.sim.centrifuge_scene import CentrifugeEnv

    key = (calibration, dumps(action_spec).decode(), cameras, size)
    return cached_bench(_BENCHES, key, lambda: CentrifugeEnv(calibration, action_spec, cameras=cameras, size=size))


def _manifest(spec: EpisodeSpec, instance: Any, policy: Any, contract: Any) -> RunManifest:
    caps = policy.capabilities
    return family_manifest(spec, instance, caps, contract, family=FAMILY, run_id=run_id_of(spec),
                           population=population_name(spec.condition, spec.seed), instance_id=instance_id_of(spec.index),
                           layout_text=repr((round(instance.rotor_yaw, 9), instance.layout_seed)), scene="labrecord.sim.assets/centrifuge.xml",
                           memory=caps.memory)
