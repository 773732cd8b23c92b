"""The one feature kernel of a contract (scorers/contracts/base.py): the online stepper fed
blocks of any size, and row by row, gives the arrays of the bulk path bit for bit."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.centrifuge import CentrifugeInstance
from labrecord.scorers.contracts.rack import RackInstance
from labrecord.scorers.contracts.streams import CentrifugeStream, RackStream, rows_table

START = (0.5, 0.2, 0.05, 0.0)


def rack_rows() -> tuple[RackInstance, list[dict]]:
    instance = RackInstance(rack_pose=START)
    s = RackStream(instance).hold(0.3)
    s.approach("B3", carrying=True).hold(0.3).seat("B2").hold(0.8)
    s.set(occluded=True).still().hold(0.2).move_rack((0.5, 0.2, 0.05, math.pi)).hold(0.3).set(occluded=False).hold(0.3)
    s.approach("B2").hold(0.3).lift().hold(0.3).to_table().hold(3.5)
    return instance, s.rows


def centrifuge_rows() -> tuple[CentrifugeInstance, list[dict]]:
    instance = CentrifugeInstance(start=(("tube_a", 0),), held="tube_b")
    s = CentrifugeStream(instance).hold(0.3)
    s.place("tube_b", 6, depth_frac=0.3).hold(0.7)          # shallow: a misfit held 0.5 s
    s.place("tube_b", 6).hold(0.7).place("tube_b", None).hold(0.2).place("tube_b", 6).hold(3.5)
    return instance, s.rows


STREAMS = {"rack": rack_rows(), "centrifuge": centrifuge_rows()}


def blocks_of(rows: list[dict], cuts: list[int]) -> list[dict[str, np.ndarray]]:
    edges = [0, *sorted(set(c % len(rows) for c in cuts if c % len(rows))), len(rows)]
    names = list(rows[0])
    return [{k: np.array([r.get(k) for r in rows[a:b]]) for k in names} for a, b in zip(edges, edges[1:])]


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype.kind == b.dtype.kind and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(sorted(STREAMS)), st.lists(st.integers(min_value=1, max_value=10_000), max_size=6))
def test_blocks_of_any_size_give_the_bulk_features(family: str, cuts: list[int]) -> None:
    contract = get_contract(family)
    instance, rows = STREAMS[family]
    bulk = contract.features_bulk(rows_table(rows), instance)
    stepper = contract.stepper(instance)
    parts = [stepper.push_block(block) for block in blocks_of(rows, cuts)]
    for name in contract.features_type._fields:
        assert same(np.concatenate([p[name] for p in parts]), bulk[name]), name


def test_a_row_is_a_block_of_one() -> None:
    contract = get_contract("rack")
    instance, rows = STREAMS["rack"]
    bulk = contract.features_bulk(rows_table(rows), instance)
    stepper = contract.stepper(instance)
    pushed = [stepper.push(row) for row in rows[:400]]
    for name in contract.features_type._fields:
        assert same(np.array([getattr(f, name) for f in pushed]), bulk[name][:400]), name


def test_each_family_declares_its_state_and_instance_types() -> None:
    """TaskContract is generic over (state, instance, features); a family's parameters are
    the types its methods really take and return."""
    import typing

    from labrecord.scorers.contracts import families
    from labrecord.scorers.contracts.base import TaskContract, TaskState
    from labrecord.scorers.contracts.weighing import WeighingInstance

    instances = {"rack": RackInstance(rack_pose=START), "centrifuge": CentrifugeInstance(start=(("tube_a", 0),), held="tube_b"),
                 "weighing": WeighingInstance(target_g=180.0, sample_g=110.0, goal=frozenset(["w50"]), f_empty_n=2.0)}
    assert sorted(instances) == families()
    for family, instance in instances.items():
        contract = get_contract(family)
        base = next(b for b in type(contract).__orig_bases__ if typing.get_origin(b) is TaskContract)  # type: ignore[attr-defined]
        state_type, instance_type, _ = typing.get_args(base)
        assert issubclass(state_type, TaskState) and state_type is not TaskState
        assert isinstance(instance, instance_type)
        assert type(contract.initial_state(instance)) is state_type
        assert type(contract.tracker(instance).state) is state_type
