"""The capability preflight of a served policy, recorded in ``run.json`` ``system.preflight``.

Written once when the evaluator connects to a policy service, before any episode: the
protocol and endpoint, what the service declared or was checked to accept (observation
channels, action convention, tool hooks), what it announced on connect, and the checks
that passed.  A service enters a comparison only after this preflight (Labference 8.4).
"""
from __future__ import annotations

from typing import Any, Literal

import msgspec


class Preflight(msgspec.Struct, kw_only=True, omit_defaults=True):
    protocol: str                      # "openpi-websocket" | "labrecord.agent/1" | "lerobot"
    endpoint: str                      # ws:// or http:// URL, or the policy directory
    profile: str | None = None         # openpi profile (libero | droid)
    channels: list[str] = []           # observation channels the service receives
    action_convention: str             # joint_pos | joint_vel | eef_delta
    hooks: list[str] = []              # tools offered to an agent
    announced: dict[str, Any] = {}     # what the service sent on connect (openpi metadata, policy config)
    checks: list[str] = []             # checks that passed before the first episode
    #: whether the service keeps state between queries (Labference sec. 6.1): "stateless"
    #: (every answer follows from its request alone, so a study may branch it from a
    #: checkpoint), "stateful", or null (not declared: treated as stateful)
    session: Literal["stateless", "stateful"] | None = None
    session_reason: str | None = None  # why the service is (or is not) stateless between queries


class Compatibility(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Whether a system accepts one Oracle support (site, mode) (Labference 7.4, 8.4).

    Written by a study before any branch runs.  A ``not_compatible`` support is left out of
    that system's population (no ``oracle_pair`` is registered for it) and is shown as
    "not compatible", never as a failure.
    """

    system: str
    site: str
    mode: str
    status: str                        # "compatible" | "not_compatible"
    interface: str | None = None       # the hook or channel the support goes through
    reason: str | None = None          # why not compatible
