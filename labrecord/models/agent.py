"""Messages of the HTTP agent bridge (schema ``labrecord.agent/1``).

The request carries what an agent may see at one decision; the reply is an action
chunk or one tool call, told apart by ``type``.  The recorder's adapter
(:mod:`labrecord.recorders.adapters.agent`) sends and checks them; ``schemas/`` holds
their JSON Schemas for agents written in other languages.
"""
from __future__ import annotations

from typing import Any, Union

import msgspec

from labrecord.models.manifest import ActionSpec
from labrecord.models.operation import Operation

AGENT_PROTOCOL = "labrecord.agent/1"
TOOLS = ("report_state", "commit_operation", "report_geometry", "call_skill", "wait")


class AgentRequest(msgspec.Struct, kw_only=True):
    """What the agent receives at one decision."""

    protocol: str = AGENT_PROTOCOL
    episode: int
    #: the first decision since the episode reset: the agent clears its episode memory
    first: bool = False
    obs_id: str
    t: float
    evidence_version: int
    instruction: str
    images: dict[str, str] = {}          # camera -> "data:image/png;base64,…"
    state: dict[str, Any] = {}           # declared channels only (proprioception natively)
    tools: list[str] = []
    action_spec: ActionSpec


class Actions(msgspec.Struct, tag="actions", tag_field="type", kw_only=True, forbid_unknown_fields=True):
    actions: list[list[float]]


class ReportState(msgspec.Struct, tag="report_state", tag_field="type", kw_only=True, forbid_unknown_fields=True):
    fields: dict[str, Any]


class CommitOperation(msgspec.Struct, tag="commit_operation", tag_field="type", kw_only=True,
                      forbid_unknown_fields=True):
    op: Operation


class ReportGeometry(msgspec.Struct, tag="report_geometry", tag_field="type", kw_only=True,
                     forbid_unknown_fields=True):
    target: str
    p_hat: list[float | None] | None = None
    v_hat: list[float | None] | None = None


class CallSkill(msgspec.Struct, tag="call_skill", tag_field="type", kw_only=True, forbid_unknown_fields=True):
    op: Operation


class Wait(msgspec.Struct, tag="wait", tag_field="type", kw_only=True, forbid_unknown_fields=True):
    seconds: float | None = None


AgentReply = Union[Actions, ReportState, CommitOperation, ReportGeometry, CallSkill, Wait]
ToolCall = Union[ReportState, CommitOperation, ReportGeometry, CallSkill, Wait]
