"""robots.txt as a user of web_fetch sees it, through a real MCP session."""

from __future__ import annotations

import pytest

from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import call_tool, fetch_config

PAGE = Route(
    body=b"<html><body><main><p>A page of ordinary text about tides.</p></main></body></html>",
    headers={"content-type": "text/html; charset=utf-8"},
)
# The colon forgotten on the rule line, as webmasters do.
ROBOTS_WITHOUT_COLON = b"User-agent: *\nDisallow /private\n"


@pytest.mark.req("REQ-CMP-005")
async def test_a_rule_written_without_its_colon_is_obeyed_through_mcp() -> None:
    """REQ-CMP-005: `Disallow /private` refuses /private (denied, robots_txt), not the rest."""
    routes = {
        "/robots.txt": Route(body=ROBOTS_WITHOUT_COLON, headers={"content-type": "text/plain"}),
        "/private/report": PAGE,
        "/public": PAGE,
    }
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url))
        refused, _ = await call_tool(services, "web_fetch", {"url": server.url("/private/report")})
        allowed, _ = await call_tool(services, "web_fetch", {"url": server.url("/public")})
        await services.aclose()
    assert refused["outcome"] == "error"
    assert refused["error"]["kind"] == "denied"
    assert refused["error"]["detail"]["reason"] == "robots_txt"
    assert server.requests_to("/private/report") == []
    assert allowed["outcome"] == "ok"
    assert "ordinary text about tides" in allowed["content"]
