"""The HTTP agent bridge: an agent behind an HTTP endpoint acts through tool calls.

One ``POST`` per decision carries the authorized observation (:class:`AgentRequest`:
registered camera images as base64 PNG, proprioception, the public instruction); the
reply (:data:`AgentReply`) is either an action chunk or one tool call:

* ``report_state`` — a semantic report (occupancy, readout) → a ``state_report`` event;
* ``commit_operation`` — the operation the agent commits to → a ``choice`` on the
  explicit-report track;
* ``report_geometry`` — a target's position/axis estimate → a ``geometry`` event;
* ``call_skill`` — the reference executor carries out an operation (Skill replacement,
  Labference sec. 6.2): an execution-supported system condition, part of the result
  identity, never pooled with native runs;
* ``wait`` — no action this decision.

The JSON Schemas of both messages are written to ``schemas/`` with the others.
"""
from __future__ import annotations

import base64
import io
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import msgspec
import numpy as np

from labrecord.models import ActionSpec
from labrecord.models.agent import (
    AGENT_PROTOCOL,
    TOOLS,
    Actions,
    AgentReply,
    AgentRequest,
    CommitOperation,
)
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
from labrecord.recorders.policy import ActionChunk, Capabilities, Observation

#: largest reply body read; a longer one is a service fault, never read into memory whole
MAX_REPLY_BYTES = 8 * 1024 * 1024
_REPLY = msgspec.json.Decoder(AgentReply)


def png_data_url(frame: np.ndarray) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame)).save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_reply(body: bytes, source: str, tools: tuple[str, ...]) -> AgentReply:
    """Parse a reply body: undecodable JSON is a service fault; JSON that breaks the
    interface is an :class:`InterfaceViolation` naming the field."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise PolicyServiceFault("service_fault", source, f"reply is not JSON: {error}") from error
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind is None:
        raise InterfaceViolation(source, "type", raw if not isinstance(raw, dict) else sorted(raw),
                                 "'actions' or a tool name")
    if kind != "actions" and kind not in tools:
        raise InterfaceViolation(source, "type", kind, f"'actions' or one of the declared tools {list(tools)}")
    try:
        return _REPLY.decode(body)
    except msgspec.ValidationError as error:
        path = str(error).rsplit("at `", 1)[-1].rstrip("`") if "at `" in str(error) else "reply"
        raise InterfaceViolation(source, path.removeprefix("$."), kind, str(error).split(" - at")[0]) from error


class HttpAgentPolicy:
    """An agent endpoint behind the :class:`~labrecord.recorders.policy.Policy` interface.

    ``channels`` are what the agent may see (registered cameras and ``robot`` natively);
    ``tools`` the hooks it is offered — ``call_skill`` makes the system execution-supported.
    A tool call comes back as an :class:`ActionChunk` with no actions and ``tool`` set; the
    recorder turns it into its event.
    """

    def __init__(self, url: str, action_spec: ActionSpec, *, channels: tuple[str, ...], tools: tuple[str, ...] = TOOLS,
                 name: str = "http-agent", timeout_s: float = 60.0, kind: str = "agent", revision: str = "") -> None:
        unknown = sorted(set(tools) - set(TOOLS))
        if unknown:
            from labrecord.errors import LabrecordError

            raise LabrecordError(f"agent tools {unknown}: expected some of {list(TOOLS)}")
        self.url, self.timeout_s, self.tools = url, timeout_s, tuple(tools)
        self.capabilities = Capabilities(name=name, kind=kind, action_spec=action_spec, channels=tuple(channels),
                                         reports_operations="commit_operation" in tools, revision=revision)
        self.episode = 0
        self.first = True
        self.last_round_trip_s = 0.0
        self.last_request_bytes = 0

    def reset(self, episode: int) -> None:
        self.episode = episode
        self.first = True

    def exchange(self) -> dict[str, Any]:
        """The request summary of the last query (delivery receipt)."""
        return {"protocol": AGENT_PROTOCOL, "round_trip_s": self.last_round_trip_s, "request_bytes": self.last_request_bytes}

    def request(self, observation: Observation) -> AgentRequest:
        return AgentRequest(episode=self.episode, first=self.first, obs_id=observation.obs_id, t=observation.t,
                            evidence_version=observation.evidence_version, instruction=observation.instruction,
                            images={cam: png_data_url(frame) for cam, frame in sorted(observation.images.items())},
                            state=observation.state, tools=list(self.tools), action_spec=self.capabilities.action_spec)

    def act(self, observation: Observation) -> ActionChunk:
        body = msgspec.json.encode(self.request(observation), enc_hook=_jsonable)
        self.last_request_bytes = len(body)
        self.first = False
        started = time.perf_counter()
        reply = decode_reply(self._post(body), self.url, self.tools)
        self.last_round_trip_s = round(time.perf_counter() - started, 6)
        if isinstance(reply, Actions):
            actions = np.asarray(reply.actions, dtype=np.float64)
            if actions.ndim != 2 or actions.shape[1] != self.capabilities.action_spec.dim:
                raise InterfaceViolation(self.url, "actions", f"shape {list(actions.shape)}",
                                         f"(k, {self.capabilities.action_spec.dim}) rows")
            return ActionChunk(actions=actions)
        empty = np.zeros((0, self.capabilities.action_spec.dim))
        report = reply.op if isinstance(reply, CommitOperation) else None
        return ActionChunk(actions=empty, report=report, tool=reply)

    def _post(self, body: bytes) -> bytes:
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = response.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as error:
            raise PolicyServiceFault("service_fault", self.url, f"HTTP {error.code} {error.reason}") from error
        except (TimeoutError, socket.timeout) as error:
            raise PolicyServiceFault("transport_fault", self.url, f"no reply within {self.timeout_s:g} s") from error
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise PolicyServiceFault("transport_fault", self.url, f"no reply within {self.timeout_s:g} s") from error
            raise PolicyServiceFault("transport_fault", self.url, f"cannot reach the agent: {reason}") from error
        if len(data) > MAX_REPLY_BYTES:
            raise PolicyServiceFault("service_fault", self.url, f"reply longer than {MAX_REPLY_BYTES} bytes")
        return data


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise NotImplementedError(f"cannot send {type(obj).__name__}")
