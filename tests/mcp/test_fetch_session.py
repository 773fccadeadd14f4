"""web_fetch through a real MCP session: the page corpus and hostile documents."""

from __future__ import annotations

import gzip
import json
import pathlib
import time
import urllib.parse
from ipaddress import ip_address
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from rypsok.core import limits
from rypsok.core.contract import ErrorKind, Outcome
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.egress.ranges import IPV4_REFUSED, IPV6_REFUSED
from rypsok.core.services import Services, user_agent
from rypsok.mcp.server import build_server
from tests.core.egress.servers import LocalServer, Seen, respond
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    call_tool,
    config_from,
    services_resolving,
    wait_until,
)

MiB = 1024 * 1024
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


class Extractions:
    """Wraps the pipeline's extraction step: the paths being extracted, and each one's span."""

    def __init__(self, services: Services) -> None:
        self.running: set[str] = set()
        self.spans: list[tuple[str, float, float]] = []  # (path, monotonic start, end)
        extractor = services.fetch_pipeline.extractor
        inner = extractor.extract_sync

        def extract(*args: Any) -> Any:
            path = args[1].url.rsplit("/", 1)[-1]
            started = time.monotonic()
            self.running.add(path)
            try:
                return inner(*args)
            finally:
                self.running.discard(path)
                self.spans.append((path, started, time.monotonic()))

        extractor.extract_sync = extract  # type: ignore[method-assign]


@pytest.mark.req("REQ-TEST-006", "REQ-SEC-014", "REQ-PAGE-006", "REQ-PAGE-008", "REQ-PAGE-003")
async def test_hostile_documents_end_their_call_while_search_stays_prompt() -> None:
    """REQ-TEST-006, REQ-SEC-014: bombs end their own call; a search is answered mid-parse.

    The search starts once one of the two long parses (LIM-F10 reached) is
    running and must be answered before that parse ends: a parse holding the
    event loop would hold the search until it ended (REQ-PAGE-008). Judged by
    that order rather than a fixed time, it holds on a loaded machine too.
    """
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
        # LIM-F3 raised so that the 5-million-node page (40 MB) reaches LIM-F10;
        # the 64 MiB bomb is still past it. LIM-F5 at its longest: the parses
        # take turns (LIM-C5 = 1), and a loaded machine must not end them by time.
        config = fetch_and_search_config(server.base_url, max_bytes=48 * MiB, ceiling_ms=60_000)
        services = Services(config)
        extractions = Extractions(services)

        async def fetch(path: str) -> None:
            payload, _ = await call_tool(services, "web_fetch", {"url": server.url(path)})
            outcomes[path] = payload

        async def search_during_a_long_parse() -> None:
            await wait_until(lambda: extractions.running & {"nodes", "wide"}, 30)
            started = time.monotonic()
            payload, _ = await call_tool(services, "web_search", {"query": "tides"})
            outcomes["search"] = (payload["outcome"], started, time.monotonic())

        async with anyio.create_task_group() as group:
            for path in ("/bomb", "/nested", "/nodes", "/wide"):
                group.start_soon(fetch, path)
            group.start_soon(search_during_a_long_parse)
        await services.aclose()
    assert outcomes["/bomb"]["error"]["kind"] == "too_large"
    nodes = outcomes["/nodes"]
    assert nodes["outcome"] == "ok", nodes  # read whole, parsed only to LIM-F10
    assert "extraction_partial" in [n["code"] for n in nodes["notices"]]
    assert nodes["content"].count("x") <= limits.PARSED_NODES
    nested_outcome = outcomes["/nested"]
    assert nested_outcome["outcome"] == "ok" or nested_outcome["error"]["kind"] == (
        "unsupported_content"
    )
    if nested_outcome["outcome"] == "ok":
        assert "extraction_partial" in [n["code"] for n in nested_outcome["notices"]]
    wide = outcomes["/wide"]
    assert wide["outcome"] == "ok"
    assert "extraction_partial" in [n["code"] for n in wide["notices"]]  # LIM-F10 reached
    search_outcome, search_start, search_end = outcomes["search"]
    assert search_outcome == "ok"
    assert any(
        path in {"nodes", "wide"} and start <= search_start and search_end <= end
        for path, start, end in extractions.spans
    ), (search_start, search_end, extractions.spans)  # answered while that parse ran


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


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005")
async def test_tunnelled_destinations_are_denied_whatever_they_carry() -> None:
    """REQ-SEC-006: 6to4 and Teredo literals, and names resolving to them, are denied."""
    carried_public = {
        "sixtofour.example.org": "2002:808:808::1",  # 6to4 of 8.8.8.8
        "teredo.example.org": "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # public server, client
    }
    services = services_resolving(config_from({}), carried_public)
    urls = [f"https://[{address}]/" for address in carried_public.values()]
    urls += [f"https://{name}/page" for name in carried_public]
    async with Client(build_server(services)) as client:
        for url in urls:
            result = await client.call_tool("web_fetch", {"url": url})
            payload = result.structured_content
            assert payload is not None and payload["outcome"] == "error", url
            assert payload["error"]["kind"] == "denied", (url, payload["error"])
            assert payload["error"]["detail"]["reason"] == "egress"
    await services.aclose()


@pytest.mark.req("REQ-SEC-005", "REQ-CMP-004", "REQ-SEC-017", "REQ-SEC-009")
async def test_every_outbound_request_passes_the_one_egress_component() -> None:
    """REQ-SEC-005: engine requests, robots.txt and the page all leave through one EgressClient.

    The engines and the page are reached by names that only the resolver
    injected into that client knows (`.test` never resolves otherwise), so a
    request that bypassed egress could not have arrived. Each carries the one
    User-Agent, and each is judged by its own profile: the engine profile
    takes the explicitly configured plain-http endpoint, while the
    agent-directed profile refuses a port outside LIM-F8 on the same host.
    """
    routes: dict[str, Any] = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes["/page"] = Route(
        body=b"<html><body><main><p>Tide tables for the harbour.</p></main></body></html>",
        headers={"content-type": "text/html; charset=utf-8"},
    )
    resolved: list[str] = []
    async with ProviderServer(routes) as server:
        port = int(server.base_url.rsplit(":", 1)[1])

        async def resolve(host: str, _port: int) -> Any:
            resolved.append(host)
            return (ip_address("127.0.0.1"),)

        engines = {
            e: {"endpoint": f"http://engines.test:{port}{p}"} for e, p in ENGINE_PATHS.items()
        }
        config = config_from({
            "egress": {"allow": ["127.0.0.1/32"]},
            "fetch": {"allow_http": True, "ports": [port]},
            "engines": engines,
        })  # fmt: skip
        egress = EgressClient(
            user_agent=user_agent(None),
            rules=EgressRules.from_strings(allow=config.egress.allow),
            fetch_allow_http=True,
            fetch_extra_ports=(port,),
            resolver=resolve,
        )
        services = Services(config, egress=egress)
        search, _ = await call_tool(services, "web_search", {"query": "tides"})
        fetched, _ = await call_tool(
            services, "web_fetch", {"url": f"http://pages.test:{port}/page"}
        )
        other_port, _ = await call_tool(
            services, "web_fetch", {"url": f"http://engines.test:{port + 1}/"}
        )
        await services.aclose()
    assert search["outcome"] in ("ok", "partial") and search["results"]
    assert fetched["outcome"] == "ok" and "Tide tables" in fetched["content"]
    assert other_port["error"]["detail"]["reason"] == "port"
    assert set(resolved) == {"engines.test", "pages.test"}
    paths = {request.path for request in server.requests}
    assert {"/robots.txt", "/page"} <= paths and paths & set(ENGINE_PATHS.values())
    assert {request.header("user-agent") for request in server.requests} == {user_agent(None)}


# -- no input reaches "rypsok failed internally" (REQ-FETCH-001, REQ-CTX-006) -----------

# Every IPv4 address but loopback is denied: generated URLs may name any address,
# and a test must never reach the internet. Loopback reaches the local server only.
NOT_LOOPBACK = [
    "0.0.0.0/2", "64.0.0.0/3", "96.0.0.0/4", "112.0.0.0/5", "120.0.0.0/6", "124.0.0.0/7",
    "126.0.0.0/8", "128.0.0.0/1", "::/0",
]  # fmt: skip
ERROR_KINDS = {kind.value for kind in ErrorKind}
OUTCOMES = {outcome.value for outcome in Outcome}

# JSON carries lone surrogates ("\\ud800") that UTF-8 text cannot: some texts hold one.
_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_text = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.builds(lambda a, c, b: a + c + b, st.text(max_size=8), _surrogates, st.text(max_size=8)),
)
_any_value = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True), _text,
    st.lists(st.integers(), max_size=3),
)  # fmt: skip
_hosts = st.one_of(
    st.sampled_from([
        "127.0.0.1", "example.org", "xn--bcher-kva.example", "bücher.example", "[::1]",
        "[2002:808:808::1]", "10.0.0.1", "0x7f.1", "2130706433", "a..b", "", "exa mple.org",
        "ｅｘａｍｐｌｅ.org", "%31%32%37.0.0.1", "user:pw@example.org", "h.test:80", "h.test:0",
    ]),
    st.text(st.characters(codec="utf-8", exclude_characters="/?#"), max_size=30),
)  # fmt: skip
# A path under /r/ is answered with a redirect to the rest of it, percent-decoded
# and sent as Latin-1: generated Location headers, malformed ones included.
_locations = st.one_of(
    st.sampled_from(["http://[::1", "https://[::1]:x/", "//", "http://a:99999/", "/%ZZ", ""]),
    st.text(st.characters(codec="latin-1", exclude_characters="\r\n"), max_size=40),
)
_paths = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=60),
    _locations.map(lambda location: "r/" + urllib.parse.quote(location, safe="")),
    st.integers(0, 3_000).map(lambda n: "/" + "é" * n),
    st.integers(0, 3_000).map(lambda n: "/" + "a" * n),
)
_urls = st.one_of(
    _text,
    _paths.map(lambda path: "http://127.0.0.1:{port}/" + path),
    st.builds(
        lambda scheme, host, port, path: f"{scheme}{host}{port}{path}",
        st.sampled_from(["https://", "http://", "HTTP://", "ftp://", "https:/", "", "javascript:"]),
        _hosts,
        st.sampled_from(["", ":80", ":443", ":{port}", ":99999", ":-1", ":"]),
        _paths,
    ),
)
_fetch_arguments = st.fixed_dictionaries(
    {"url": st.one_of(_urls, _any_value)},
    optional={"max_chars": _any_value, "start_char": _any_value, "extra": _any_value},
)
_search_arguments = st.fixed_dictionaries(
    {"query": st.one_of(_text, st.text(max_size=600), _any_value)},
    optional={
        "category": st.one_of(
            st.sampled_from(["general", "news", "science", "code", "x"]), _any_value
        ),
        "max_results": _any_value,
        "language": st.one_of(st.sampled_from(["en", "de", "zz", "EN"]), _any_value),
        "time_range": st.one_of(st.sampled_from(["day", "week", "month", "year", "x"]), _any_value),
    },
)
_unknown_keys = st.dictionaries(st.text(max_size=45), _any_value, max_size=2)  # fmt: skip


_calls = st.one_of(
    st.tuples(st.just("web_fetch"), _fetch_arguments, _unknown_keys),
    st.tuples(st.just("web_search"), _search_arguments, _unknown_keys),
)


async def any_page(seen: Seen, writer: Any) -> bool:
    """Every path is a page (robots.txt is absent), so long and encoded URLs are fetched;
    a path under /r/ redirects to what follows it."""
    if seen.target == "/robots.txt":
        return await respond(writer, 404, (("Content-Type", "text/plain"),), b"none")
    if seen.target.startswith("/r/"):
        location = urllib.parse.unquote(seen.target[3:], encoding="latin-1")
        return await respond(writer, 302, (("Location", location),))
    body = b"<html><body><main><p>A page at any path.</p></main></body></html>"
    return await respond(writer, 200, (("Content-Type", "text/html"),), body)


def checked_answer(result: Any, tool: str, arguments: dict[str, Any]) -> None:
    payload = result.structured_content
    assert payload is not None, (tool, arguments)
    assert payload["outcome"] in OUTCOMES
    assert result.is_error == (payload["outcome"] == "error")
    if payload["outcome"] == "error":
        error = payload["error"]
        assert error["kind"] in ERROR_KINDS
        assert error["detail"].get("reason") != "internal", (tool, arguments, error)


def generated_config(engines_url: str, pages_port: int) -> Any:
    engines = {e: {"endpoint": f"{engines_url}{p}"} for e, p in ENGINE_PATHS.items()}
    return config_from({
        "egress": {"allow": ["127.0.0.1/32"], "deny": NOT_LOOPBACK},
        "fetch": {"allow_http": True, "ports": [pages_port], "timeout_ms": 2_000,
                  "connect_timeout_ms": 500},
        "engines": engines,
    })  # fmt: skip


def loopback_services(config: Any) -> Services:
    """Every name resolves to loopback: generated names never reach a real resolver."""

    async def resolve(host: str, port: int) -> Any:
        return (ip_address("127.0.0.1"),)

    egress = EgressClient(
        user_agent=user_agent(None),
        rules=EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny),
        fetch_allow_http=True,
        fetch_extra_ports=config.fetch.ports,
        resolver=resolve,
    )
    return Services(config, egress=egress)


@pytest.mark.req("REQ-FETCH-001", "REQ-CTX-006", "REQ-ERR-002", "REQ-MCP-004", "REQ-SEC-014")
def test_generated_arguments_never_end_in_an_internal_error() -> None:
    """REQ-FETCH-001, REQ-CTX-006: any arguments get a contract outcome, never `internal`.

    One in-memory MCP session with the production pipeline serves web_fetch
    and web_search with generated arguments and URLs (non-ASCII, encoded,
    over-long, odd notations, wrong types, unknown keys); engines answer from
    a local provider server and every path of a local page server is a page.
    """
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    with anyio.from_thread.start_blocking_portal() as portal:
        engines = portal.wrap_async_context_manager(ProviderServer(routes))
        pages = portal.wrap_async_context_manager(LocalServer(any_page))
        with engines as engine_server, pages as page_server:
            port = page_server.port
            services = loopback_services(generated_config(engine_server.base_url, port))
            with portal.wrap_async_context_manager(Client(build_server(services))) as session:

                @settings(max_examples=100, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))  # fmt: skip
                @given(_calls)
                def property_holds(call: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
                    tool, arguments, unknown = call
                    arguments = {**unknown, **arguments}
                    if isinstance(arguments.get("url"), str):
                        arguments["url"] = arguments["url"].replace("{port}", str(port))
                    result = portal.call(session.call_tool, tool, arguments)
                    checked_answer(result, tool, arguments)

                property_holds()
            portal.call(services.aclose)
