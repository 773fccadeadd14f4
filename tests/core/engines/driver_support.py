"""Helpers shared by the driver tests: recorded answers, checked failures, the wire.

Every driver test builds `EngineResponse`s from its engine's recorded answers,
checks that a failure carries its class and nothing of the provider, and
fetches one recorded answer from the fake provider server over real HTTP to
see that the wire carries exactly what `build_request` asked for. What is
particular to one provider stays in that provider's test file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import EllipsisType

import httpx2
import pytest

from rypsok.core.engines.base import (
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
)
from tests.fakes.provider_server import ProviderServer, RecordedRequest, Route, load_fixture

JSON = "application/json; charset=utf-8"
HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z: the fixed clock of the drivers that read one


def fixture_response(
    engine: str,
    name: str,
    *,
    status: int = 200,
    content_type: str | None = JSON,
    headers: Mapping[str, str] | None = None,
) -> EngineResponse:
    """The recorded answer `name` of `engine` as a response; no Content-Type when None."""
    merged = dict(headers or {})
    if content_type is not None:
        merged["content-type"] = content_type
    return EngineResponse(status=status, headers=merged, body=load_fixture(engine, name))


class FixtureResponses:
    """One engine's recorded answers as responses, with that engine's usual Content-Type.

    Call it as `responses("ok.json", 429, retry_after="5")`: header names are
    keywords, `_` standing for `-`; `content_type=None` sends no Content-Type.
    """

    def __init__(self, engine: str, *, content_type: str | None = JSON) -> None:
        self.engine = engine
        self.content_type = content_type

    def __call__(
        self,
        name: str,
        status: int = 200,
        content_type: str | EllipsisType | None = ...,
        **headers: str,
    ) -> EngineResponse:
        return fixture_response(
            self.engine,
            name,
            status=status,
            content_type=self.content_type if content_type is ... else content_type,
            headers={key.replace("_", "-"): value for key, value in headers.items()},
        )


def parse_failure(driver: Driver, response: EngineResponse) -> EngineFailure:
    """The driver's failure, checked to carry its class and nothing of the provider."""
    with pytest.raises(EngineFailure) as caught:
        driver.parse(response)
    failure = caught.value
    assert failure.args == (failure.failure_class.value,)
    assert failure.__cause__ is None
    assert failure.__context__ is None
    return failure


@dataclass(frozen=True, slots=True)
class WireExchange:
    """One request fetched from the fake provider server, and what came of it."""

    request: EngineRequest  # what the driver built
    hits: list[RawHit]  # what the driver parsed from the served answer
    received: list[RecordedRequest]  # every request the server recorded
    wire: RecordedRequest  # the request as it reached the served path


async def fetch_over_http(
    make_driver: Callable[[str], Driver],
    search: SearchParams,
    route: Route,
    *,
    path: str,
    endpoint_path: str | None = None,
) -> WireExchange:
    """Serve `route` at `path`, fetch the driver's request for `search` and parse the answer.

    The driver is made for the server's URL of `endpoint_path` (by default
    `path`); its request goes out as egress sends it (URL, params, headers)
    through a client that ignores proxy settings. Checks that the query the
    server received at `path` is exactly the request's params.
    """
    async with ProviderServer({path: route}) as server:
        driver = make_driver(server.url(endpoint_path or path))
        request = driver.build_request(search)
        async with httpx2.AsyncClient(trust_env=False) as client:
            reply = await client.get(
                request.url, params=list(request.params), headers=list(request.headers)
            )
        response = EngineResponse(
            reply.status_code, {k.lower(): v for k, v in reply.headers.items()}, reply.content
        )
        hits = driver.parse(response)
        received = list(server.requests)
        at_path = server.requests_to(path)
    assert at_path, f"no request reached {path}"
    assert at_path[0].query == request.params
    return WireExchange(request=request, hits=hits, received=received, wire=at_path[0])
