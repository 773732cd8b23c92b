"""The online contract scorer: block-wise and row-wise stepping emit the audit's events."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.models import EVENT_TYPES, ObservationReceipt
from labrecord.recorders.online import ContractScorer
from labrecord.recorders.policy import Observation
from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.streams import WeighingStream, jitter
from labrecord.scorers.contracts.weighing import STANDARDS, WeighingInstance

CONTRACT = get_contract("weighing")
TYPE_OF = {cls: name for name, cls in EVENT_TYPES.items()}


class RowsOnly:
    """A contract whose stepper has no ``push_block`` (the scorer's row-by-row path)."""

    def __init__(self, contract) -> None:
        self.contract = contract

    def __getattr__(self, name: str):
        return getattr(self.contract, name)

    def stepper(self, instance):
        inner = self.contract.stepper(instance)
        return type("Rows", (), {"push": staticmethod(inner.push)})()


def feed(contract, inst: WeighingInstance, table: pa.Table, cuts: list[int]) -> tuple[list, list[ObservationReceipt]]:
    """Blocks cut at ``cuts``; an observation offered after each block, as the step owner does."""
    events: list = []
    scorer = ContractScorer(contract, inst)
    scorer.start(lambda kind, *, t, fields=None, **more: events.append((TYPE_OF[kind], t, fields)), 0.0)
    arrays = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    edges = [0, *sorted({c for c in cuts if 0 < c < table.num_rows}), table.num_rows]
    receipts = []
    for a, b in zip(edges[:-1], edges[1:]):
        scorer.update({name: values[a:b] for name, values in arrays.items()})
        step, t = int(arrays["step"][b - 1]), float(arrays["t"][b - 1])
        obs = Observation(obs_id=f"obs{b}", step=step, t=t, evidence_version=scorer.evidence_version, instruction="")
        scorer.offer(obs)
        receipts.append(ObservationReceipt(obs_id=obs.obs_id, step=step, t_acquired=t, t_delivered=t,
                                           evidence_version=obs.evidence_version))
    return events, receipts


def stream(script: list, seed: int) -> tuple[WeighingInstance, pa.Table]:
    inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}))
    s = WeighingStream(inst).hold(1.2)
    for action, w, seconds in script:
        changes = [dict(grasped={w}, speed=0.1), dict(grasped=set(), on_pan=s.on_pan | {w}, speed=0.0),
                   dict(grasped=set(), on_pan=s.on_pan - {w}, speed=0.0), dict(sensor_ok=not s.sensor_ok),
                   dict(over_pan={w})]
        s.set(**changes[action]).hold(seconds)
    return inst, pa.Table.from_pylist(jitter(s.rows, np.random.default_rng(seed), ["pan_force_n"], 1e-4))


def test_blocks_of_one_control_period_emit_the_replayed_events() -> None:
    """Grasp w50, land it, hold: the dwell starts with the reading (1 g) before the set settles (0.5 g over 1 s)."""
    inst, table = stream([(0, "w50", 0.4), (1, "w50", 4.5)], seed=3)
    events, receipts = feed(CONTRACT, inst, table, list(range(50, table.num_rows, 50)))
    replayed, end = CONTRACT.replay(table, receipts, inst)
    assert [kind for kind, _, _ in events] == ["opportunity", "choice", "dwell", "confirm", "opportunity", "dwell"]
    assert events == [(e.type, e.t, e.fields) for e in replayed]
    assert end == {"physical_complete": True}


@settings(max_examples=15, deadline=None)
@given(script=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(STANDARDS), st.floats(0.002, 2.0)), max_size=8),
       seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 3000), max_size=40))
def test_block_and_row_paths_emit_the_same_events(script: list, seed: int, cuts: list[int]) -> None:
    inst, table = stream(script, seed)
    by_block, receipts = feed(CONTRACT, inst, table, cuts)
    by_row, _ = feed(RowsOnly(CONTRACT), inst, table, cuts)
    assert by_block == by_row
    replayed, _ = CONTRACT.replay(table, receipts, inst)
    assert by_block == [(e.type, e.t, e.fields) for e in replayed]
