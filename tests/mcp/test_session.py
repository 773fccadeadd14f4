"""Tool calls through the SDK's in-memory client: contract, privacy, limits."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from rypsok.core.logs import JsonLineFormatter
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, config_from, engines_config

# Shaped like a GitHub personal access token; synthetic.
CANARY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def call(
    services: Services, tool: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    async with Client(build_server(services)) as client:
        result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    text = result.content[0]
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content, result.is_error


@pytest.fixture
async def providers() -> AsyncIterator[ProviderServer]:
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    async with ProviderServer(routes) as server:
        yield server


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    formatter = JsonLineFormatter()
    return "\n".join(formatter.format(r) for r in caplog.records)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-008", "REQ-SEARCH-006", "REQ-LIFE-001")
async def test_deny_mode_refuses_naming_kind_and_position_never_the_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-PRIV-002, REQ-TEST-008: deny names the kind and position, never the value."""
    caplog.set_level(logging.DEBUG, logger="rypsok")
    services = Services(config_from({}))
    payload, is_error = await call(services, "web_search", {"query": f"why does {CANARY} fail"})
    assert is_error
    error = payload["error"]
    assert error["kind"] == "denied" and error["detail"]["reason"] == "credential"
    assert error["detail"]["position"] == len("why does ")
    assert error["detail"]["credential_kind"]
    assert CANARY not in json.dumps(payload)
    assert CANARY[4:] not in log_text(caplog)
    fetch, _ = await call(services, "web_fetch", {"url": f"https://example.org/?token={CANARY}"})
    assert fetch["error"]["kind"] == "denied" and CANARY not in json.dumps(fetch)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-008")
@pytest.mark.parametrize(
    ("mode", "codes", "sent_as_given"),
    [
        ("warn", ["credential_warning"], True),
        ("mask", ["credential_masked"], False),
        ("off", [], True),
    ],
)
async def test_warn_mask_and_off_modes(
    providers: ProviderServer, mode: str, codes: list[str], sent_as_given: bool
) -> None:
    """REQ-PRIV-002, REQ-TEST-008: warn and mask notify; mask replaces the value on the wire."""
    config = engines_config(providers.base_url, privacy={"credential_check": mode})
    services = Services(config)
    payload, _ = await call(services, "web_search", {"query": f"{CANARY} error"})
    await services.aclose()
    assert [n["code"] for n in payload["notices"] if n["code"].startswith("credential")] == codes
    assert payload["outcome"] == "ok"
    sent = providers.requests_to(ENGINE_PATHS["wikipedia"])[0].param("srsearch") or ""
    assert (CANARY in sent) is sent_as_given
    assert sent.endswith(" error")
    assert CANARY not in json.dumps(payload)


@pytest.mark.req("REQ-PRIV-004", "REQ-TEST-008", "REQ-OBS-005")
async def test_queries_never_reach_the_log_at_default_level(
    caplog: pytest.LogCaptureFixture, providers: ProviderServer
) -> None:
    """REQ-PRIV-004, REQ-TEST-008: a call's log line has ids and outcome, not the query."""
    caplog.set_level(logging.INFO, logger="rypsok")
    services = Services(engines_config(providers.base_url))
    payload, _ = await call(services, "web_search", {"query": "confidential merger plans zebra"})
    assert payload["outcome"] == "ok"  # the engines were asked, and logged their requests
    await call(services, "web_fetch", {"url": "https://example.org/private/path?q=zebra"})
    text = log_text(caplog)
    assert '"event":"call"' in text and '"request_id"' in text and '"duration_ms"' in text
    assert '"event":"engine_request"' in text and '"host":"127.0.0.1:' in text
    lines = [json.loads(line) for line in text.splitlines()]
    search_call = next(x for x in lines if x["event"] == "call" and x["tool"] == "web_search")
    engine_lines = [x for x in lines if x["event"] == "engine_request"]
    assert {x["request_id"] for x in engine_lines} == {search_call["request_id"]}
    assert all({"engine", "host", "duration_ms", "hits", "outcome"} <= set(x) for x in engine_lines)
    assert "zebra" not in text and "private/path" not in text


@pytest.mark.req("REQ-OBS-007")
async def test_refused_calls_are_counted_per_tool_and_reason() -> None:
    """REQ-OBS-007: every refused call is counted by tool and reason."""
    services = Services(config_from({}))
    await call(services, "web_search", {"query": "x", "max_results": 99})
    await call(services, "web_search", {"query": "x", "max_results": 0})
    await call(services, "web_search", {"query": CANARY})
    assert services.metrics.refused_calls[("web_search", "invalid_request")] == 2
    assert services.metrics.refused_calls[("web_search", "credential")] == 1


@pytest.mark.req("REQ-ERR-001", "REQ-ERR-003", "REQ-CTX-002")
async def test_every_answer_has_exactly_one_outcome_and_error_only_with_error() -> None:
    """REQ-ERR-001, REQ-ERR-003: one outcome per call; error present exactly on error."""
    services = Services(config_from({}))
    status, is_error = await call(services, "engine_status", {})
    assert status["outcome"] == "ok" and "error" not in status and not is_error
    for engine in status["engines"]:
        assert set(engine) == {"id", "state", "median_latency_ms"}
    refused, is_error = await call(services, "web_fetch", {"url": "https://example.org/"})
    assert refused["outcome"] == "error" and is_error
    assert set(refused["error"]) == {"kind", "message", "detail"}
