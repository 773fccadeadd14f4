"""Engine requests over egress: the translation between the two vocabularies.

Egress is a leaf that knows HTTP and the egress policy only (REQ-ARCH-001): it
takes an `OutboundRequest` and answers an `OutboundResponse` or raises an
`EgressError`. This module, on the engine side, turns a driver's
`EngineRequest` into the former and an egress failure into the failure class
of REQ-ENG-006, so the class of a failure is decided where engines are.

    EgressError kind       failure class
    EgressTimeout          timeout
    EgressBodyTooLarge     parse_failure
    EgressDenied           request_failure
    EgressRequestFailed    request_failure

A body over the driver-declared bound is parse_failure: the bound is the
driver's statement of what a valid answer can be, so an answer past it is not
in the provider's format; like parse_failure (and unlike request_failure) it
counts toward the circuit breaker (REQ-RES-004), which is what a provider
answering with floods or bombs deserves.
"""

from __future__ import annotations

from typing import Final, Protocol

from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressError,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.messages import OutboundRequest, OutboundResponse
from rypsok.core.engines.base import EngineFailure, EngineRequest, EngineResponse, FailureClass

__all__ = ["FAILURE_CLASSES", "EngineEgress", "OutboundClient", "failure_class_of"]

FAILURE_CLASSES: Final[tuple[tuple[type[EgressError], FailureClass], ...]] = (
    (EgressTimeout, FailureClass.TIMEOUT),
    (EgressBodyTooLarge, FailureClass.PARSE_FAILURE),
    (EgressDenied, FailureClass.REQUEST_FAILURE),
    (EgressRequestFailed, FailureClass.REQUEST_FAILURE),
)


class OutboundClient(Protocol):
    """What engine requests need of egress (`rypsok.core.egress.EgressClient`)."""

    async def engine_get(
        self,
        request: OutboundRequest,
        *,
        explicit_endpoint: bool,
        max_body_bytes: int,
        connect_timeout_ms: int,
        total_timeout_ms: int,
    ) -> OutboundResponse: ...


def failure_class_of(error: EgressError) -> FailureClass:
    """The engine failure class of an egress failure (REQ-ENG-006)."""
    for kind, failure_class in FAILURE_CLASSES:
        if isinstance(error, kind):
            return failure_class
    return FailureClass.REQUEST_FAILURE


class EngineEgress:
    """The search pipeline's transport: a driver's request through egress."""

    def __init__(self, egress: OutboundClient) -> None:
        self._egress = egress

    async def engine_get(
        self,
        request: EngineRequest,
        *,
        explicit_endpoint: bool,
        max_body_bytes: int,
        connect_timeout_ms: int,
        total_timeout_ms: int,
    ) -> EngineResponse:
        """The provider's answer, or `EngineFailure` with its class."""
        outbound = OutboundRequest(
            url=request.url,
            params=request.params,
            headers=request.headers,
            credential_headers=request.credential_headers,
            method=request.method,
            body=request.body,
        )
        try:
            response = await self._egress.engine_get(
                outbound,
                explicit_endpoint=explicit_endpoint,
                max_body_bytes=max_body_bytes,
                connect_timeout_ms=connect_timeout_ms,
                total_timeout_ms=total_timeout_ms,
            )
        except EgressError as error:
            # Egress errors carry a fixed kind and no library exception beneath.
            raise EngineFailure(failure_class_of(error)) from error
        return EngineResponse(status=response.status, headers=response.headers, body=response.body)
