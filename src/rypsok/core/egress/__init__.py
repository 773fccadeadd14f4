"""The egress component: every outbound request of rypsok goes through it (REQ-SEC-005).

    ranges   the refused IPv4/IPv6 ranges and `judge_address`
    policy   operator rules and the engine and agent-directed profiles
    backend  connect-time enforcement under the connection pools
    origin   engine requests to one origin: HTTP/1.1 over guarded, kept-alive connections
    errors   the fixed vocabulary of egress failures
    messages the neutral request and response types egress takes and gives
    client   `EgressClient`: engine_get and agent_get

No httpx2 or httpcore2 type is part of this surface, and no module here
imports the engines or the fetch pipeline: egress is a leaf (REQ-ARCH-001).
"""

from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressError,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.messages import (
    AgentResponse,
    CheckedUrl,
    OutboundRequest,
    OutboundResponse,
)
from rypsok.core.egress.policy import NO_RULES, EgressRules
from rypsok.core.egress.ranges import judge_address

__all__ = [
    "NO_RULES",
    "AgentResponse",
    "CheckedUrl",
    "EgressBodyTooLarge",
    "EgressClient",
    "EgressDenied",
    "EgressError",
    "EgressRequestFailed",
    "EgressRules",
    "EgressTimeout",
    "OutboundRequest",
    "OutboundResponse",
    "judge_address",
]
