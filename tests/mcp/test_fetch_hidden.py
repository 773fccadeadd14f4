"""web_fetch through a real MCP session: hidden text stays out and carries its notice."""

from __future__ import annotations

import json
import pathlib

import pytest

from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.test_fetch_session import fetch_and_search_config
from tests.support import call_tool

PAGES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pages"


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
async def test_hidden_text_is_left_out_with_a_notice_through_mcp() -> None:
    """REQ-CTX-005, REQ-SEC-003: none of the fixture's hidden strings, and hidden_removed."""
    expect = json.loads((PAGES / "hidden-injection.expect.json").read_text(encoding="utf-8"))
    routes = {
        "/hidden": Route(
            body=(PAGES / "hidden-injection.html").read_bytes(),
            headers={"content-type": expect["content_type"]},
        ),
        "/clean": Route(
            body=b"<html><body><main><p>Only visible text in this page, with a comma, and more "
            b"words.</p></main></body></html>",
            headers={"content-type": "text/html"},
        ),
    }
    async with ProviderServer(routes) as server:
        services = Services(fetch_and_search_config(server.base_url))
        hidden, _ = await call_tool(services, "web_fetch", {"url": server.url("/hidden")})
        clean, _ = await call_tool(services, "web_fetch", {"url": server.url("/clean")})
        await services.aclose()
    assert hidden["outcome"] == "ok"
    for text in expect["absent"]:
        assert text not in hidden["content"], text
    notices = {notice["code"]: notice["message"] for notice in hidden["notices"]}
    assert "hidden_removed" in notices
    assert "hidden element(s)" in notices["hidden_removed"]
    assert "hidden_removed" not in [notice["code"] for notice in clean["notices"]]
