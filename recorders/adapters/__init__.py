"""Adapters that put served policies behind the one :class:`~labrecord.recorders.policy.Policy`
interface: the OpenPI websocket client and the HTTP agent bridge.

Each adapter classifies what goes wrong the way the evaluation protocol does
(Labference sec. 5.2, 6.3): a broken connection, an undecodable frame, a server error or
a transport timeout is an evaluator-side :class:`~.faults.PolicyServiceFault` (the run is
unresolved); a decoded reply that breaks the declared interface is a
:class:`~.faults.InterfaceViolation` of the policy (a measured outcome).
"""
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault

__all__ = ["InterfaceViolation", "PolicyServiceFault"]
