"""The pipeline's transport (`aggregate.EngineTransport`) for tests, with no network.

Each fake says only how it answers a request (`answer`); the keywords of
`engine_get` (the endpoint flag, the body cap, the two timeouts) are the
pipeline's to compute, and these tests do not read them.
"""

from __future__ import annotations

from rypsok.core.engines.base import EngineRequest, EngineResponse


class FakeTransport:
    """A transport whose `engine_get` is `answer(request)`; subclasses define `answer`."""

    async def engine_get(
        self,
        request: EngineRequest,
        *,
        explicit_endpoint: bool,
        max_body_bytes: int,
        connect_timeout_ms: int,
        total_timeout_ms: int,
    ) -> EngineResponse:
        return await self.answer(request)

    async def answer(self, request: EngineRequest) -> EngineResponse:
        raise NotImplementedError
