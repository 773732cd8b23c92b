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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.models import Recovery
from labrecord.recorders.online import ContractScorer
from labrecord.sim.episodes import family_bench, policy_seed, record_episode, run_family
from labrecord.sim.fanout import check_request, headless_rendering
from labrecord.sim.weighing import CHECKPOINT_DECISION, EpisodeSpec, instance_id_of, instance_records

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
    check_request(condition, CONDITIONS, episodes)
    drawn: list[Any] = []
    pairs: list[tuple[str, list[int]]] = []
    for b in range(-(-episodes // BLOCK[condition])):
        block, block_pairs = draw_block(condition, seed, b)
        pairs += [(kind, [len(drawn) + i for i in members]) for kind, members in block_pairs]
        drawn += block
    return drawn[:episodes], [(kind, m) for kind, m in pairs if max(m) < episodes]


def population(condition: str, episodes: int, seed: int) -> tuple[list[Any], list[Any]]:
    """The drawn instances and their population records."""
    drawn, pairs = instances(condition, episodes, seed)
    return drawn, population_records(condition, drawn, pairs)


def population_records(condition: str, drawn: list[Any], pairs: list[tuple[str, list[int]]]) -> list[Any]:
    """``Instance`` + ``Checkpoint(d0)`` per episode, then one ``Pair`` per complete pair."""
    from labrecord.models import Pair

    records = instance_records(f"{FAMILY}-{condition}", condition, drawn, CHECKPOINT_DECISION)
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
    return run_family(out_dir, FAMILY, condition, policy, episodes, seed, workers, population=population, run=run_episode,
                      cameras=cameras, size=size, max_time_s=max_time_s, progress=progress, policy_options=policy_options)


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
    """One episode, one run directory (``<out_dir>/<run_id>``); seated tubes settle
    (:data:`SETTLE_STEPS`) before recording starts."""
    headless_rendering()
    from labrecord.sim.centrifuge_policies import make_policy
    from labrecord.sim.centrifuge_scene import CAMERAS, ROTOR_XY, STAND_SPOTS, CentrifugeEnv

    instance = spec.instance
    policy = make_policy(spec.policy, policy_seed(spec), calibration=instance.calibration, **dict(spec.policy_options))
    env = family_bench(_BENCHES, spec, CentrifugeEnv, instance.calibration, policy.capabilities.action_spec, CAMERAS)
    env.reset(instance, settle_steps=SETTLE_STEPS)
    return record_episode(spec, env, policy, CentrifugeScorer, family=FAMILY, instruction=instruction_of(instance),
                          max_time_s=spec.max_time_s or MAX_TIME_S[spec.condition], benches=_BENCHES,
                          layout_text=repr((FAMILY, ROTOR_XY, STAND_SPOTS)),
                          scene="labrecord.sim.assets/centrifuge.xml", memory=policy.capabilities.memory)


_BENCHES: dict[Any, Any] = {}
