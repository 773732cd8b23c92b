"""The policy boundary every system sits behind: scripted baselines, VLAs, agents.

A policy declares its :class:`Capabilities` (observation channels it reads, the
:class:`~labrecord.models.ActionSpec` of what it returns, whether it reports the
operation it commits to), and answers two calls:

* ``reset(episode)`` — a new episode; queued actions and the policy session are cleared;
* ``act(observation) -> ActionChunk`` — one query at a control boundary.

The :class:`Observation` is the whitelist projection the runtime hands over (images by
camera name, public state channels, the instruction).  Adapters for external policy
servers (the OpenPI websocket client, the vla-eval harness) map this object onto their
own request dictionaries and their returned action arrays onto :class:`ActionChunk`;
nothing here defines a wire format.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from labrecord.models import ActionSpec, Operation

#: the observation state channel an Oracle study puts its assist payloads in (structured
#: data beside the declared channels; an adapter may carry it in its own transport)
ORACLE_CHANNEL = "oracle"


@dataclass(frozen=True)
class Capabilities:
    """What a policy reads and returns; recorded in ``run.json`` ``system``."""

    name: str
    kind: str  # vla | agent | scripted | human
    action_spec: ActionSpec
    channels: tuple[str, ...]
    reports_operations: bool = False
    revision: str = ""
    memory: str | None = None


@dataclass
class Observation:
    """Evidence delivered at one control boundary.

    ``images`` maps camera name to an (H, W, 3) uint8 frame; ``state`` maps a public
    channel (``robot`` proprioception; the evaluator-state channels ``display_reading`` and
    ``object_poses`` only for a scripted system that declares them) to JSON-like data.  ``obs_id`` and
    ``evidence_version`` tie a later choice to the evidence it was made on.
    """

    obs_id: str
    step: int
    t: float
    evidence_version: int
    instruction: str
    images: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class ActionChunk:
    """``actions`` (k, dim) to apply one per control period; ``report`` is the operation
    the policy says it is carrying out (only from policies that report operations);
    ``tool`` is a tool call of an agent (see :mod:`labrecord.recorders.adapters.agent`),
    answered by the recorder instead of actions."""

    actions: np.ndarray
    report: Operation | None = None
    tool: Any = None


@runtime_checkable
class Policy(Protocol):
    capabilities: Capabilities

    def reset(self, episode: int) -> None:
        """Start an episode: clear the session and any internal plan."""

    def act(self, observation: Observation) -> ActionChunk:
        """Return the next action chunk for ``observation``."""


def project_observation(channels: tuple[str, ...], images: dict[str, np.ndarray], state: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Keep only the channels a policy declared (the whitelist projection of sec. 5.1)."""
    wanted = set(channels)
    return ({k: v for k, v in images.items() if k in wanted}, {k: v for k, v in state.items() if k in wanted})


class PushedPolicy:
    """A system that acts from outside the step owner (a Gymnasium agent, vla-eval's
    runner): it declares its capabilities, and its actions arrive through
    :meth:`~labrecord.recorders.loop.StepOwner.push`; ``act`` is never called."""

    def __init__(self, capabilities: Capabilities) -> None:
        self.capabilities = capabilities

    def reset(self, episode: int) -> None:
        """The caller resets its own policy."""

    def act(self, observation: Observation) -> ActionChunk:
        from labrecord.errors import LabrecordError

        raise LabrecordError(f"{self.capabilities.name}: actions of a pushed system come through StepOwner.push")
