"""TaskContract.payload_scope: the task-owned check of an Oracle payload before delivery (sec. 6.3)."""
from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from labrecord.models import Operation
from labrecord.scorers.contracts.weighing import STANDARDS, WeighingContract

CONTRACT = WeighingContract()
OPS = st.builds(Operation, st.sampled_from(["add", "remove"]), st.sampled_from(list(STANDARDS)), st.just("pan"))


def test_hand_cases():
    legal = [Operation("add", "w20", "pan")]
    assert CONTRACT.payload_scope("decision", Operation("add", "w20", "pan"), legal) is None
    assert "not in the legal set" in CONTRACT.payload_scope("decision", Operation("add", "w50", "pan"), legal)
    assert "not an operation" in CONTRACT.payload_scope("decision", None, [])
    assert CONTRACT.payload_scope("semantic", {"reading_g": 130.2, "stable": True}, legal) is None
    # hidden sample mass and the target are evaluator-side, never Semantic facts
    assert "'sample_g'" in CONTRACT.payload_scope("semantic", {"reading_g": 130.2, "sample_g": 110.0}, legal)
    # geometry: the authorized candidate frames (standards, pan) as finite positions only
    assert CONTRACT.payload_scope("geometry", {"w50": [0.25, -0.15, 0.016], "pan": [0.0, 0.0, 0.066]}, legal) is None
    assert "'sample' is not an authorized candidate" in CONTRACT.payload_scope("geometry", {"sample": [0, 0, 0.07]}, legal)
    assert "not a finite position" in CONTRACT.payload_scope("geometry", {"w10": [0.25, float("nan"), 0.01]}, legal)
    assert "not a finite position" in CONTRACT.payload_scope("geometry", {"w10": [0.25, 0.05]}, legal)
    assert "not a mapping of frames" in CONTRACT.payload_scope("geometry", {}, legal)
    assert "no scope rule" in CONTRACT.payload_scope("timing", {"p": [0, 0, 0]}, legal)
    # the reference executor carries out the selected transfer, legal or not; never a stop
    assert CONTRACT.payload_scope("skill", Operation("add", "w50", "pan"), legal) is None
    assert "carries out only add, remove" in CONTRACT.payload_scope("skill", Operation("stop"), legal)


@given(OPS, st.lists(OPS, max_size=4))
def test_a_decision_payload_is_in_scope_exactly_when_legal(op, legal):
    assert (CONTRACT.payload_scope("decision", op, legal) is None) == (op in legal)


@given(st.dictionaries(st.sampled_from(["reading_g", "stable", "sample_g", "target_g", "goal"]), st.integers(), min_size=1))
def test_a_semantic_payload_is_in_scope_exactly_when_its_fields_are_shown(payload):
    assert (CONTRACT.payload_scope("semantic", payload, []) is None) == (set(payload) <= {"reading_g", "stable"})


FRAME_NAMES = ["w10", "w20", "w50", "w100", "pan", "sample", "arm", "goal"]
COORD = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 2))


@given(st.dictionaries(st.sampled_from(FRAME_NAMES), st.lists(COORD, min_size=2, max_size=4), min_size=1))
def test_a_geometry_payload_is_in_scope_exactly_when_its_frames_are_authorized_positions(payload):
    authorized = set(STANDARDS) | {"pan"}
    finite = all(len(p) == 3 and all(math.isfinite(v) for v in p) for p in payload.values())
    assert (CONTRACT.payload_scope("geometry", payload, []) is None) == (set(payload) <= authorized and finite)
