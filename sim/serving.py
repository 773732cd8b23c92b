"""Served policies in the weighing bench: connect, preflight, and the reference executor.

:func:`connect` is the policy factory behind ``labrecord sim weighing --policy openpi |
http | lerobot``: it opens the service, checks what it declares against what the bench
offers (the capability preflight, recorded in ``run.json`` ``system.preflight``) and
returns a :class:`Served` policy used for every episode of the command (one connection).

* ``openpi`` — :class:`~labrecord.recorders.adapters.openpi.OpenPIPolicy` with a
  ``libero`` or ``droid`` profile; the profile fixes the action convention, the control
  rate and the chunk execution contract; cameras ``front`` (third person) and ``wrist``.
* ``http`` — :class:`~labrecord.recorders.adapters.agent.HttpAgentPolicy`; offered tools
  default to all five.  ``call_skill`` makes the system execution-supported: ``run.json``
  declares ``intervention`` mode ``replace``, site ``skill``, oracle
  ``reference-executor``, so its results never pool with native runs.
* ``lerobot`` — :mod:`labrecord.sim.lerobot_policy` (a saved LeRobot policy run by the
  LeRobot environment's Python behind the agent bridge).
"""
from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import Intervention, Operation, Preflight
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault

EXTERNAL = ("openpi", "http", "lerobot")
#: profile image role -> bench camera
ROLE_CAMERAS = {"third_person": "front", "wrist": "wrist"}
#: native channels an agent sees by default: the three cameras and proprioception
AGENT_CHANNELS = ("front", "wrist", "display", "robot")
AGENT_CONTROL_HZ = 10.0
AGENT_MAX_CHUNK = 10


@dataclass
class Served:
    """A connected policy with its preflight; ``tools`` answers agent tool calls."""

    policy: Any
    preflight: Preflight
    tools: Any = None
    render_size: int = 224
    intervention: Intervention = field(default_factory=Intervention)
    close: Callable[[], None] = lambda: None


def connect(kind: str, *, url: str | None = None, profile: str = "libero", path: str | None = None,
            convention: str = "eef_delta", tools: tuple[str, ...] | None = None, timeout_s: float = 60.0,
            name: str | None = None) -> Served:
    """Open a served policy of ``kind`` (``openpi``, ``http``, ``lerobot``) and preflight it.

    A service that cannot be reached is a :class:`LabrecordError` naming the endpoint
    (nothing has run yet, so there is no run to mark unresolved).
    """
    try:
        if kind == "openpi":
            return _openpi(_need(url, "--policy-url", kind), profile, timeout_s, name)
        if kind == "http":
            return _http(_need(url, "--policy-url", kind), convention, tools, timeout_s, name)
        if kind == "lerobot":
            from labrecord.sim.lerobot_policy import serve_lerobot

            policy, preflight, close = serve_lerobot(_need(path, "--policy-path", kind), timeout_s=timeout_s)
            return Served(policy, preflight, close=close)
    except PolicyServiceFault as fault:
        raise LabrecordError(f"preflight failed: {fault}") from fault
    raise LabrecordError(f"policy {kind!r}: expected one of {', '.join(EXTERNAL)}")


def _need(value: str | None, option: str, kind: str) -> str:
    if not value:
        raise LabrecordError(f"--policy {kind} needs {option}")
    return value


def _openpi(url: str, profile_name: str, timeout_s: float, name: str | None) -> Served:
    from labrecord.recorders.adapters.openpi import OpenPIConnection, OpenPIPolicy, profile
    from labrecord.sim.control import action_spec

    prof = profile(profile_name)
    spec = action_spec(prof.convention, prof.control_hz, max_chunk=prof.execute_rows)
    connection = OpenPIConnection(url, timeout_s=timeout_s)
    policy = OpenPIPolicy(connection, prof, spec, cameras=ROLE_CAMERAS, name=name or f"openpi-{prof.name}")
    mapped = ", ".join(f"{key} <- {ROLE_CAMERAS[role]}" for key, role in prof.images.items())
    preflight = Preflight(
        protocol="openpi-websocket", endpoint=connection.url, profile=prof.name,
        channels=list(policy.capabilities.channels), action_convention=prof.convention,
        announced=jsonable(connection.metadata),
        checks=["connected; server metadata received", f"images mapped: {mapped}",
                f"state: {prof.state}", f"actions: (H, {prof.action_dim}) rows, first {prof.execute_rows} "
                f"executed at {prof.control_hz:g} Hz", "prompt at most 512 characters"])
    return Served(policy, preflight, render_size=prof.render_size, close=connection.close)


def _http(url: str, convention: str, tools: tuple[str, ...] | None, timeout_s: float, name: str | None) -> Served:
    from labrecord.models.agent import AGENT_PROTOCOL, TOOLS
    from labrecord.recorders.adapters.agent import HttpAgentPolicy
    from labrecord.recorders.adapters.tools import REFERENCE_EXECUTOR, AgentTools
    from labrecord.sim.control import action_spec

    offered = tuple(TOOLS if tools is None else tools)
    if "call_skill" in offered and convention != "eef_delta":
        raise LabrecordError(f"call_skill: the reference executor acts in eef_delta, not {convention}; "
                             "drop call_skill from --tools or use --convention eef_delta")
    spec = action_spec(convention, AGENT_CONTROL_HZ, max_chunk=AGENT_MAX_CHUNK)
    reachable(url, timeout_s)
    policy = HttpAgentPolicy(url, spec, channels=AGENT_CHANNELS, tools=offered, name=name or "http-agent",
                             timeout_s=timeout_s)
    skill = start_skill if "call_skill" in offered else None
    intervention = (Intervention(mode="replace", site="skill", oracle=REFERENCE_EXECUTOR) if skill
                    else Intervention())
    preflight = Preflight(protocol=AGENT_PROTOCOL, endpoint=url, channels=list(AGENT_CHANNELS),
                          action_convention=convention, hooks=list(offered),
                          checks=["endpoint accepts connections", f"actions: (k <= {AGENT_MAX_CHUNK}, {spec.dim}) "
                                  f"rows at {AGENT_CONTROL_HZ:g} Hz or one tool call per decision"])
    return Served(policy, preflight, tools=AgentTools(skill, object_positions), intervention=intervention)


def reachable(url: str, timeout_s: float) -> None:
    """A TCP connection to the URL's host and port opens (the agent protocol has no handshake)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LabrecordError(f"--policy-url {url!r}: expected http://HOST:PORT/…")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except OSError as error:
        raise PolicyServiceFault("transport_fault", url, f"cannot connect: {error}") from error


def jsonable(value: Any) -> Any:
    """What a service announced, reduced to JSON data (arrays by shape, bytes by length)."""
    if isinstance(value, dict):
        return {str(k.decode() if isinstance(k, bytes) else k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


# -- the reference executor ---------------------------------------------------------------

def object_positions(state: dict[str, Any]) -> dict[str, list[float]]:
    """Measured positions of the standards and the sample box (evaluator state)."""
    return dict(state.get("object_poses") or {})


class SkillRun:
    """The reference executor carrying out one pick-and-place operation: the planned tool
    targets, each turned into an end-effector delta from the measured pose."""

    def __init__(self, op: Operation, state: dict[str, Any], control_hz: float = AGENT_CONTROL_HZ) -> None:
        from labrecord.sim.executor import sample_plan, transfer_plan
        from labrecord.sim.scene import STANDARDS

        if op.kind not in ("add", "remove") or op.object not in STANDARDS or op.dest not in (None, "pan"):
            raise InterfaceViolation("call_skill", "op", str(op),
                                     f"add(wXX, pan) or remove(wXX, pan) with wXX one of {list(STANDARDS)}")
        robot = state["robot"]
        self.op = op
        self.rows = sample_plan(np.append(robot["eef_pos"], 0.0),
                                transfer_plan(op.object, state["object_poses"], op.kind == "add"), control_hz)
        self.cursor = 0

    def next_row(self, state: dict[str, Any]) -> np.ndarray | None:
        from labrecord.sim.policies import delta_toward

        if self.cursor >= len(self.rows):
            return None
        row = self.rows[self.cursor]
        self.cursor += 1
        return delta_toward(state["robot"], row)[0]


def start_skill(op: Operation, state: dict[str, Any]) -> SkillRun:
    return SkillRun(op, state)
