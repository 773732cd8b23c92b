"""The HTTP agent bridge against a real HTTP server on 127.0.0.1."""
from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

from labrecord.models import ActionSpec, Operation
from labrecord.models.agent import CallSkill, ReportGeometry, ReportState, Wait
from labrecord.recorders.adapters.agent import HttpAgentPolicy, decode_reply
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
from labrecord.recorders.policy import Observation
from tests.recorders.adapters.servers import HttpAgentStandIn

SPEC = ActionSpec(representation="eef", dim=7, mode="delta", control_hz=10.0, max_chunk=4)


def observation() -> Observation:
    frame = np.zeros((8, 8, 3), np.uint8)
    frame[2, 3] = (10, 20, 30)
    return Observation(obs_id="obs00007", step=40, t=2.0, evidence_version=3, instruction="weigh 180 g",
                       images={"front": frame}, state={"robot": {"joint_pos": [0.0] * 7}})


def ok(payload: dict) -> tuple[int, bytes]:
    return 200, json.dumps(payload).encode()


@pytest.fixture
def agent():
    servers: list[HttpAgentStandIn] = []

    def start(behaviour):
        servers.append(HttpAgentStandIn(behaviour))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def test_actions_reply_and_request_content(agent) -> None:
    """The agent receives the instruction, proprioception and a PNG it can decode to the
    same pixels; two rows of 7 come back as a (2, 7) chunk."""
    from PIL import Image

    srv = agent(lambda i, r: ok({"type": "actions", "actions": [[0.0] * 7, [0.01] * 7]}))
    policy = HttpAgentPolicy(srv.url, SPEC, channels=("front", "robot"), timeout_s=5)
    policy.reset(2)
    chunk = policy.act(observation())
    assert chunk.actions.shape == (2, 7) and chunk.tool is None
    request = srv.requests[0]
    assert request["protocol"] == "labrecord.agent/1" and request["episode"] == 2 and request["obs_id"] == "obs00007"
    assert sorted(request["state"]) == ["robot"]
    png = base64.b64decode(request["images"]["front"].split(",", 1)[1])
    assert tuple(np.asarray(Image.open(io.BytesIO(png)))[2, 3]) == (10, 20, 30)


@pytest.mark.parametrize(("payload", "expected"), [
    ({"type": "report_state", "fields": {"reading_g": 180.2}}, ReportState),
    ({"type": "report_geometry", "target": "pan", "p_hat": [0.5, 0.0, 0.1]}, ReportGeometry),
    ({"type": "call_skill", "op": {"kind": "add", "object": "w20", "dest": "pan"}}, CallSkill),
    ({"type": "wait"}, Wait),
])
def test_tool_calls(agent, payload, expected) -> None:
    srv = agent(lambda i, r: ok(payload))
    chunk = HttpAgentPolicy(srv.url, SPEC, channels=("front",), timeout_s=5).act(observation())
    assert isinstance(chunk.tool, expected) and chunk.actions.shape == (0, 7)


def test_commit_operation_is_the_report(agent) -> None:
    srv = agent(lambda i, r: ok({"type": "commit_operation", "op": {"kind": "add", "object": "w20", "dest": "pan"}}))
    policy = HttpAgentPolicy(srv.url, SPEC, channels=("front",), timeout_s=5)
    assert policy.capabilities.reports_operations
    chunk = policy.act(observation())
    assert chunk.report == Operation(kind="add", object="w20", dest="pan")


@pytest.mark.parametrize(("payload", "field"), [
    ({"type": "actions", "actions": [[0.0] * 3]}, "actions"),
    ({"type": "dance"}, "type"),
    ({"actions": [[0.0] * 7]}, "type"),
    ({"type": "commit_operation", "op": {"kind": "juggle", "object": "w20", "dest": "pan"}}, "op.kind"),
    ({"type": "report_geometry"}, "reply"),
])
def test_interface_violations_name_the_field(agent, payload, field) -> None:
    srv = agent(lambda i, r: ok(payload))
    with pytest.raises(InterfaceViolation) as info:
        HttpAgentPolicy(srv.url, SPEC, channels=("front",), timeout_s=5).act(observation())
    assert info.value.field == field


def test_undeclared_tool_is_interface_violation(agent) -> None:
    srv = agent(lambda i, r: ok({"type": "call_skill", "op": {"kind": "add", "object": "w20", "dest": "pan"}}))
    policy = HttpAgentPolicy(srv.url, SPEC, channels=("front",), tools=("commit_operation",), timeout_s=5)
    with pytest.raises(InterfaceViolation, match="declared tools"):
        policy.act(observation())


@pytest.mark.parametrize(("behaviour", "kind", "match"), [
    (lambda i, r: (503, b"overloaded"), "service_fault", "HTTP 503"),
    (lambda i, r: (200, b"{not json"), "service_fault", "not JSON"),
    (lambda i, r: "hang", "transport_fault", "no reply within"),
])
def test_faults_classified(agent, behaviour, kind, match) -> None:
    srv = agent(behaviour)
    with pytest.raises(PolicyServiceFault, match=match) as info:
        HttpAgentPolicy(srv.url, SPEC, channels=("front",), timeout_s=0.5).act(observation())
    assert info.value.kind == kind


def test_refused_connection(agent) -> None:
    srv = agent(lambda i, r: ok({"type": "wait"}))
    url = srv.url
    srv.stop()
    with pytest.raises(PolicyServiceFault, match="cannot reach") as info:
        HttpAgentPolicy(url, SPEC, channels=("front",), timeout_s=2).act(observation())
    assert info.value.kind == "transport_fault"


def test_decode_reply_is_pure() -> None:
    reply = decode_reply(b'{"type": "wait", "seconds": 0.5}', "x", ("wait",))
    assert isinstance(reply, Wait) and reply.seconds == 0.5
