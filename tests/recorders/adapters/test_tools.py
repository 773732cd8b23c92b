"""Agent tool calls answered inside the step owner, against a stand-in owner (no simulator)."""
from __future__ import annotations

import math
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from labrecord.models import Geometry, InterventionEvent, Operation, StateReport
from labrecord.models.agent import CallSkill, ReportGeometry, ReportState, Wait
from labrecord.recorders.adapters.tools import AgentTools
from labrecord.recorders.policy import Observation

OBS = Observation(obs_id="obs00003", step=10, t=1.0, evidence_version=2, instruction="weigh 180 g")


class Owner:
    """Records what the tools ask of the step owner."""

    def __init__(self, current=SimpleNamespace(opp="o1", evidence_version=2)) -> None:
        self.env = SimpleNamespace(time=1.0, control_hz=10.0,
                                   public_state=lambda: {"object_poses": {"w10": [0.3, 0.1, 0.01]}})
        self.scorer = SimpleNamespace(tracker=SimpleNamespace(current=current),
                                      display=lambda: {"reading_g": 60.0, "stable": True, "text": "60.0"})
        self.caps = SimpleNamespace(name="agent")
        self.held, self.events, self.violations, self.skills = [], [], [], []

    def hold(self, periods):
        self.held.append(periods)

    def emit(self, event_type, *, t, fields):
        self.events.append((event_type, fields))

    def push_violation(self, observation, violation):
        self.violations.append(violation)

    def run_skill(self, skill):
        self.skills.append(skill)


def tools(skill=None) -> AgentTools:
    return AgentTools(skill, lambda state: state["object_poses"])


def test_wait_rounds_up_to_control_periods() -> None:
    """At 10 Hz: 0.25 s → 3 periods, 0.2 s → 2 (not 3 from float error), none given → 1."""
    owner = Owner()
    for seconds in (0.25, 0.2, None):
        tools().handle(owner, Wait(seconds=seconds), OBS)
    assert owner.held == [3, 2, 1]


@given(st.floats(min_value=0.0, max_value=30.0))
def test_wait_holds_at_least_the_requested_time(seconds: float) -> None:
    owner = Owner()
    tools().handle(owner, Wait(seconds=seconds), OBS)
    (periods,) = owner.held
    assert periods >= 1 and periods / 10.0 >= seconds - 1e-9 and (periods - 1) / 10.0 < max(seconds, 0.1)
    assert periods == max(1, math.ceil(seconds * 10.0 - 1e-9))


def test_reports_bind_to_the_current_opportunity() -> None:
    owner = Owner()
    tools().handle(owner, ReportState(fields={"reading_g": 61}), OBS)
    tools().handle(owner, ReportGeometry(target="w10", p_hat=[0.3, 0.1, 0.0]), OBS)
    (state_type, state), (geo_type, geo) = owner.events
    assert state_type is StateReport and state["opp"] == "o1" and state["reference"] == {"reading_g": 60.0, "stable": True}
    assert geo_type is Geometry and geo["p_ref"] == [0.3, 0.1, 0.01] and geo["evidence_version"] == 2


def test_no_open_opportunity_writes_no_event() -> None:
    owner = Owner(current=None)
    tools().handle(owner, ReportState(fields={}), OBS)
    assert owner.events == []


def test_unknown_geometry_target_and_unoffered_skill_are_interface_failures() -> None:
    owner = Owner()
    tools().handle(owner, ReportGeometry(target="w999"), OBS)
    tools().handle(owner, CallSkill(op=Operation("add", "w10", "pan")), OBS)
    assert [v.field for v in owner.violations] == ["target", "type"] and owner.events == []


def test_call_skill_starts_the_executor_and_records_the_replacement() -> None:
    owner = Owner()
    started = []
    tools(lambda op, state: started.append(op) or "plan").handle(owner, CallSkill(op=Operation("add", "w10", "pan")), OBS)
    assert owner.skills == ["plan"] and started == [Operation("add", "w10", "pan")]
    ((event_type, fields),) = owner.events
    assert event_type is InterventionEvent and (fields["mode"], fields["site"]) == ("replace", "skill")
