"""Hypothesis strategies for random corpora (shared by the scorer property tests)."""
from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from labrecord.scorers.synthetic import DecisionSpec, FailureSpec, GeometrySpec, RolloutSpec

INSTANCES = ["i0", "i1", "i2", "i3"]

finite = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False, width=32)
vector = st.one_of(st.none(), st.just([0.0, 0.0, 0.0]), st.lists(st.one_of(finite, st.none()), min_size=3, max_size=3),
                   st.lists(finite, min_size=3, max_size=3))
geometry = st.builds(GeometrySpec, p_hat=vector, p_ref=st.lists(finite, min_size=3, max_size=3),
                     v_hat=vector, v_ref=st.one_of(st.none(), st.lists(finite, min_size=3, max_size=3)))
decision = st.builds(DecisionSpec, decision=st.sampled_from(["select_weight", "d2"]),
                     outcome=st.sampled_from(["correct", "wrong", "none", "late"]), terminal=st.booleans(),
                     delivered=st.sampled_from([True, True, False]), delivery_delay_s=st.sampled_from([0.0, 0.0, 1.0]),
                     oracle_late=st.booleans())
handoffs = st.lists(st.builds(dict, decision=st.sampled_from(["select_weight", "d2"]), verified=st.booleans()), max_size=1)
#: a decision:assist recommendation delivered at an opportunity (supported runs only)
recommendation = st.one_of(st.none(), st.sampled_from(["w10", "w100"]).map(
    lambda w: {"mode": "assist", "site": "decision", "payload": {"kind": "add", "object": w, "dest": "pan"}}))
failure = st.builds(FailureSpec, recoverable=st.booleans(), resolved=st.sampled_from([True, False, None]))


@st.composite
def rollout(draw, index: int) -> RolloutSpec:
    supported = draw(st.booleans()) and draw(st.booleans())
    physical = draw(st.booleans())
    return RolloutSpec(
        run_id=f"r{index:02d}", system=draw(st.sampled_from(["pi05", "groot"])),
        decisions=[dataclasses.replace(d, oracle=draw(recommendation)) if supported else d
                   for d in draw(st.lists(decision, max_size=3))], physical=physical,
        valid=draw(st.sampled_from([None, False])) if physical else False,
        failures=draw(st.lists(failure, max_size=2)), violations=draw(st.lists(st.booleans(), max_size=1)),
        geometry=draw(st.lists(geometry, max_size=2)), confirms=draw(st.lists(st.sampled_from(["s1", "s2"]), max_size=1, unique=True)),
        validity_fault=draw(st.booleans()) and draw(st.booleans()),
        status=draw(st.sampled_from(["complete", "complete", "aborted"])),
        population=("pop", draw(st.sampled_from(INSTANCES))) if draw(st.booleans()) or supported else None,
        evaluation_version="1",
        intervention={"mode": "assist", "site": "decision", "oracle": "o1", "branch": "supported"} if supported else {},
        episode=draw(st.booleans()) or True,
        handoffs=draw(handoffs), ended=draw(st.sampled_from([True, True, False])),
        measurements=draw(st.sampled_from(["recorded", "none"])),
        runtime_s=draw(st.sampled_from([None, 12.5, 30.0])), runtime_clock=draw(st.sampled_from(["sim", "wall"])),
    )


@st.composite
def population(draw) -> list[dict]:
    records = [{"type": "instance", "instance_id": i} for i in INSTANCES]
    for instance in draw(st.lists(st.sampled_from(INSTANCES), unique=True, max_size=4)):
        records.append({"type": "checkpoint", "instance_id": instance, "decision": draw(st.sampled_from(["select_weight", "d2"]))})
    for instance in draw(st.lists(st.sampled_from(INSTANCES), unique=True, max_size=4)):
        records.append({"type": "fixed_start", "instance_id": instance, "subgoal": "s1"})
    if draw(st.booleans()):
        records.append({"type": "pair", "pair_id": "b0", "members": ["i0", "i1"], "kind": "answer_changing"})
    if draw(st.booleans()):
        records.append({"type": "pair", "pair_id": "b1", "members": ["i2", "i3"], "kind": "geometric"})
    if draw(st.booleans()):
        records.append({"type": "oracle_pair", "pair_id": "p0", "base": "i0", "supported": "i1", "mode": "assist",
                        "oracle": "o1", "site": "decision"})
    return records


@st.composite
def corpus(draw) -> tuple[list[RolloutSpec], list[dict], set[str]]:
    """Rollouts, a registry, and the run ids whose events log gets cut (invalid runs)."""
    n = draw(st.integers(min_value=1, max_value=7))
    rollouts = [draw(rollout(i)) for i in range(n)]
    cut = set(draw(st.lists(st.sampled_from([r.run_id for r in rollouts]), max_size=2)))
    return rollouts, draw(population()), cut
