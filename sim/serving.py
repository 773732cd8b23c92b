"""Served policies on every bench: connect and preflight.

:func:`connect` is the policy factory behind ``labrecord sim <family> --policy openpi |
http | lerobot``: it opens the service, checks what it declares against what the bench
offers (its cameras, and a reference executor for ``call_skill`` where the bench has one;
the capability preflight, recorded in ``run.json`` ``system.preflight``) and returns a
:class:`Served` policy used for every episode of the command (one connection).

* ``openpi`` — :class:`~labrecord.recorders.adapters.openpi.OpenPIPolicy` with a
  ``libero`` or ``droid`` profile; the profile fixes the action convention, the control
  rate and the chunk execution contract; cameras ``front`` (third person) and ``wrist``.
* ``http`` — :class:`~labrecord.recorders.adapters.agent.HttpAgentPolicy`; offered tools
  default to all five (all but ``call_skill`` on a bench without a reference executor);
  the agent sees the bench's cameras and proprioception.  ``call_skill`` makes the system execution-supported: ``run.json``
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
from typing import Any, Literal

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import Intervention, Operation, Preflight
from labrecord.recorders.adapters.faults import PolicyServiceFault

#: profile image role -> bench camera (every bench has both)
ROLE_CAMERAS = {"third_person": "front", "wrist": "wrist"}
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


def connect(kind: str, *, cameras: tuple[str, ...], skill: Callable[[Operation, dict[str, Any]], Any] | None = None,
            url: str | None = None, profile: str = "libero", path: str | None = None, convention: str = "eef_delta",
            tools: tuple[str, ...] | None = None, timeout_s: float = 60.0, name: str | None = None) -> Served:
    """Open a served policy of ``kind`` (``openpi``, ``http``, ``lerobot``) for a bench with
    ``cameras`` and the reference executor ``skill`` (None: none) and preflight it.

    A service that cannot be reached is a :class:`LabrecordError` naming the endpoint
    (nothing has run yet, so there is no run to mark unresolved).
    """
    from labrecord.families import SERVED_POLICIES

    try:
        if kind == "openpi":
            return _openpi(_need(url, "--policy-url", kind), profile, timeout_s, name)
        if kind == "http":
            return _http(_need(url, "--policy-url", kind), convention, tools, timeout_s, name, cameras, skill)
        if kind == "lerobot":
            from labrecord.sim.lerobot_policy import serve_lerobot

            policy, preflight, close = serve_lerobot(_need(path, "--policy-path", kind), cameras, timeout_s=timeout_s)
            return Served(policy, preflight, close=close)
    except PolicyServiceFault as fault:
        raise LabrecordError(f"preflight failed: {fault}") from fault
    raise LabrecordError(f"policy {kind!r}: expected one of {', '.join(SERVED_POLICIES)}")


def _need(value: str | None, option: str, kind: str) -> str:
    if not value:
        raise LabrecordError(f"--policy {kind} needs {option}")
    return value


def _openpi(url: str, profile_name: str, timeout_s: float, name: str | None) -> Served:
    from labrecord.recorders.adapters.openpi import OpenPIConnection, OpenPIPolicy, profile
    from labrecord.sim.bench.control import action_spec

    prof = profile(profile_name)
    spec = action_spec(prof.convention, prof.control_hz, max_chunk=prof.execute_rows)
    connection = OpenPIConnection(url, timeout_s=timeout_s)
    policy = OpenPIPolicy(connection, prof, spec, cameras=ROLE_CAMERAS, name=name or f"openpi-{prof.name}")
    mapped = ", ".join(f"{key} <- {ROLE_CAMERAS[role]}" for key, role in prof.images.items())
    session, why = openpi_session(connection.metadata)
    preflight = Preflight(
        protocol="openpi-websocket", endpoint=connection.url, profile=prof.name,
        channels=list(policy.capabilities.channels), action_convention=prof.convention,
        announced=jsonable(connection.metadata), session=session, session_reason=why,
        checks=["connected; server metadata received", f"images mapped: {mapped}",
                f"state: {prof.state}", f"actions: (H, {prof.action_dim}) rows, first {prof.execute_rows} "
                f"executed at {prof.control_hz:g} Hz", "prompt at most 512 characters"])
    return Served(policy, preflight, render_size=prof.render_size, close=connection.close)


def openpi_session(metadata: Any) -> tuple[Literal["stateless", "stateful"], str]:
    """Whether an OpenPI server keeps state between queries, and why.  openpi's protocol
    answers each request from that request alone: the action-chunk queue lives in the
    client (here the adapter and the step owner's queue), so a server is stateless unless
    its metadata announces ``"stateful": true`` (a server that keeps, say, an observation
    history of its own)."""
    if isinstance(metadata, dict) and metadata.get("stateful") is True:
        return "stateful", "the server announced \"stateful\": true in its metadata"
    return "stateless", ("openpi's protocol answers each request from that request alone; the action-chunk "
                         "queue lives in the client adapter")


def _http(url: str, convention: str, tools: tuple[str, ...] | None, timeout_s: float, name: str | None,
          cameras: tuple[str, ...], skill: Callable[[Operation, dict[str, Any]], Any] | None) -> Served:
    from labrecord.models.agent import AGENT_PROTOCOL, TOOLS
    from labrecord.recorders.adapters.agent import HttpAgentPolicy
    from labrecord.recorders.adapters.tools import REFERENCE_EXECUTOR, AgentTools
    from labrecord.sim.bench.control import action_spec

    offered = tuple((TOOLS if skill is not None else tuple(t for t in TOOLS if t != "call_skill"))
                    if tools is None else tools)
    if "call_skill" in offered and skill is None:
        raise LabrecordError("call_skill: this bench has no reference executor; drop call_skill from --tools")
    if "call_skill" in offered and convention != "eef_delta":
        raise LabrecordError(f"call_skill: the reference executor acts in eef_delta, not {convention}; "
                             "drop call_skill from --tools or use --convention eef_delta")
    spec = action_spec(convention, AGENT_CONTROL_HZ, max_chunk=AGENT_MAX_CHUNK)
    reachable(url, timeout_s)
    channels = (*cameras, "robot")  # native channels an agent sees: the bench's cameras and proprioception
    policy = HttpAgentPolicy(url, spec, channels=channels, tools=offered, name=name or "http-agent",
                             timeout_s=timeout_s)
    if "call_skill" not in offered:
        skill = None
    intervention = (Intervention(mode="replace", site="skill", oracle=REFERENCE_EXECUTOR) if skill
                    else Intervention())
    preflight = Preflight(protocol=AGENT_PROTOCOL, endpoint=url, channels=list(channels),
                          action_convention=convention, hooks=list(offered), session="stateful",
                          session_reason="an agent keeps its own session across the decisions of an episode "
                                         "(the protocol marks the first one), which no checkpoint holds",
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
