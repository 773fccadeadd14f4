"""Strict mode, at the edges mutation testing found unguarded (REQ-SEC-021, REQ-TEST-019).

`make mutation` on the strict-mode store (FetchPipeline.remember_returned and
the strict check) left mutants alive that no test noticed: the operator's
allow rule as the one exception, which URLs the bounded store forgets first,
and what the refusal tells the caller. Each test below kills some of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from rypsok.core.fetch.returned import RETURNED_URLS_KEPT as STRICT_URLS_KEPT
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import call_tool, fetch_config, services_resolving

PAGE = Route(
    body=b"<html><body><main><p>Strict mode lets this page through.</p></main></body></html>",
    headers={"content-type": "text/html; charset=utf-8"},
)
# A private address: once past strict mode, the egress policy refuses it without any
# connection, so a remembered URL is told apart from a forgotten one offline.
PRIVATE = "https://192.168.7.7/page-{}"


async def _fetch(services: Services, url: str) -> dict[str, Any]:
    payload, _ = await call_tool(services, "web_fetch", {"url": url})
    return payload


def _reason(payload: dict[str, Any]) -> str | None:
    error = payload.get("error") or {}
    reason: str | None = (error.get("detail") or {}).get("reason")
    return reason


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
async def test_a_host_the_operator_allows_is_fetched_in_strict_mode() -> None:
    """REQ-SEC-021: a URL web_search never returned is still fetched when an operator allow
    rule names its host, and only then."""
    async with ProviderServer({"/a": PAGE}) as server:
        port = server.base_url.rsplit(":", 1)[1]
        config = fetch_config(
            server.base_url,
            fetch={"strict": True},
            egress={"allow": ["127.0.0.1/32", "allowed.test"]},
        )
        services = services_resolving(
            config, {"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}
        )
        allowed = await _fetch(services, f"http://allowed.test:{port}/a")
        other = await _fetch(services, f"http://other.test:{port}/a")
        await services.aclose()
    assert allowed["outcome"] == "ok", allowed
    assert _reason(other) == "strict_mode"


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
async def test_the_refusal_names_the_url_and_says_what_to_do() -> None:
    """REQ-SEC-021: the strict-mode refusal points at the `url` parameter and tells the
    caller to pick a URL from a search result."""
    async with ProviderServer({"/a": PAGE}) as server:
        services = Services(fetch_config(server.base_url, fetch={"strict": True}))
        refused = await _fetch(services, "https://example.org/page")
        await services.aclose()
    error = refused["error"]
    assert (error["detail"]["reason"], error["detail"]["parameter"]) == ("strict_mode", "url")
    assert error["message"].startswith("Strict mode: only URLs that web_search returned")
    assert error["message"].endswith("pick a URL from a search result.")


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
async def test_the_store_keeps_the_most_recent_urls_and_forgets_the_oldest() -> None:
    """REQ-SEC-021: the store holds exactly STRICT_URLS_KEPT URLs; one returned again
    becomes the newest; past the bound the oldest is forgotten first."""
    async with ProviderServer({"/a": PAGE}) as server:
        services = Services(fetch_config(server.base_url, fetch={"strict": True}))
        store = services.fetch_pipeline
        store.remember_returned([PRIVATE.format(i) for i in range(STRICT_URLS_KEPT)])
        full = [await _fetch(services, PRIVATE.format(i)) for i in (0, STRICT_URLS_KEPT - 1)]
        store.remember_returned([PRIVATE.format(0)])  # returned again: now the newest
        store.remember_returned([PRIVATE.format("new")])  # one past the bound
        kept_again = await _fetch(services, PRIVATE.format(0))
        forgotten = await _fetch(services, PRIVATE.format(1))
        newest = await _fetch(services, PRIVATE.format("new"))
        await services.aclose()
    assert [_reason(p) for p in full] == ["egress", "egress"]  # past strict mode, refused later
    assert _reason(kept_again) == "egress"
    assert _reason(forgotten) == "strict_mode"
    assert _reason(newest) == "egress"
