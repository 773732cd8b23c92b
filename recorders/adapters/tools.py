"""Agent tool calls carried out inside the step owner.

A tool call (:data:`labrecord.models.agent.ToolCall`) comes back from the HTTP agent bridge
as an :class:`~labrecord.recorders.policy.ActionChunk` with no rows; the step owner hands
it to :class:`AgentTools`, which turns it into the record the protocol defines:

* ``report_state`` → a ``state_report`` event on the current opportunity, with the
  reference the evaluator holds (the displayed reading and stability);
* ``commit_operation`` → a ``choice`` on the explicit-report track (the step owner passes
  the chunk's ``report`` to the online scorer);
* ``report_geometry`` → a ``geometry`` event; ``p_ref`` is the target's measured position
  (evaluator state, never sent to the agent); an unknown target is an interface failure;
* ``wait`` → the robot holds still for the requested time (at least one control period),
  consuming simulated time;
* ``call_skill`` → the reference executor carries out the operation (Skill replacement,
  Labference sec. 6.2), bound to the current opportunity by an ``intervention`` event
  (mode ``replace``, site ``skill``); the policy is queried again once the executor is done.

Events that must name an opportunity are written only while one is open; a call outside
any opportunity is kept in the delivery receipt alone.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from labrecord.models import Geometry, InterventionEvent, Operation, StateReport
from labrecord.models.agent import CallSkill, CommitOperation, ReportGeometry, ReportState, Wait
from labrecord.recorders.adapters.faults import InterfaceViolation
from labrecord.recorders.policy import Observation

#: ``oracle`` of an execution-supported system (run.json ``intervention``)
REFERENCE_EXECUTOR = "reference-executor"


class AgentTools:
    """``skill(op, state) -> SkillRun`` starts the reference executor (None: ``call_skill``
    is not offered); ``positions(state)`` maps a target name to its measured position."""

    def __init__(self, skill: Callable[[Operation, dict[str, Any]], Any] | None,
                 positions: Callable[[dict[str, Any]], dict[str, list[float]]]) -> None:
        self.skill = skill
        self.positions = positions

    def handle(self, owner: Any, tool: Any, observation: Observation) -> None:
        current = getattr(getattr(owner.scorer, "tracker", None), "current", None)
        t = owner.env.time
        if isinstance(tool, Wait):
            periods = 1 if tool.seconds is None else max(1, math.ceil(tool.seconds * owner.env.control_hz - 1e-9))
            owner.hold(periods)
        elif isinstance(tool, CommitOperation):
            pass  # the step owner hands the chunk's report to the scorer (report track)
        elif isinstance(tool, ReportState):
            if current is not None:
                display = getattr(owner.scorer, "display", None)
                reference = {k: v for k, v in display().items() if k != "text"} if callable(display) else {}
                owner.emit(StateReport, t=t, fields={"opp": current.opp, "fields": tool.fields, "reference": reference,
                                                     "evidence_version": current.evidence_version})
        elif isinstance(tool, ReportGeometry):
            state = owner.env.public_state()
            known = self.positions(state)
            if tool.target not in known:
                owner.push_violation(observation, InterfaceViolation(owner.caps.name, "target", tool.target,
                                                                     f"one of {sorted(known)}"))
                return
            if current is not None:
                owner.emit(Geometry, t=t, fields={"opp": current.opp, "target": tool.target, "p_hat": tool.p_hat,
                                                  "v_hat": tool.v_hat, "p_ref": [float(v) for v in known[tool.target][:3]],
                                                  "evidence_version": current.evidence_version})
        elif isinstance(tool, CallSkill):
            if self.skill is None:
                owner.push_violation(observation, InterfaceViolation(owner.caps.name, "type", "call_skill",
                                                                     "a tool this system was offered"))
                return
            try:
                owner.run_skill(self.skill(tool.op, owner.env.public_state()))
            except InterfaceViolation as violation:
                owner.push_violation(observation, violation)
                return
            if current is not None:
                owner.emit(InterventionEvent, t=t, fields={
                    "opp": current.opp, "evidence_version": current.evidence_version, "mode": "replace",
                    "site": "skill", "payload_id": REFERENCE_EXECUTOR, "original": str(tool.op),
                    "substituted": str(tool.op)})

