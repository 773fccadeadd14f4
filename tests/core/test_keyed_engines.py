"""Keyed engines: active only with their key, and the key never leaks (canary)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from rypsok.core.logs import JsonLineFormatter
from rypsok.core.services import Services, engine_states
from tests.fakes.provider_server import ProviderServer, Route, load_fixture
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, config_from

CANARY = "canary-key-7f3a"
BRAVE, MOJEEK = "/brave/res/v1", "/mojeek/search"


def keyed_config(base_url: str, **sections: Any) -> Any:
    engines: dict[str, Any] = {e: {"endpoint": f"{base_url}{p}"} for e, p in ENGINE_PATHS.items()}
    engines["brave"] = {"endpoint": f"{base_url}{BRAVE}", "api_key": {"env": "RYPSOK_TEST_BRAVE"}}
    engines["mojeek"] = {
        "endpoint": f"{base_url}{MOJEEK}",
        "api_key": {"env": "RYPSOK_TEST_MOJEEK"},
    }
    return config_from({"egress": {"allow": ["127.0.0.1/32"]}, "engines": engines, **sections})


def json_route(engine: str, name: str, status: int = 200) -> Route:
    body = load_fixture(engine, name)
    return Route(status=status, body=body, headers={"content-type": "application/json"})


@pytest.mark.req("REQ-CFG-004", "REQ-OPS-003", "REQ-ENG-003")
def test_keyed_engines_are_inactive_without_their_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CFG-004, REQ-OPS-003: a keyed engine whose key is missing is inactive, and said so."""
    monkeypatch.delenv("RYPSOK_TEST_BRAVE", raising=False)
    monkeypatch.setenv("RYPSOK_TEST_MOJEEK", CANARY)
    states = dict(engine_states(keyed_config("http://127.0.0.1:9")))
    assert states["brave"] == "inactive_no_key" and states["mojeek"] == "active"


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017", "REQ-ERR-004", "REQ-STATUS-002", "REQ-TEST-015")
async def test_canary_key_reaches_only_its_own_origin(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-SEC-017, REQ-ERR-004: the key goes to its engine only; never to logs or answers."""
    caplog.set_level(logging.DEBUG, logger="rypsok")
    monkeypatch.setenv("RYPSOK_TEST_BRAVE", CANARY)
    monkeypatch.setenv("RYPSOK_TEST_MOJEEK", CANARY)
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes[f"{BRAVE}/web/search"] = json_route("brave", "ok.json")
    routes[MOJEEK] = json_route("mojeek", "ok.json")
    async with ProviderServer(routes) as server:
        services = Services(keyed_config(server.base_url))
        ok, _ = await call_tool(services, "web_search", {"query": "tides"})
        server.route(f"{BRAVE}/web/search", json_route("brave", "token_invalid_echo.json", 422))
        server.route(MOJEEK, json_route("mojeek", "invalid_key_echo.json"))
        failed, _ = await call_tool(services, "web_search", {"query": "tides again"})
        status, _ = await call_tool(services, "engine_status", {})
        await services.aclose()
    assert ok["outcome"] == "ok" and failed["outcome"] == "partial"
    brave = [r for r in server.requests if r.path.startswith(BRAVE)]
    mojeek = [r for r in server.requests if r.path == MOJEEK]
    assert brave and all(r.header("x-subscription-token") == CANARY for r in brave)
    assert mojeek and all(r.param("api_key") == CANARY for r in mojeek)
    others = [r for r in server.requests if r not in brave and r not in mojeek]
    assert others
    for request in others:  # no other engine ever sees the key, in any header or parameter
        assert CANARY not in json.dumps([request.headers, request.query])
    for request in brave:
        assert CANARY not in json.dumps(request.query)
    for request in mojeek:
        assert CANARY not in json.dumps(request.headers)
    shown = json.dumps([ok, failed, status])
    assert CANARY not in shown
    logged = "\n".join(JsonLineFormatter().format(r) for r in caplog.records)
    assert CANARY not in logged
    assert repr(services.engines).count(CANARY) == 0


@pytest.mark.req("REQ-SEARCH-008")
async def test_region_and_safe_search_reach_the_engines_that_take_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEARCH-008: the operator's region and safe-search level are passed on, not exposed."""
    monkeypatch.setenv("RYPSOK_TEST_BRAVE", CANARY)
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes[f"{BRAVE}/web/search"] = json_route("brave", "ok.json")
    async with ProviderServer(routes) as server:
        config = keyed_config(server.base_url, search={"region": "de", "safe_search": "strict"})
        services = Services(config)
        tools = {t.name: t for t in services.tools()}
        await call_tool(services, "web_search", {"query": "tides"})
        await services.aclose()
    (brave,) = [r for r in server.requests if r.path.startswith(BRAVE)]
    assert (brave.param("country"), brave.param("safesearch")) == ("DE", "strict")
    params = tools["web_search"].input_schema()["properties"]
    assert "region" not in params and "safe_search" not in params
