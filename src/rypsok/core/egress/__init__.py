"""The egress component: every outbound request of rypsok goes through it (REQ-SEC-005).

    ranges   the refused IPv4/IPv6 ranges and `judge_address`
    policy   operator rules and the engine and agent-directed profiles
    backend  connect-time enforcement under the connection pools
    errors   the fixed vocabulary of egress failures
    client   `EgressClient`: engine_get and agent_get

No httpx2 or httpcore2 type is part of this surface.
"""

from rypsok.core.egress.client import AgentResponse, EgressClient
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressError,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.policy import NO_RULES, EgressRules
from rypsok.core.egress.ranges import judge_address

__all__ = [
    "NO_RULES",
    "AgentResponse",
    "EgressBodyTooLarge",
    "EgressClient",
    "EgressDenied",
    "EgressError",
    "EgressRequestFailed",
    "EgressRules",
    "EgressTimeout",
    "judge_address",
]
