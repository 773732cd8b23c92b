"""Round trips of every record type, by hand and with hypothesis."""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.examples import example_manifest
from labrecord.models import (
    EVENT_TYPES, POPULATION_TYPES, Checkpoint, Choice, Confirm, Dwell, EpisodeEnd, EpisodeStart, Event,
    Failure, FinalScores, FixedStart, Geometry, Instance, InterventionEvent, MetricValue,
    ObservationReceipt, OnlineScore, Operation, Opportunity, OraclePair, Pair, PopulationEntry,
    Recovery, RunManifest, StateReport, Validity, Violation,
)

OP = Operation("add", "w20", "pan")

ONE_OF_EACH_EVENT = [
    EpisodeStart(seq=0, t=0.0, episode=0),
    Opportunity(seq=1, t=0.1, opp="o1", decision="d1", trigger="initial", legal=[OP], obs_id="x", evidence_version=0, window_s=5.0),
    Choice(seq=2, t=0.2, opp="o1", op=OP, track="native", recognizer="grasp", first=True),
    InterventionEvent(seq=3, t=0.3, opp="o1", evidence_version=0, mode="assist", site="semantic", payload_id="p", original=None, substituted={"w": 20}),
    Geometry(seq=4, t=0.4, opp="o1", target="slot3", p_hat=[0.1, 0.2, 0.3], v_hat=[0.0, 0.0, 1.0], p_ref=[0.1, 0.2, 0.31], v_ref=[0.0, 0.0, 1.0]),
    StateReport(seq=5, t=0.5, opp="o1", fields={"reading": 170.2}, reference={"reading": 170.0}),
    Confirm(seq=6, t=0.6, obligation="d1", op=OP, predicate="supported", measured={"load_g": 20.0}, attempt=1),
    Failure(seq=7, t=0.7, op=OP, reason="drop", attempt=1, recoverable=True),
    Recovery(seq=8, t=0.8, of_seq=7, resolved=True),
    Violation(seq=9, t=0.9, kind="premature", irreversible=False),
    Dwell(seq=10, t=1.0, state="start"),
    Validity(seq=11, t=1.1, kind="sensor_error", source="pan"),
    EpisodeEnd(seq=12, t=4.0, episode=0, reason="success", physical_complete=True, valid_complete=True),
]

ONE_OF_EACH_POPULATION = [
    Instance(instance_id="i1", task_id="weighing-basic"),
    Checkpoint(instance_id="i1", decision="d1"),
    FixedStart(instance_id="i1", subgoal="add-w20"),
    Pair(pair_id="p1", members=["i1", "i2"], kind="answer_changing"),
    OraclePair(pair_id="q1", base="i1", supported="i2", mode="assist", oracle="reading", site="semantic"),
]


def test_every_event_type_is_covered() -> None:
    assert {type(e).__struct_config__.tag for e in ONE_OF_EACH_EVENT} == set(EVENT_TYPES)
    assert {type(r).__struct_config__.tag for r in ONE_OF_EACH_POPULATION} == set(POPULATION_TYPES)


@pytest.mark.parametrize("event", ONE_OF_EACH_EVENT, ids=lambda e: type(e).__struct_config__.tag)
def test_event_round_trip(event: object) -> None:
    assert msgspec.json.decode(msgspec.json.encode(event), type=Event) == event


@pytest.mark.parametrize("record", ONE_OF_EACH_POPULATION, ids=lambda r: type(r).__struct_config__.tag)
def test_population_round_trip(record: object) -> None:
    assert msgspec.json.decode(msgspec.json.encode(record), type=PopulationEntry) == record


@pytest.mark.parametrize("record", [
    example_manifest("r1"),
    ObservationReceipt(obs_id="o", step=3, t_acquired=0.1, t_delivered=0.15, evidence_version=2, channels=["front"]),
    OnlineScore(t=1.0, seq=4, metrics={"B_next": MetricValue(value=None, num=0, den=0, n=0)}),
    FinalScores(run_id="r1", status="complete", metrics={"completion": MetricValue(value=1.0, num=1, den=1, n=1)}),
], ids=lambda r: type(r).__name__)
def test_record_round_trip(record: object) -> None:
    assert msgspec.json.decode(msgspec.json.encode(record), type=type(record)) == record


def test_operations_compare_by_value() -> None:
    assert Operation("add", "w20", "pan") == Operation(kind="add", object="w20", dest="pan")
    assert len({Operation("wait"), Operation("wait"), OP}) == 2


def test_unknown_event_type_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'teleport'"):
        msgspec.json.decode(b'{"type": "teleport", "seq": 1, "t": 0}', type=Event)


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
operations = st.builds(Operation, kind=st.sampled_from(["pick", "insert", "place", "add", "remove", "wait", "stop"]),
                       object=st.none() | names, dest=st.none() | names)
events = st.one_of(
    st.builds(Opportunity, seq=st.integers(0, 2**40), t=finite, opp=names, decision=names,
              trigger=st.sampled_from(["initial", "state_change", "failed_attempt"]), legal=st.lists(operations, max_size=4),
              obs_id=st.none() | names, evidence_version=st.integers(0, 10**6), window_s=st.none() | finite),
    st.builds(Choice, seq=st.integers(0, 2**40), t=finite, opp=names, op=operations,
              track=st.sampled_from(["native", "report"]), first=st.booleans()),
    st.builds(Confirm, seq=st.integers(0, 2**40), t=finite, obligation=names, predicate=names,
              measured=st.dictionaries(names, finite, max_size=3)),
    st.builds(Geometry, seq=st.integers(0, 2**40), t=finite, opp=names, target=names,
              p_hat=st.none() | st.lists(st.none() | finite, min_size=3, max_size=3), p_ref=st.lists(finite, min_size=3, max_size=3)),
)


@given(events)
def test_events_round_trip_property(event: object) -> None:
    assert msgspec.json.decode(msgspec.json.encode(event), type=Event) == event


@given(st.builds(Pair, pair_id=names, members=st.lists(names, min_size=2, max_size=3),
                 kind=st.sampled_from(["answer_changing", "geometric"])))
def test_population_round_trip_property(record: Pair) -> None:
    assert msgspec.json.decode(msgspec.json.encode(record), type=PopulationEntry) == record


@given(names, st.integers(0, 2**31), st.sampled_from(["basic", "extended"]))
def test_manifest_round_trip_property(run_id: str, seed: int, condition: str) -> None:
    manifest = example_manifest("r" + run_id, seed=seed, condition=condition)
    assert msgspec.json.decode(msgspec.json.encode(manifest), type=RunManifest) == manifest
