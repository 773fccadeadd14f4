"""The in-process result cache through real MCP sessions (issue 12, SRS §16).

A fake provider on loopback records every request, so "answered from the
cache" is asserted on the wire: the provider saw no second request.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rypsok.core.cache.memory import MemoryCache
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.fakes.provider_server import ProviderServer, Route, load_fixture
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

MOJEEK = "/mojeek/search"  # its record forbids storage (cacheable=False)
WIKIPEDIA, WIKIDATA = ENGINE_PATHS["wikipedia"], ENGINE_PATHS["wikidata"]
QUERY = {"query": "quantum entanglement", "category": "general"}


def cache_config(base_url: str, *, mojeek: bool = False, **cache: Any) -> Any:
    """Every engine on the fake provider; mojeek (1 s spacing) only where it is needed."""
    sections = engine_sections(base_url)
    if mojeek:
        sections["engines"]["mojeek"] = {
            "endpoint": f"{base_url}{MOJEEK}",
            "api_key": {"env": "RYPSOK_TEST_MOJEEK"},
        }
    return config_from({**sections, "cache": cache})


@pytest.fixture
async def providers(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ProviderServer]:
    monkeypatch.setenv("RYPSOK_TEST_MOJEEK", "synthetic-mojeek-key")
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    mojeek = load_fixture("mojeek", "ok.json")
    routes[MOJEEK] = Route(body=mojeek, headers={"content-type": "application/json"})
    async with ProviderServer(routes) as server:
        yield server


def asked(server: ProviderServer, path: str) -> int:
    return len(server.requests_to(path))


def without_notices(payload: dict[str, Any]) -> str:
    """The payload minus the cache's own notice (CLR-11): every other byte must match."""
    notices = [n for n in payload["notices"] if n["code"] != "answered_from_cache"]
    return json.dumps({**payload, "notices": notices}, sort_keys=True)


def cache_notices(payload: dict[str, Any]) -> list[str]:
    return [n["message"] for n in payload["notices"] if n["code"] == "answered_from_cache"]


async def searches(services: Services, *arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Several web_search calls in one MCP session, in order."""
    payloads = []
    async with Client(build_server(services)) as client:
        for args in arguments:
            result = await client.call_tool("web_search", args)
            assert result.structured_content is not None
            payloads.append(result.structured_content)
    await services.aclose()
    return payloads


@pytest.mark.req("REQ-CACHE-003", "REQ-CMP-007", "REQ-TEST-010", "REQ-ENG-010", "REQ-ARCH-004")
async def test_a_repeated_search_is_answered_from_the_cache_with_its_age(
    providers: ProviderServer,
) -> None:
    """REQ-CACHE-003, REQ-CMP-007, REQ-TEST-010: no second provider request, same bytes.

    The engine whose record forbids storage (mojeek) is asked every time; the
    others only once. The answer ranks exactly as the all-live one did, and a
    notice names the cached engines and the age of the oldest entry (CLR-11).
    """
    services = Services(cache_config(providers.base_url, mojeek=True, enabled=True))
    first, second = await searches(services, QUERY, QUERY)
    assert (asked(providers, WIKIPEDIA), asked(providers, WIKIDATA)) == (1, 1)
    assert asked(providers, MOJEEK) == 2
    assert first["outcome"] == "ok" and first["results"]
    assert without_notices(second) == without_notices(first)
    assert cache_notices(first) == []
    (notice,) = cache_notices(second)
    assert "wikipedia" in notice and "wikidata" in notice and "mojeek" not in notice
    assert "is 0 s old" in notice


@pytest.mark.req("REQ-CACHE-003", "REQ-TEST-010")
async def test_entries_hold_only_for_the_parameters_the_request_depends_on(
    providers: ProviderServer,
) -> None:
    """REQ-CACHE-003, REQ-TEST-010: another query or language asks again; max_results does not.

    max_results cuts the merged list after ranking; every engine is asked for
    LIM-S3 results whatever it is, so it is no part of an entry's key.
    """
    services = Services(cache_config(providers.base_url, enabled=True))
    await searches(
        services,
        QUERY,
        {**QUERY, "max_results": 3},  # same engine requests: cached
        {**QUERY, "query": "quantum computing"},  # another query: asked
        {**QUERY, "language": "en"},  # a language asked for: asked
    )
    assert asked(providers, WIKIPEDIA) == 3
    queries = [r.param("srsearch") for r in providers.requests_to(WIKIPEDIA)]
    assert queries == ["quantum entanglement", "quantum computing", "quantum entanglement"]


@pytest.mark.req("REQ-CACHE-005", "REQ-TEST-010")
async def test_entries_expire_after_ttl_and_the_oldest_go_beyond_entries(
    providers: ProviderServer,
) -> None:
    """REQ-CACHE-005, REQ-TEST-010: after ttl_s the provider is asked again; LIM-K3 bounds."""
    services = Services(cache_config(providers.base_url, enabled=True, ttl_s=1))
    async with Client(build_server(services)) as client:
        await client.call_tool("web_search", QUERY)
        await client.call_tool("web_search", QUERY)
        assert asked(providers, WIKIPEDIA) == 1
        await anyio.sleep(1.05)
        await client.call_tool("web_search", QUERY)
        assert asked(providers, WIKIPEDIA) == 2
    await services.aclose()

    providers.requests.clear()
    # Two engines serve general here (wikipedia, wikidata): two entries per search,
    # so entries = 2 keeps the last search only.
    services = Services(cache_config(providers.base_url, enabled=True, entries=2))
    other = {**QUERY, "query": "another subject"}
    await searches(services, QUERY, other, other, QUERY)
    assert [r.param("srsearch") for r in providers.requests_to(WIKIPEDIA)] == [
        "quantum entanglement",
        "another subject",
        "quantum entanglement",
    ]


@pytest.mark.req("REQ-CACHE-001", "REQ-TEST-010", "REQ-PRIV-003")
async def test_with_the_cache_off_nothing_is_stored(providers: ProviderServer) -> None:
    """REQ-CACHE-001, REQ-PRIV-003: off by default (LIM-K1); every search asks again."""
    services = Services(cache_config(providers.base_url))
    assert services.shared.cache is None
    first, second = await searches(services, QUERY, QUERY)
    assert (asked(providers, WIKIPEDIA), asked(providers, WIKIDATA)) == (2, 2)
    assert cache_notices(first) == cache_notices(second) == []


@pytest.mark.req("REQ-CACHE-002", "REQ-TEST-010")
async def test_fetched_content_is_never_cached(providers: ProviderServer) -> None:
    """REQ-CACHE-002: with the cache on, fetching one page twice reaches the site twice."""
    page = b"<html><body><main><p>A page about caching and nothing else.</p></main></body></html>"
    providers.route("/page", Route(body=page, headers={"content-type": "text/html"}))
    port = int(providers.base_url.rsplit(":", 1)[1])
    config = config_from({
        "egress": {"allow": ["127.0.0.1/32"]},
        "fetch": {"allow_http": True, "ports": [port], "robots_txt": False},
        "cache": {"enabled": True},
    })  # fmt: skip
    services = Services(config)
    async with Client(build_server(services)) as client:
        for _ in range(2):
            result = await client.call_tool("web_fetch", {"url": providers.url("/page")})
            assert result.structured_content is not None
            assert result.structured_content["outcome"] == "ok"
    await services.aclose()
    assert asked(providers, "/page") == 2
    cache = services.shared.cache
    assert isinstance(cache, MemoryCache) and len(cache) == 0


@pytest.mark.req("REQ-CACHE-004", "REQ-TEST-010")
async def test_http_callers_each_have_their_own_entries(
    providers: ProviderServer, tmp_path: pathlib.Path
) -> None:
    """REQ-CACHE-004: caller a's entry answers a again, never caller b (two keys, HTTP mode)."""
    listener = free_listener()
    base = {**engine_sections(providers.base_url), "cache": {"enabled": True}}
    config = http_config(tmp_path, listener.getsockname()[1], base)
    payloads: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    async with running_http(config, listener) as running:
        for caller, key in (("a", KEY_A), ("a", KEY_A), ("b", KEY_B)):
            async with (
                httpx2.AsyncClient(headers=bearer(key)) as http,
                Client(streamable_http_client(running.url, http_client=http)) as client,
            ):
                result = await client.call_tool("web_search", QUERY)
                assert result.structured_content is not None
                payloads[caller].append(result.structured_content)
    assert asked(providers, WIKIPEDIA) == 2  # a once, b once
    assert cache_notices(payloads["a"][0]) == [] and len(cache_notices(payloads["a"][1])) == 1
    assert cache_notices(payloads["b"][0]) == []
