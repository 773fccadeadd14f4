"""A hung Redis never costs a call its deadline: the limits gate and strict fetch (issue 12).

REQ-CACHE-006 asks that no call fails or waits beyond its deadline because of
Redis. The cache lookup and store already spend only the call's slack; these
tests hold the two other Redis steps of a call to the same rule, through real
MCP sessions: the per-caller limits check of HTTP mode (REQ-SEC-019), made
before the search, and strict mode's question whether another instance
returned a URL (REQ-SEC-021). Redis is hung two ways: a loopback TCP server
that accepts and never answers, and a real redis-server stopped by SIGSTOP.
"""

from __future__ import annotations

import pathlib
import signal
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rypsok.core.cache.link import RETRY_S
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.cache.redis_support import RedisServer, redis_section
from tests.cache.test_memory_cache import QUERY, WIKIPEDIA
from tests.cache.test_redis_cache import redis_events, silent_redis, url_section
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    bearer,
    engine_sections,
    free_listener,
    http_config,
    running_http,
)
from tests.support import ENGINE_PATHS, OK_FIXTURES, config_from

__all__ = ["silent_redis"]  # the fixture, used here by name

# A short search so a hung Redis at its longest LIM-K4 (1 s) would show: the slack
# before an engine's request is 2000 - 1000 - 500 = 500 ms.
SHORT_SEARCH = {
    "deadline_ms": 2_000,
    "engine_timeout_ms": 1_000,
    "reserve_ms": 500,
    "connect_timeout_ms": 1_000,
}
# A short fetch: the slack before the page's own timeout is 2000 - 1500 = 500 ms.
SHORT_FETCH = {"ceiling_ms": 2_000, "timeout_ms": 1_500, "connect_timeout_ms": 1_000}
# One MCP round trip on loopback, past a bound the call's work used up.
ROUND_TRIP_S = 0.2


@pytest.mark.req("REQ-CACHE-006", "REQ-SEC-019", "REQ-TEST-010")
async def test_a_hung_redis_keeps_http_limits_local_and_every_search_within_its_deadline(
    silent_redis: str, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The limits check spends only the search's slack; LIM-S4 counts from the call's start.

    One engine answers, the others hang, so each search lasts its whole
    deadline. Before, the check took the full LIM-K4 (1 s) and the search's
    deadline began after it: 2.5 s for a 2 s deadline. Now each call ends
    within LIM-S4, the local window counts (the third call in a minute of a
    caller allowed two is refused), one line says Redis was lost.

    Caller b searches first: the process's first search pays its imports and
    first connections (tenths of a second on a loaded machine), which are not
    Redis's. Its check marks Redis lost; after RETRY_S, a's first check tries
    the hung Redis again within its budget.
    """
    caplog.set_level("INFO", logger="rypsok.cache")
    routes = {p: Route(hang=True) for p in ENGINE_PATHS.values()}
    routes[WIKIPEDIA] = Route.fixture("wikipedia", OK_FIXTURES["wikipedia"])
    async with ProviderServer(routes) as provider:
        cache = url_section(tmp_path, silent_redis, enabled=True, operation_ms=1_000)
        base = {**engine_sections(provider.base_url), "cache": cache, "search": SHORT_SEARCH,
                "limits": {"web_search_per_minute": 2}}  # fmt: skip
        listener = free_listener()
        config = http_config(tmp_path, listener.getsockname()[1], base)
        payloads, elapsed = [], []
        async with (
            running_http(config, listener) as running,
            httpx2.AsyncClient(headers=bearer(KEY_B), timeout=30) as http_b,
            Client(streamable_http_client(running.url, http_client=http_b)) as client_b,
            httpx2.AsyncClient(headers=bearer(KEY_A), timeout=30) as http,
            Client(streamable_http_client(running.url, http_client=http)) as client,
        ):
            await client_b.call_tool("web_search", {**QUERY, "query": "warm"})
            await anyio.sleep(RETRY_S)  # the circuit lets a's first check try Redis again
            for n in range(3):
                started = anyio.current_time()
                result = await client.call_tool("web_search", {**QUERY, "query": f"hung {n}"})
                elapsed.append(anyio.current_time() - started)
                assert result.structured_content is not None
                payloads.append(result.structured_content)
            fallbacks = running.services.metrics.shared_state_fallbacks["limits"]
    deadline_s = SHORT_SEARCH["deadline_ms"] / 1000
    assert all(seconds < deadline_s for seconds in elapsed), elapsed
    assert [p["outcome"] for p in payloads] == ["partial", "partial", "error"], payloads
    assert payloads[2]["error"]["detail"]["reason"] == "rate_limit"  # counted locally
    assert fallbacks == 4  # each call's check, whether Redis timed out or was skipped
    assert redis_events(caplog, "redis_lost") == 1  # once, not per call


@pytest.fixture
def stopped_redis(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The real redis-server, stopped by SIGSTOP when the test says so, resumed after."""
    yield redis_server
    assert redis_server.process is not None
    redis_server.process.send_signal(signal.SIGCONT)


def port(provider: ProviderServer) -> int:
    return int(provider.base_url.rsplit(":", 1)[1])


def strict_config(provider: ProviderServer, server: RedisServer) -> Any:
    sections = engine_sections(provider.base_url)
    # .org denied: a fetch strict mode lets through ends at the egress policy, with no
    # name lookup. localhost allowed by name, as strict mode reads an operator's rule,
    # on the provider's port: its page that never answers needs the whole ceiling.
    sections["egress"] = {"allow": ["127.0.0.1/32", "localhost"], "deny": [".org"]}
    return config_from({
        **sections,
        "fetch": {"strict": True, "allow_http": True, "ports": [port(provider)],
                  **SHORT_FETCH},
        "cache": redis_section(server, operation_ms=1_000),
    })  # fmt: skip


async def timed_fetch(client: Client, url: str) -> tuple[dict[str, Any], float]:
    started = anyio.current_time()
    result = await client.call_tool("web_fetch", {"url": url})
    assert result.structured_content is not None
    return result.structured_content, anyio.current_time() - started


@pytest.mark.req("REQ-CACHE-006", "REQ-SEC-021", "REQ-TEST-010")
async def test_a_stopped_redis_refuses_urls_only_another_instance_returned_within_the_fetch_ceiling(
    stopped_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Strict mode's shared check spends only the fetch's slack; unknown stays refused.

    Instance one searches; instance two accepts a URL it returned while Redis
    answers. With Redis stopped (SIGSTOP), a URL only the first returned is
    refused by the usual strict-mode refusal within the slack, not the 1 s
    LIM-K4: the safe side of a control. A fetch that needs its whole LIM-F5 (a
    loopback page that never answers) still ends at that ceiling; before, the
    check's 1 s came on top. Resumed, Redis shares again without a restart.
    """
    caplog.set_level("INFO", logger="rypsok.cache")
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes["/hangs"] = Route(hang=True)
    async with ProviderServer(routes) as provider:
        config = strict_config(provider, stopped_redis)
        one, two = Services(config), Services(config)
        async with Client(build_server(one)) as first, Client(build_server(two)) as second:
            search = await first.call_tool("web_search", QUERY)
            assert search.structured_content is not None
            urls = [r["url"] for r in search.structured_content["results"] if ".org/" in r["url"]]
            assert len(urls) >= 3, urls
            passed, _ = await timed_fetch(second, urls[0])

            assert stopped_redis.process is not None
            stopped_redis.process.send_signal(signal.SIGSTOP)
            refused, refused_s = await timed_fetch(second, urls[1])
            await anyio.sleep(RETRY_S)  # the circuit lets one operation try Redis again
            hung, hung_s = await timed_fetch(second, f"http://localhost:{port(provider)}/hangs")
            stopped_redis.process.send_signal(signal.SIGCONT)

            await anyio.sleep(RETRY_S)
            await timed_fetch(second, urls[1])  # this check finds Redis back: one line
            resumed, _ = await timed_fetch(second, urls[2])
        fallbacks = two.metrics.shared_state_fallbacks["returned_urls"]
        await one.aclose()
        await two.aclose()
    assert passed["error"]["detail"]["reason"] == "egress", passed  # strict mode let it by
    assert refused["error"]["detail"]["reason"] == "strict_mode", refused
    slack_s = (SHORT_FETCH["ceiling_ms"] - SHORT_FETCH["timeout_ms"]) / 1000
    assert refused_s < slack_s + ROUND_TRIP_S, refused_s  # not LIM-K4's 1 s
    assert hung["error"]["detail"]["reason"] == "deadline", hung
    assert hung_s < SHORT_FETCH["ceiling_ms"] / 1000 + ROUND_TRIP_S, hung_s
    assert resumed["error"]["detail"]["reason"] == "egress", resumed
    assert fallbacks >= 2
    assert redis_events(caplog, "redis_lost") == 1
    assert redis_events(caplog, "redis_back") == 1
