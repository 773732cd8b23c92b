"""Centrifuge-loading episodes in the embedded MuJoCo bench, one run directory per episode.

The family's :class:`~labrecord.sim.episodes.BenchTask`.  Instances come from the centrifuge contract (``labrecord.scorers.contracts.centrifuge``):

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

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from labrecord.models import Recovery
from labrecord.recorders.online import ContractScorer
from labrecord.sim.episodes import BenchTask, instance_id_of, instance_records
from labrecord.sim.fanout import check_request

FAMILY = "centrifuge"
CONDITIONS = ("basic", "extended")
#: simulated-time budget per episode (s): transfers, a recovery, settling and the 3 s dwell
MAX_TIME_S = {"basic": 45.0, "extended": 80.0}
#: instances per drawn block (basic: one answer-changing and one geometric pair)
BLOCK = {"basic": 4, "extended": 4}
#: physics steps before recording starts: seated tubes come to rest on their bore floors
SETTLE_STEPS = 250
#: the first registered decision of every episode (where the next tube goes)
CHECKPOINT_DECISION = "d0"


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
                            members=[instance_id_of(i) for i in members], kind=kind))  # type: ignore[arg-type]
    return records


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

    #: no public readout: the cameras show the rotor
    readout_channels: tuple[str, ...] = ()


class CentrifugeTask(BenchTask):
    name = FAMILY
    cameras = ("front", "wrist")
    checkpoint_decision = CHECKPOINT_DECISION

    def population(self, condition: str, episodes: int, seed: int) -> tuple[list[Any], list[Any]]:
        return population(condition, episodes, seed)

    def max_time_s(self, condition: str, policy: str) -> float:
        return MAX_TIME_S[condition]

    def make_policy(self, name: str, seed: int, instance: Any = None, **options: Any) -> Any:
        from labrecord.sim.centrifuge.policies import make_policy

        if instance is not None:
            options["calibration"] = instance.calibration
        return make_policy(name, seed, **options)

    def bench_key(self, instance: Any) -> Hashable:
        return instance.calibration

    def make_bench(self, instance: Any, action_spec: Any, cameras: tuple[str, ...], size: int) -> Any:
        from labrecord.sim.centrifuge.env import CentrifugeEnv

        return CentrifugeEnv(instance.calibration, action_spec, cameras=cameras, size=size)

    def prepare(self, env: Any, instance: Any) -> Any:
        """Seated tubes settle (:data:`SETTLE_STEPS`) before recording starts."""
        env.reset(instance, settle_steps=SETTLE_STEPS)
        return instance

    def scorer(self, contract: Any, instance: Any, columns: tuple[str, ...], window_s: float | None) -> Any:
        return CentrifugeScorer(contract, instance, columns=columns, window_s=window_s)

    def instruction(self, instance: Any) -> str:
        if instance.start:
            return "Balance the rotor: insert the free tube into the slot opposite the loaded tube, then stop."
        return "Load both tubes into opposite slots of the rotor, then stop."

    def layout_description(self) -> str:
        from labrecord.sim.centrifuge.scene import ROTOR_XY, STAND_SPOTS

        return repr((FAMILY, ROTOR_XY, STAND_SPOTS))


TASK = CentrifugeTask()
