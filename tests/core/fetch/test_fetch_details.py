"""web_fetch details through an in-memory MCP session: bounds, codings, upgrade, order.

Each test drives the production pipeline and egress policy (loopback reached
only through an injected allow rule) against a local server.
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import anyio
import brotli
import pytest
from backports import zstd

from rypsok.core import limits
from rypsok.core.config import Config
from rypsok.core.egress.backend import system_resolver
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.fetch.pipeline import https_for
from rypsok.core.fetch.returned import BoundedReturnedUrls
from rypsok.core.services import Services, user_agent
from tests.core.egress.servers import LocalServer, Seen, respond
from tests.core.fetch.test_pipeline import ARTICLE, HTML, fetch, fetch_from, page
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    call_tool,
    config_from,
    engines_config,
    fetch_config,
    wait_until,
)
from tests.tls_site import SiteCertificates, site_certificates

MiB = 1024 * 1024
BOMB_PLAIN = b"<p>" + b"A" * (64 * MiB)


def codes(payload: dict[str, Any]) -> list[str]:
    return [notice["code"] for notice in payload["notices"]]


# -- LIM-F9 on what is sent (REQ-FETCH-001, REQ-CTX-006) --------------------------------


@pytest.mark.req("REQ-FETCH-001", "REQ-CTX-006")
async def test_lim_f9_bounds_the_url_as_it_is_sent() -> None:
    """REQ-FETCH-001: a URL short as typed but over LIM-F9 once encoded is invalid_request."""
    async with ProviderServer({}) as server:
        services = Services(fetch_config(server.base_url))
        prefix = server.url("/")
        at_bound = prefix + "a" * (limits.URL_MAX_CHARS - len(prefix))
        encoded = prefix + "é" * 500  # 500 characters typed, 3,000 sent (%C3%A9 each)
        over = await fetch(services, encoded)
        exact = await fetch(services, at_bound)
        one_more = await fetch(services, at_bound + "a")
        await services.aclose()
    assert len(encoded) < limits.URL_MAX_CHARS
    for refused in (over, one_more):
        error = refused["error"]
        assert error["kind"] == "invalid_request", error
        assert error["detail"]["parameter"] == "url"
        assert error["detail"]["maximum"] == limits.URL_MAX_CHARS
        assert str(limits.URL_MAX_CHARS) in error["message"]
    # At the bound the page is requested (the local server answers 404).
    assert exact["error"]["detail"]["reason"] == "http_status"
    assert len(server.requests) == 2  # robots.txt and the page at the bound, nothing else


async def _fetch_each(routes: dict[str, Route]) -> tuple[list[dict[str, Any]], ProviderServer]:
    """One web_fetch of each route, in order; the server, whose requests stay readable."""
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url))
        answers = [await fetch(services, server.url(path)) for path in routes]
        await services.aclose()
    return answers, server


@pytest.mark.req("REQ-FETCH-001", "REQ-FETCH-006")
async def test_an_over_long_redirect_location_ends_unavailable_not_internal() -> None:
    """REQ-FETCH-001: a Location over LIM-F9, raw or as sent, is neither followed nor named."""
    routes = {
        "/raw": Route(status=302, headers={"location": "/" + "a" * 3_000}),
        "/encoded": Route(status=302, headers={"location": "/" + "é" * 1_000}),
    }
    answers, server = await _fetch_each(routes)
    for payload in answers:
        error = payload["error"]
        assert (error["kind"], error["detail"]["reason"]) == ("unavailable", "unreachable")
        assert error["detail"]["retryable"] is False
        assert error["detail"]["maximum"] == limits.URL_MAX_CHARS
        assert "location" not in error["detail"]
    assert [r.path for r in server.requests if r.path != "/robots.txt"] == list(routes)


@pytest.mark.req("REQ-FETCH-001", "REQ-FETCH-006", "REQ-ERR-002")
async def test_a_location_no_url_parser_can_split_is_refused_not_internal() -> None:
    """REQ-FETCH-006, REQ-ERR-002: `Location: http://[::1` (an authority urljoin cannot
    split) is the site's malformed header: refused as a destination, never `internal`."""
    routes = {
        "/bracket": Route(status=302, headers={"location": "http://[::1"}),
        "/port": Route(status=302, headers={"location": "https://[::1]:x/"}),
    }
    answers, _ = await _fetch_each(routes)
    for payload in answers:
        error = payload["error"]
        assert (error["kind"], error["detail"]["reason"]) == ("denied", "egress"), error


@pytest.mark.req("REQ-MCP-004", "REQ-ERR-002", "REQ-FETCH-001")
@pytest.mark.parametrize(
    ("tool", "arguments", "parameter"),
    [
        ("web_fetch", {"url": "https://example.org/\ud800"}, "url"),
        ("web_fetch", {"url": "https://exa\udc00mple.org/"}, "url"),
        ("web_search", {"query": "tides \udfff today"}, "query"),
    ],
    ids=["fetch_path", "fetch_host", "search_query"],
)
async def test_a_lone_surrogate_is_an_invalid_request(
    tool: str, arguments: dict[str, str], parameter: str
) -> None:
    """REQ-MCP-004: JSON can carry "\\ud800", which is no character (LIM-U1): the argument
    is refused naming it, where it used to end in `internal` (fetch) or reach engines."""
    services = Services(config_from({}))
    payload, _ = await call_tool(services, tool, arguments)
    await services.aclose()
    error = payload["error"]
    assert (error["kind"], error["detail"]["parameter"]) == ("invalid_request", parameter)
    assert "surrogate" in error["message"]


# -- scheme upgrade (REQ-FETCH-010) -----------------------------------------------------


@pytest.mark.req("REQ-FETCH-010")
@pytest.mark.parametrize(
    ("url", "upgraded"),
    [
        ("http://h.test:80/p", "https://h.test/p"),
        ("http://h.test/p?q=1#f", "https://h.test/p?q=1#f"),
        ("HTTP://h.test:080/p", "https://h.test/p"),
        ("http://h.test:80", "https://h.test"),
        ("http://h.test:8080/p", "https://h.test:8080/p"),
        ("http://h.test:8080", "https://h.test:8080"),
        ("http://[2001:db8::1]:80/", "https://[2001:db8::1]/"),
        ("http://93.184.215.14:80/p", "https://93.184.215.14/p"),
        ("http://93.184.215.14:8443/p", "https://93.184.215.14:8443/p"),
        ("http://h.test:/p", "https://h.test:/p"),
    ],
)
def test_the_https_url_drops_only_http_default_port(url: str, upgraded: str) -> None:
    """REQ-FETCH-010: :80 is http's default and goes with the scheme; other ports stay."""
    assert https_for(url) == upgraded


def tls_services(config: Config, certs: SiteCertificates, names: dict[str, str]) -> Services:
    """Services whose egress trusts the test CA and resolves these names locally."""

    async def resolve(host: str, port: int) -> Any:
        if host in names:
            return (ip_address(names[host]),)
        return await system_resolver(host, port)

    egress = EgressClient(
        user_agent=user_agent(None),
        rules=EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny),
        ssl_context=certs.client_context(),
        fetch_allow_http=config.fetch.allow_http,
        fetch_extra_ports=config.fetch.ports,
        resolver=resolve,
    )
    return Services(config, egress=egress)


async def site(seen: Seen, writer: Any) -> bool:
    if seen.target == "/robots.txt":
        return await respond(writer, 404, (("Content-Type", "text/plain"),), b"none")
    return await respond(writer, 200, (("Content-Type", "text/html; charset=utf-8"),), ARTICLE)


@pytest.mark.req("REQ-FETCH-010", "REQ-TEST-005")
async def test_http_on_port_80_is_fetched_as_https_on_443(tmp_path: Path) -> None:
    """REQ-FETCH-010: http://h:80/p succeeds as https://h/p, for an address and for a name."""
    # A loopback address of its own, so that no other test's port 443 is in the way.
    octets = (secrets.randbelow(254) + 1, secrets.randbelow(254) + 1, secrets.randbelow(253) + 2)
    address = "127.{}.{}.{}".format(*octets)
    certs = site_certificates(tmp_path, ["pages.test"], [address])
    server = LocalServer(site, ssl_context=certs.server_context(), host=address, port=443)
    try:
        await server.__aenter__()
    except OSError:  # pragma: no cover - a machine where port 443 cannot be bound
        pytest.skip("binding port 443 on loopback needs privileges here")
    try:
        config = config_from({"egress": {"allow": [f"{address}/32"]}})  # allow_http is off
        services = tls_services(config, certs, {"pages.test": address})
        answers = {
            url: await fetch(services, url)
            for url in (f"http://{address}:80/p", "http://pages.test:80/p", "http://pages.test/q")
        }
        await services.aclose()
    finally:
        await server.__aexit__(None, None, None)
    fetched = {url: payload.get("url") for url, payload in answers.items()}
    assert fetched == {
        f"http://{address}:80/p": f"https://{address}/p",
        "http://pages.test:80/p": "https://pages.test/p",
        "http://pages.test/q": "https://pages.test/q",
    }, answers
    for payload in answers.values():
        assert payload["outcome"] == "ok" and "How tides work" in payload["content"]
        assert codes(payload) == ["http_upgraded", "hidden_removed"]  # ARTICLE hides a div
    assert "pages.test" in server.server_names  # TLS to the name, at the judged address
    assert {seen.target for seen in server.requests} == {"/robots.txt", "/p", "/q"}


@pytest.mark.req("REQ-FETCH-010", "REQ-TEST-005")
async def test_an_explicit_port_is_kept_by_the_upgrade(tmp_path: Path) -> None:
    """REQ-FETCH-010: http://h:PORT/p is fetched as https://h:PORT/p, and succeeds."""
    certs = site_certificates(tmp_path, ["pages.test"], ["127.0.0.1"])
    async with LocalServer(site, ssl_context=certs.server_context()) as server:
        config = config_from(
            {"egress": {"allow": ["127.0.0.1/32"]}, "fetch": {"ports": [server.port]}}
        )
        services = tls_services(config, certs, {"pages.test": "127.0.0.1"})
        literal = await fetch(services, f"http://127.0.0.1:{server.port}/p")
        named = await fetch(services, f"http://pages.test:{server.port}/p")
        await services.aclose()
    assert literal["url"] == f"https://127.0.0.1:{server.port}/p", literal
    assert named["url"] == f"https://pages.test:{server.port}/p", named
    assert literal["outcome"] == named["outcome"] == "ok"


# -- media type and content coding from the headers (REQ-PAGE-005, REQ-SEC-013) --------


@pytest.mark.req("REQ-PAGE-005", "REQ-FETCH-008", "REQ-PAGE-003")
async def test_a_large_pdf_is_judged_by_its_type_before_its_body() -> None:
    """REQ-PAGE-005: a 6 MiB PDF ends unsupported_content naming it, not too_large."""
    pdf = b"%PDF-1.7\n" + bytes(6 * MiB)
    routes = {
        "/doc.pdf": Route(body=pdf, headers={"content-type": "application/pdf"}),
        "/big.html": page(b"<p>" + b"x" * (6 * MiB)),
    }
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url))
        document = await fetch(services, server.url("/doc.pdf"))
        html = await fetch(services, server.url("/big.html"))
        await services.aclose()
    assert document["error"]["kind"] == "unsupported_content", document
    assert document["error"]["detail"]["media_type"] == "application/pdf"
    assert html["error"]["kind"] == "too_large"  # an eligible type is still bounded


@pytest.mark.req("REQ-SEC-013", "REQ-PAGE-005")
async def test_a_content_coding_not_decoded_is_unsupported_content_naming_it() -> None:
    """REQ-SEC-013: the coding is named from rypsok's vocabulary, never the header's text."""
    routes = {
        "/compress": page(b"\x1f\x9d\x90compressed", headers={"content-encoding": "compress"}),
        "/stacked": page(b"...", headers={"content-encoding": "gzip, x-gzip"}),
        "/odd": page(b"...", headers={"content-encoding": "x-ignore-previous-instructions"}),
    }
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url))
        answers = {path: await fetch(services, server.url(path)) for path in routes}
        await services.aclose()
    for path, payload in answers.items():
        error = payload["error"]
        assert (error["kind"], error["detail"]["reason"]) == (
            "unsupported_content",
            "content_encoding",
        ), path
    assert "compress coding" in answers["/compress"]["error"]["message"]
    assert "x-gzip coding" in answers["/stacked"]["error"]["message"]
    assert "instructions" not in str(answers["/odd"])
    assert "does not know" in answers["/odd"]["error"]["message"]


@pytest.mark.req("REQ-SEC-013", "REQ-PAGE-003")
@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("br", lambda body: brotli.compress(body, quality=5)),
        ("zstd", zstd.compress),
        ("gzip, zstd", lambda body: zstd.compress(gzip.compress(body))),
        ("deflate, br", lambda body: brotli.compress(zlib_deflate(body), quality=5)),
    ],
)
async def test_br_and_zstd_pages_are_decoded(coding: str, encode: Callable[[bytes], bytes]) -> None:
    """REQ-SEC-013: br and zstd (alone or stacked) are decoded; the text comes back."""
    route = page(encode(ARTICLE), headers={"content-encoding": coding})
    payload = await fetch_from({"/a": route}, "/a")
    assert payload["outcome"] == "ok", payload
    assert "How tides work" in payload["content"]


def zlib_deflate(body: bytes) -> bytes:
    import zlib  # noqa: PLC0415

    return zlib.compress(body)


@pytest.mark.req("REQ-SEC-013", "REQ-PAGE-003", "REQ-PAGE-004", "REQ-TEST-006")
@pytest.mark.parametrize(
    ("coding", "bomb"),
    [
        ("br", brotli.compress(BOMB_PLAIN, quality=1)),
        ("zstd", zstd.compress(BOMB_PLAIN)),
    ],
    ids=["br", "zstd"],
)
async def test_br_and_zstd_bombs_end_too_large_without_inflating(coding: str, bomb: bytes) -> None:
    """REQ-SEC-013: bytes are counted after decompression as produced, as for gzip."""
    assert len(bomb) < MiB  # 64 MiB of markup in well under a megabyte
    route = Route(body=bomb, headers={**HTML, "content-encoding": coding})
    started = time.monotonic()
    payload = await fetch_from({"/bomb": route}, "/bomb")
    assert payload["error"]["kind"] == "too_large", payload
    assert payload["error"]["detail"]["maximum"] == limits.FETCH_MAX_BYTES
    assert time.monotonic() - started < 5


# -- the stage order (REQ-PAGE-001) -----------------------------------------------------


@pytest.mark.req("REQ-PAGE-001", "REQ-LIFE-001")
async def test_the_first_stage_that_refuses_decides_the_outcome() -> None:
    """REQ-PAGE-001: each request fails two stages; the earlier one in the order answers.

    parameter validation before the privacy check; privacy check before egress;
    egress before robots.txt; robots.txt before the request; status before media
    type; media type before the byte limit; extraction before truncation
    (max_chars counts extracted text, not markup).
    """
    pdf_404 = Route(status=404, body=b"%PDF-1.7", headers={"content-type": "application/pdf"})
    routes = {
        "/robots.txt": Route(
            body=b"User-agent: *\nDisallow: /private\n", headers={"content-type": "text/plain"}
        ),
        "/private.pdf": Route(body=b"%PDF-1.7", headers={"content-type": "application/pdf"}),
        "/gone.pdf": pdf_404,
        "/huge.pdf": Route(body=bytes(6 * MiB), headers={"content-type": "application/pdf"}),
        "/a": page(),
    }
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url))
        parameter = await fetch(services, f"https://10.0.0.1/?q={token}", max_chars=0)
        credential = await fetch(services, f"https://10.0.0.1/?q={token}")
        egress = await fetch(services, "https://10.0.0.1/private.pdf")
        robots = await fetch(services, server.url("/private.pdf"))
        status = await fetch(services, server.url("/gone.pdf"))
        media = await fetch(services, server.url("/huge.pdf"))
        window = await fetch(services, server.url("/a"), max_chars=20)
        await services.aclose()
    assert parameter["error"]["kind"] == "invalid_request"
    assert parameter["error"]["detail"]["parameter"] == "max_chars"
    assert credential["error"]["detail"]["reason"] == "credential"
    assert egress["error"]["detail"]["reason"] == "egress"
    assert robots["error"]["detail"]["reason"] == "robots_txt"
    assert status["error"]["detail"]["reason"] == "http_status"
    assert media["error"]["kind"] == "unsupported_content"
    assert window["content"] == "# How tides work\n\nTh"[:20]
    assert server.requests_to("/private.pdf") == []  # robots.txt came before the request


# -- nothing kept beyond the call (REQ-PRIV-003, REQ-LIFE-003) --------------------------


def search_config(base_url: str, **fetch: Any) -> Config:
    return engines_config(base_url, fetch=fetch)


def strings_reachable_with(digests: set[str]) -> list[str]:
    """Strings held by any live container whose SHA-256 is one of `digests`."""
    gc.collect()
    found: list[str] = []
    for holder in gc.get_objects():
        values: Any
        if isinstance(holder, dict):
            values = (*holder.keys(), *holder.values())
        elif isinstance(holder, list | tuple | set | frozenset):
            values = holder
        else:
            continue
        for value in values:
            if (
                isinstance(value, str)
                and value.startswith("http")
                and hashlib.sha256(value.encode()).hexdigest() in digests
            ):
                found.append(value)
    return found


@pytest.mark.req("REQ-PRIV-003", "REQ-LIFE-002", "REQ-LIFE-003", "REQ-SEC-021")
async def test_with_strict_mode_off_no_result_url_outlives_its_call() -> None:
    """REQ-PRIV-003: after web_search returns, no live object holds a URL it returned."""
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    async with ProviderServer(routes) as server:
        services = Services(search_config(server.base_url))
        payload, _ = await call_tool(services, "web_search", {"query": "tides"})
        digests = {hashlib.sha256(r["url"].encode()).hexdigest() for r in payload["results"]}
        assert digests
        del payload
        assert services.fetch_pipeline.returned_urls is None  # no store without strict mode
        assert strings_reachable_with(digests) == []
        await services.aclose()


@pytest.mark.req("REQ-SEC-021", "REQ-LIFE-003")
async def test_strict_mode_keeps_result_urls_bounded_and_fetches_them() -> None:
    """REQ-SEC-021: the returned URLs are kept in strict mode only, at most the bound."""
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    async with ProviderServer(routes) as server:
        services = Services(search_config(server.base_url, strict=True))
        payload, _ = await call_tool(services, "web_search", {"query": "tides"})
        store = services.fetch_pipeline.returned_urls
        assert store is not None
        urls = [r["url"] for r in payload["results"]]
        assert all(store.contains(url) for url in urls)
        refused = await fetch(services, "https://example.org/never-returned")
        await services.aclose()
    assert refused["error"]["detail"]["reason"] == "strict_mode"
    bounded = BoundedReturnedUrls(capacity=3)
    bounded.remember(["https://a.test/1", "https://a.test/2", "https://a.test/3"])
    bounded.remember(["https://a.test/1", "https://a.test/4"])  # 1 is newest again; 2 goes
    assert [bounded.contains(f"https://a.test/{i}") for i in range(1, 5)] == [
        True,
        False,
        True,
        True,
    ]
    assert len(bounded) == 3


# -- LIM-C5 and LIM-C3 under cancellation (REQ-PAGE-008, REQ-SEC-012) -------------------


def heavy_page() -> bytes:
    """About 5 MB whose parse alone takes a second or more: 30-deep inline nesting."""
    block = "<div>" + "<i>" * 30 + "t" + "</i>" * 30 + "</div>"
    return ("<html><body>" + block * (4_900_000 // len(block)) + "</body></html>").encode()


class ThreadLog:
    """Wraps the pipeline's extraction step: threads in flight, and when each one ended."""

    def __init__(self, services: Services) -> None:
        self.running = 0
        self.most = 0
        self.ended: list[tuple[float, bool]] = []  # (monotonic end, was it cancelled)
        self._lock = threading.Lock()
        extractor = services.fetch_pipeline.extractor
        inner = extractor.extract_sync

        def extract(*args: Any) -> Any:
            with self._lock:
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                result = inner(*args)
            finally:
                with self._lock:
                    self.running -= 1
            self.ended.append((time.monotonic(), result is None))
            return result

        extractor.extract_sync = extract  # type: ignore[method-assign]


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012", "REQ-PAGE-006")
@pytest.mark.parametrize("limit", ["parse_tasks", "fetches_in_flight"])
async def test_an_abandoned_extraction_keeps_its_permit_and_slot_until_it_stops(
    limit: str,
) -> None:
    """REQ-PAGE-008, REQ-SEC-012: LIM-C5 (or LIM-C3) set to 1 holds when LIM-F5 cuts a parse.

    A slow-then-heavy page reaches the parser half a second in; the call's
    ceiling (2 s) cuts its parse, which with LIM-F10 raised would run for
    seconds more. The parse stops at its next slice and only then does a
    second fetch get the parse permit (or its request go out at all, for the
    fetch slot). The second fetch is asked only once the parse has begun (and
    not before 1.7 s, so that its own LIM-F5 outlasts the wait), so the order
    holds on a loaded machine; the bounds on when the heavy call and its
    thread end leave a loaded machine 1.5 s past LIM-F5.
    """
    routes = {"/heavy": page(heavy_page(), delay_s=0.5), "/light": page()}
    settings = {"parse_tasks": 2, "fetches_in_flight": 2, "ceiling_ms": 2_000}
    settings.update(timeout_ms=2_000, connect_timeout_ms=1_000, max_nodes=2_000_000)
    settings[limit] = 1
    async with ProviderServer(routes) as server:
        services = Services(fetch_config(server.base_url, fetch=settings))
        log = ThreadLog(services)
        answers: dict[str, Any] = {}
        started = time.monotonic()

        async def one(path: str) -> None:
            answers[path] = (await fetch(services, server.url(path)), time.monotonic())

        async with anyio.create_task_group() as group:
            group.start_soon(one, "/heavy")
            await wait_until(lambda: log.running, 10)  # the heavy parse has begun
            # ... and the light call, asked late in it, has its own LIM-F5 left after it.
            await anyio.sleep(max(0.0, started + 1.7 - time.monotonic()))
            group.start_soon(one, "/light")
        await services.aclose()
    heavy, heavy_done = answers["/heavy"]
    light, _ = answers["/light"]
    assert heavy["error"]["detail"]["reason"] == "deadline", heavy
    assert light["outcome"] == "ok"
    (heavy_end, heavy_cancelled), (light_end, _) = sorted(log.ended)
    assert heavy_cancelled, "the heavy parse should have been cut by LIM-F5"
    assert heavy_done - started < 2.0 + 1.5  # the call kept to LIM-F5 (with slack)
    assert heavy_end - started < 2.0 + 1.5  # its thread stopped at a slice, not at the end
    assert log.most == 1  # never two extraction threads at once
    if limit == "fetches_in_flight":
        (light_request,) = server.requests_to("/light")
        assert light_request.arrived >= heavy_end  # the slot was held until the thread ended
    assert light_end > heavy_end
