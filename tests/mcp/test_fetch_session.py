"""web_fetch through a real MCP session: the page corpus and hostile documents."""

from __future__ import annotations

import gzip
import json
import pathlib
import time
from typing import Any

import anyio
import pytest
from mcp import Client

from rypsok.core.egress.ranges import IPV4_REFUSED, IPV6_REFUSED
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, config_from, services_resolving

PAGES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pages"
CORPUS = sorted(p for p in PAGES.iterdir() if p.suffix != ".json")


def fetch_and_search_config(base_url: str, **fetch: Any) -> Any:
    """Engines and pages on one local server; loopback allowed by an injected rule."""
    port = int(base_url.rsplit(":", 1)[1])
    engines = {e: {"endpoint": f"{base_url}{p}"} for e, p in ENGINE_PATHS.items()}
    return config_from({
        "egress": {"allow": ["127.0.0.1/32"]},
        "fetch": {"allow_http": True, "ports": [port], **fetch},
        "engines": engines,
    })  # fmt: skip


def corpus_route(page: pathlib.Path) -> Route:
    expect = json.loads(page.with_suffix(".expect.json").read_text(encoding="utf-8"))
    return Route(body=page.read_bytes(), headers={"content-type": expect["content_type"]})


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002", "REQ-CTX-005", "REQ-FETCH-004", "REQ-PAGE-007")
async def test_fixture_corpus_through_mcp() -> None:
    """REQ-FETCH-002, REQ-PAGE-002: every expected text present, every listed chrome absent."""
    routes = {f"/{p.name}": corpus_route(p) for p in CORPUS}
    async with ProviderServer(routes) as server:
        services = Services(fetch_and_search_config(server.base_url))
        results = {}
        for page in CORPUS:
            payload, _ = await call_tool(
                services, "web_fetch", {"url": server.url(f"/{page.name}")}
            )
            results[page.name] = payload
        await services.aclose()
    assert len(results) >= 12
    for name, payload in results.items():
        expect = json.loads((PAGES / name).with_suffix(".expect.json").read_text("utf-8"))
        assert payload["outcome"] == "ok", name
        for text in expect["present"]:
            assert text in payload["content"], (name, text)
        for text in expect["absent"]:
            assert text not in payload["content"], (name, text)


def nested(levels: int) -> bytes:
    return b"<html><body>" + b"<div>" * levels + b"deep text" + b"</div>" * levels + b"</body>"


def many_nodes(count: int) -> bytes:
    return b"<html><body><main>" + b"<b>x</b>" * count + b"</main></body></html>"


@pytest.mark.req("REQ-TEST-006", "REQ-SEC-014", "REQ-PAGE-006", "REQ-PAGE-008", "REQ-PAGE-003")
async def test_hostile_documents_end_their_call_while_search_stays_prompt() -> None:
    """REQ-TEST-006, REQ-SEC-014: bombs end their own call; a concurrent search answers fast."""
    html = {"content-type": "text/html"}
    bomb = gzip.compress(b"<p>" + b"A" * (64 * 1024 * 1024))
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes.update({
        "/bomb": Route(body=bomb, headers={**html, "content-encoding": "gzip"}),
        "/nested": Route(body=nested(100_000), headers=html),
        "/nodes": Route(body=gzip.compress(many_nodes(5_000_000)),
                        headers={**html, "content-encoding": "gzip"}),
        "/wide": Route(body=many_nodes(400_000), headers=html),
    })  # fmt: skip
    outcomes: dict[str, Any] = {}
    async with ProviderServer(routes) as server:
        services = Services(fetch_and_search_config(server.base_url))

        async def fetch(path: str) -> None:
            payload, _ = await call_tool(services, "web_fetch", {"url": server.url(path)})
            outcomes[path] = payload

        async def search_after(delay_s: float) -> None:
            await anyio.sleep(delay_s)
            started = time.monotonic()
            payload, _ = await call_tool(services, "web_search", {"query": "tides"})
            outcomes["search"] = (payload["outcome"], time.monotonic() - started)

        async with anyio.create_task_group() as group:
            for path in ("/bomb", "/nested", "/nodes", "/wide"):
                group.start_soon(fetch, path)
            group.start_soon(search_after, 0.2)
        await services.aclose()
    assert outcomes["/bomb"]["error"]["kind"] == "too_large"
    assert outcomes["/nodes"]["error"]["kind"] == "too_large"  # 5M nodes exceed LIM-F3
    nested_outcome = outcomes["/nested"]
    assert nested_outcome["outcome"] == "ok" or nested_outcome["error"]["kind"] == (
        "unsupported_content"
    )
    if nested_outcome["outcome"] == "ok":
        assert "extraction_partial" in [n["code"] for n in nested_outcome["notices"]]
    wide = outcomes["/wide"]
    assert wide["outcome"] == "ok"
    assert "extraction_partial" in [n["code"] for n in wide["notices"]]  # LIM-F10 reached
    search_outcome, search_s = outcomes["search"]
    assert search_outcome == "ok" and search_s < 1.0


def refused_destinations() -> list[str]:
    """One URL per refused range of the production table, IPv4 and IPv6."""
    urls = []
    for network, _ in (*IPV4_REFUSED, *IPV6_REFUSED):
        address = network.network_address + (1 if network.num_addresses > 2 else 0)
        host = f"[{address}]" if address.version == 6 else str(address)
        urls.append(f"https://{host}/")
    return urls


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005", "REQ-SEC-007")
async def test_every_refused_range_is_denied_through_mcp() -> None:
    """REQ-SEC-006, REQ-TEST-005: each range of the production table is denied, no connection."""
    services = Services(config_from({}))  # the production policy, no allow rule
    urls = refused_destinations()
    assert len(urls) > 40
    async with Client(build_server(services)) as client:
        for url in urls:
            result = await client.call_tool("web_fetch", {"url": url})
            payload = result.structured_content
            assert payload is not None and payload["outcome"] == "error", url
            assert payload["error"]["kind"] == "denied", (url, payload["error"])
            assert url.split("/")[2] not in json.dumps(payload)
    await services.aclose()


@pytest.mark.req("REQ-SEC-007", "REQ-TEST-005", "REQ-SEC-006")
async def test_a_name_answering_a_refused_address_is_denied_at_connect() -> None:
    """REQ-SEC-007: the address a name resolves to is judged at connect time, every hop."""
    names = {"intranet.example.org": "10.1.2.3", "metadata.example.org": "169.254.169.254",
             "mapped.example.org": "::ffff:127.0.0.1"}  # fmt: skip
    services = services_resolving(config_from({}), names)
    async with Client(build_server(services)) as client:
        for name, address in names.items():
            result = await client.call_tool("web_fetch", {"url": f"https://{name}/page"})
            payload = result.structured_content
            assert payload is not None
            assert payload["error"]["kind"] == "denied", (name, payload)
            assert payload["error"]["detail"]["reason"] == "egress"
            assert address not in json.dumps(payload)
    await services.aclose()
