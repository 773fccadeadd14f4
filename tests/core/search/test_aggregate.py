"""web_search end to end in one process: real egress, real local providers, MCP client."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from rypsok.core.engines.base import Category
from rypsok.core.engines.registry import DRIVER_CLASSES
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.fakes.provider_server import ProviderServer, Route, load_fixture
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, engines_config


def ok_routes(**overrides: Route) -> dict[str, Route]:
    routes = {
        path: Route.fixture(engine, OK_FIXTURES[engine]) for engine, path in ENGINE_PATHS.items()
    }
    for engine, route in overrides.items():
        routes[ENGINE_PATHS[engine]] = route
    return routes


@pytest.fixture
async def providers() -> AsyncIterator[ProviderServer]:
    async with ProviderServer(ok_routes()) as server:
        yield server


async def search(services: Services, **arguments: Any) -> dict[str, Any]:
    payload, _ = await call_tool(services, "web_search", arguments)
    return payload


def hn_body_sharing_github_urls() -> bytes:
    """Hacker News hits whose URLs are GitHub's rank 1 and 2 results, in other spellings."""
    body = json.loads(load_fixture("hackernews", "ok.json"))
    body["hits"][0]["url"] = "https://github.com/encode/httpx?utm_source=hn&utm_medium=x"
    body["hits"][2]["url"] = "HTTPS://GitHub.com:443/psf/requests#readme"
    return json.dumps(body).encode()


@pytest.mark.req("REQ-AGG-001", "REQ-RANK-004", "REQ-RANK-007", "REQ-SEARCH-007", "REQ-ENG-007")
async def test_results_are_merged_deduplicated_fused_and_bounded() -> None:
    """REQ-RANK-004, REQ-RANK-007: a URL two engines found is one result, first in rank."""
    hn = Route(body=hn_body_sharing_github_urls(), headers={"content-type": "application/json"})
    async with ProviderServer(ok_routes(hackernews=hn)) as server:
        services = Services(engines_config(server.base_url))
        payload = await search(services, query="http client", category="code", max_results=7)
        await services.aclose()
    assert payload["outcome"] == "ok"
    urls = [r["url"] for r in payload["results"]]
    assert len(urls) == 7 == len(set(urls))
    # Found by both engines, so fused first: httpx at ranks 2 and 1 (1/62 + 1/61) before
    # requests at ranks 1 and 3 (1/61 + 1/63). The URL is the best observation's,
    # with its tracking parameters removed.
    assert urls[:2] == ["https://github.com/encode/httpx", "https://github.com/psf/requests"]
    assert {r.requests_to(ENGINE_PATHS["github"])[0].param("q") for r in [server]} == {
        "http client"
    }
    assert server.requests_to(ENGINE_PATHS["arxiv"]) == []  # not of the category
    for result in payload["results"]:
        assert set(result) <= {"title", "url", "snippet", "date", "engines"}
        assert len(result["title"]) <= 200 and len(result["snippet"]) <= 500


@pytest.mark.req("REQ-CTX-001", "REQ-CMP-003")
async def test_engines_are_named_only_where_attribution_is_required(
    providers: ProviderServer,
) -> None:
    """REQ-CTX-001, REQ-CMP-003: Wikipedia's CC BY-SA record requires attribution."""
    services = Services(engines_config(providers.base_url))
    general = await search(services, query="quantum computing")
    code = await search(services, query="http client", category="code")
    await services.aclose()
    wiki = [r for r in general["results"] if "wikipedia.org" in r["url"]]
    assert wiki and all("wikipedia" in r["engines"] for r in wiki)
    # Stack Exchange content is CC BY-SA too; GitHub and Hacker News need no attribution.
    named = [r for r in code["results"] if "engines" in r]
    unnamed = [r for r in code["results"] if "engines" not in r]
    assert named and unnamed
    assert all("stackexchange" in r["engines"] for r in named)
    assert all("stackoverflow.com" not in r["url"] for r in unnamed)
    assert all("score" not in r for r in general["results"] + code["results"])
    services = Services(engines_config(providers.base_url, search={"attribution": True}))
    code = await search(services, query="http client", category="code")
    await services.aclose()
    assert all(r["engines"] for r in code["results"])  # the operator asked for all


@pytest.mark.req(
    "REQ-AGG-004", "REQ-AGG-007", "REQ-AGG-008", "REQ-ENG-009", "REQ-TEST-004", "REQ-RES-002"
)
@pytest.mark.parametrize(
    ("route", "failure"),
    [
        (Route(status=500, body=b"<h1>PROVIDER-OOPS-7731</h1>"), "request_failure"),
        (Route(status=429, headers={"retry-after": "30"}), "rate_limited"),
        (Route.fixture("github", "challenge.html"), "blocked"),
        (
            Route(
                body=b"\x00\xffPROVIDER-GARBAGE-7731{", headers={"content-type": "application/json"}
            ),
            "parse_failure",
        ),
    ],
)
async def test_one_failing_engine_makes_the_call_partial(route: Route, failure: str) -> None:
    """REQ-AGG-004, REQ-AGG-007: one failure keeps the other engine's results, partial."""
    async with ProviderServer(ok_routes(github=route)) as server:
        services = Services(engines_config(server.base_url))
        payload = await search(services, query="http client", category="code")
        await services.aclose()
        asked = len(server.requests_to(ENGINE_PATHS["github"]))
    assert asked == 1  # REQ-AGG-008: no retry within the call
    assert payload["outcome"] == "partial"
    assert payload["results"] and all("github.com/" not in r["url"] for r in payload["results"])
    failed = [n for n in payload["notices"] if n["code"] == "engine_failed"]
    assert len(failed) == 1
    assert "github" in failed[0]["message"] and failure in failed[0]["message"]
    assert "PROVIDER-OOPS" not in json.dumps(payload)
    assert "PROVIDER-GARBAGE" not in json.dumps(payload)


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002", "REQ-AGG-004", "REQ-AGG-008")
@pytest.mark.parametrize(
    ("status", "first_failure"),
    [(503, "rate_limited"), (500, "request_failure"), (429, "rate_limited")],
)
async def test_a_retry_after_on_any_answer_pauses_the_engine_and_says_so(
    status: int, first_failure: str
) -> None:
    """REQ-CMP-002, REQ-RES-002: a Retry-After on a 429, 503 or other 5xx holds the engine.

    A 503 with Retry-After is `rate_limited`; a 500 keeps its own class but its
    Retry-After is honoured all the same. The next call is inside the pause: the
    provider is not asked again, and the notice says the engine is paused by its
    provider, not that it timed out (CLR-5).
    """
    route = Route(status=status, headers={"retry-after": "30"}, body=b"busy")
    async with ProviderServer(ok_routes(github=route)) as server:
        services = Services(engines_config(server.base_url))
        first = await search(services, query="http client", category="code")
        second = await search(services, query="http server", category="code")
        await services.aclose()
        asked = len(server.requests_to(ENGINE_PATHS["github"]))
    assert asked == 1
    failed = [n for n in first["notices"] if "github" in n["message"]]
    assert [n["code"] for n in failed] == ["engine_failed"]
    assert first_failure in failed[0]["message"]
    paused = [n for n in second["notices"] if "github" in n["message"]]
    assert [n["code"] for n in paused] == ["engine_paused"]
    assert "Retry-After" in paused[0]["message"] and "timeout" not in paused[0]["message"]
    assert second["outcome"] == "partial" and second["results"]


@pytest.mark.req("REQ-AGG-003", "REQ-AGG-002", "REQ-TEST-004", "REQ-AGG-006", "REQ-PERF-002")
async def test_a_hanging_engine_costs_at_most_the_deadline() -> None:
    """REQ-AGG-003, REQ-AGG-002: a hang is cut at LIM-S5 and the call returns by LIM-S4."""
    async with ProviderServer(ok_routes(hackernews=Route(hang=True))) as server:
        config = engines_config(
            server.base_url,
            search={
                "deadline_ms": 1_500,
                "engine_timeout_ms": 1_000,
                "reserve_ms": 500,
                "connect_timeout_ms": 500,
            },
        )
        services = Services(config)
        started = time.monotonic()
        payload = await search(services, query="http client", category="code")
        elapsed = time.monotonic() - started
        await services.aclose()
    assert 0.9 <= elapsed < 1.5
    assert payload["outcome"] == "partial"
    assert any("hackernews" in n["message"] and "timeout" in n["message"]
               for n in payload["notices"])  # fmt: skip


@pytest.mark.req("REQ-AGG-009", "REQ-TEST-004")
async def test_call_completes_as_soon_as_every_engine_answered(providers: ProviderServer) -> None:
    """REQ-AGG-009: with fast engines the call ends long before the deadline."""
    services = Services(engines_config(providers.base_url))
    started = time.monotonic()
    payload = await search(services, query="quantum computing")
    elapsed = time.monotonic() - started
    await services.aclose()
    assert payload["outcome"] == "ok"
    assert elapsed < 1.0  # the deadline is 6 s


@pytest.mark.req("REQ-ERR-005", "REQ-AGG-004")
async def test_no_engine_answering_is_unavailable_not_empty() -> None:
    """REQ-ERR-005: when no engine answers the call is unavailable, never empty."""
    failing = {e: Route(status=503) for e in ENGINE_PATHS}
    async with ProviderServer(ok_routes(**failing)) as server:
        services = Services(engines_config(server.base_url))
        payload = await search(services, query="quantum computing")
        await services.aclose()
    assert payload["outcome"] == "error"
    assert payload["error"]["kind"] == "unavailable"
    assert payload["error"]["detail"]["reason"] == "no_engine_answered"
    assert len([n for n in payload["notices"] if n["code"] == "engine_failed"]) == 2


@pytest.mark.req("REQ-ERR-005", "REQ-ERR-001")
async def test_every_engine_answering_nothing_is_empty() -> None:
    """REQ-ERR-005: answered with no result is empty."""
    empty = {
        "wikipedia": Route.fixture("wikipedia", "empty.json"),
        "wikidata": Route.fixture("wikidata", "empty.json"),
    }
    async with ProviderServer(ok_routes(**empty)) as server:
        services = Services(engines_config(server.base_url))
        payload = await search(services, query="zxqv")
        await services.aclose()
    assert (payload["outcome"], payload["results"], payload["notices"]) == ("empty", [], [])


@pytest.mark.req("REQ-ARCH-004", "REQ-TEST-011", "REQ-RANK-005", "REQ-RANK-006")
async def test_output_is_byte_identical_whatever_the_arrival_order() -> None:
    """REQ-ARCH-004, REQ-TEST-011: answers arriving in every order give the same bytes.

    The three code engines answer after delays 0.3 s apart, in all six
    permutations, so their answers reach rypsok in six different orders (the
    fake records the order it finished writing them). Hacker News shares two
    URLs with GitHub, so merging and fusion are exercised too.
    """
    engines = ("github", "hackernews", "stackexchange")
    bodies = {
        "github": load_fixture("github", "ok.json"),
        "hackernews": hn_body_sharing_github_urls(),
        "stackexchange": load_fixture("stackexchange", "ok.json"),
    }
    texts = set()
    orders = set()
    for delays in itertools.permutations((0.0, 0.3, 0.6)):
        routes = ok_routes(
            **{
                engine: Route(
                    body=bodies[engine],
                    delay_s=delay,
                    headers={"content-type": "application/json"},
                )
                for engine, delay in zip(engines, delays, strict=True)
            }
        )
        async with ProviderServer(routes) as server:
            services = Services(engines_config(server.base_url))
            _, text = await call_tool(services, "web_search", {"query": "http", "category": "code"})
            await services.aclose()
            paths = {ENGINE_PATHS[engine]: engine for engine in engines}
            orders.add(tuple(paths[path] for path in server.answered if path in paths))
        texts.add(text)
    assert len(orders) == 6  # every arrival order happened
    assert all(len(order) == 3 for order in orders)
    assert len(texts) == 1
    assert '"outcome":"ok"' in next(iter(texts)).replace(" ", "")


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEARCH-005", "REQ-ENG-010")
async def test_engines_that_cannot_honour_a_filter_are_skipped_with_a_notice(
    providers: ProviderServer,
) -> None:
    """REQ-SEARCH-004, REQ-SEARCH-005: a skipped engine is named and the call is not partial."""
    services = Services(engines_config(providers.base_url, search={"languages": ["en", "de"]}))
    dated = await search(services, query="http client", category="code", time_range="week")
    german = await search(services, query="quanten", language="de")
    await services.aclose()
    assert dated["outcome"] == "ok"
    assert providers.requests_to(ENGINE_PATHS["github"])[0].param("q") is not None
    skipped = [n for n in german["notices"] if n["code"] == "engine_not_applicable"]
    assert len(skipped) == 1 and "wikipedia" in skipped[0]["message"]
    assert "language" in skipped[0]["message"]
    assert german["outcome"] in ("ok", "empty")
    assert providers.requests_to(ENGINE_PATHS["wikidata"])[-1].param("language") == "de"


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
async def test_english_is_honoured_by_the_english_indexes_and_skips_github(
    providers: ProviderServer,
) -> None:
    """REQ-SEARCH-004: Hacker News and Stack Overflow are English indexes; GitHub selects none."""
    services = Services(engines_config(providers.base_url))
    payload = await search(services, query="http client", category="code", language="en")
    await services.aclose()
    skipped = [n for n in payload["notices"] if n["code"] == "engine_not_applicable"]
    assert len(skipped) == 1
    named = set(skipped[0]["message"].rstrip(".").split(": ")[1].split(", "))
    # GitHub (and npm, whose search selects no language) cannot honour `en`.
    assert "github" in named and not named & {"hackernews", "stackexchange"}
    assert len(providers.requests_to(ENGINE_PATHS["hackernews"])) == 1
    assert len(providers.requests_to(ENGINE_PATHS["stackexchange"])) == 1
    assert providers.requests_to(ENGINE_PATHS["github"]) == []
    assert payload["outcome"] == "ok"


@pytest.mark.req("REQ-ENG-010", "REQ-SEARCH-001")
async def test_query_longer_than_an_engine_accepts_skips_only_that_engine(
    providers: ProviderServer,
) -> None:
    """REQ-ENG-010: an engine whose maximum query length is exceeded is skipped with a notice."""
    services = Services(engines_config(providers.base_url))
    payload = await search(services, query="x" * 260, category="code")
    await services.aclose()
    skipped = [n for n in payload["notices"] if n["code"] == "engine_not_applicable"]
    assert len(skipped) == 1 and "github" in skipped[0]["message"]
    assert providers.requests_to(ENGINE_PATHS["github"]) == []
    assert len(providers.requests_to(ENGINE_PATHS["hackernews"])) == 1


@pytest.mark.req("REQ-SEARCH-006", "REQ-LIFE-001", "REQ-PRIV-002")
async def test_no_engine_request_before_validation_and_credential_check(
    providers: ProviderServer,
) -> None:
    """REQ-SEARCH-006, REQ-LIFE-001: refused calls send nothing to any engine."""
    services = Services(engines_config(providers.base_url))
    await search(services, query="q", max_results=0)
    await search(services, query="q", category="images")
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    denied = await search(services, query=f"debug {token}")
    await services.aclose()
    assert denied["error"]["kind"] == "denied"
    assert providers.requests == []


@pytest.mark.req("REQ-CMP-004", "REQ-SEC-017")
async def test_requests_carry_the_one_user_agent(providers: ProviderServer) -> None:
    """REQ-CMP-004: rypsok/<version> (+<project URL>; <operator contact>) on every request."""
    config = engines_config(providers.base_url, operator={"contact": "mailto:ops@example.org"})
    services = Services(config)
    await search(services, query="http client", category="code")
    await services.aclose()
    agents = {r.header("user-agent") for r in providers.requests}
    assert len(agents) == 1
    (agent,) = agents
    assert agent is not None and agent.startswith("rypsok/0.1.0 (+https://")
    assert agent.endswith("; mailto:ops@example.org)")


@pytest.mark.req("REQ-CMP-002", "REQ-TEST-016", "REQ-AGG-008", "REQ-ENG-002")
async def test_ten_concurrent_arxiv_searches_respect_its_spacing() -> None:
    """REQ-CMP-002: arXiv's 1 per 3 s holds on the wire; late turns are not sent at all."""
    async with ProviderServer(ok_routes()) as server:
        services = Services(engines_config(server.base_url))
        payloads: list[dict[str, Any]] = []

        async def one(number: int) -> None:
            # Distinct queries: identical ones in flight would share one request.
            query = f"qubits {number}"
            payloads.append(await search(services, query=query, category="science"))

        async with anyio.create_task_group() as group:
            for number in range(10):
                group.start_soon(one, number)
        status, _ = await call_tool(services, "engine_status", {})
        await services.aclose()
    # Turns refused for the deadline were never sent: no verdict on arXiv's health.
    states = {e["id"]: e["state"] for e in status["engines"]}
    assert states["arxiv"] == "closed"
    arrivals = sorted(r.arrived for r in server.requests_to(ENGINE_PATHS["arxiv"]))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 2  # 0 s and ~3 s; every later turn would miss the 5.5 s deadline
    assert min(gaps) >= 3.0
    outcomes = sorted(p["outcome"] for p in payloads)
    # Europe PMC and Crossref answer every search; arXiv's late turns are reported.
    assert outcomes == ["ok"] * 2 + ["partial"] * 8
    late = [p for p in payloads if p["outcome"] == "partial"]
    for payload in late:
        arxiv = [n for n in payload["notices"] if "arxiv" in n["message"]]
        # CLR-5: not a timeout of the provider, a turn its rate leaves no room for.
        assert [n["code"] for n in arxiv] == ["engine_not_asked"]
        assert "rate limit" in arxiv[0]["message"] and "timeout" not in arxiv[0]["message"]


@pytest.mark.req("REQ-ENG-002", "REQ-AGG-001")
async def test_identical_requests_in_flight_are_shared_per_caller() -> None:
    """Decision 2: identical engine requests of one caller in flight are made once."""
    slow = {e: Route.fixture(e, OK_FIXTURES[e], delay_s=0.2) for e in ("github", "hackernews")}
    async with ProviderServer(ok_routes(**slow)) as server:
        services = Services(engines_config(server.base_url))
        answers: list[dict[str, Any]] = []

        async def one(caller: str) -> None:
            answer = await services.call("web_search", {"query": "x", "category": "code"}, caller)
            answers.append(answer.payload)

        async with anyio.create_task_group() as group:
            for caller in ("alice", "alice", "alice"):
                group.start_soon(one, caller)
        shared = len(server.requests_to(ENGINE_PATHS["hackernews"]))
        async with anyio.create_task_group() as group:
            for caller in ("bob", "carol"):
                group.start_soon(one, caller)
        await services.aclose()
    assert shared == 1
    assert len(server.requests_to(ENGINE_PATHS["hackernews"])) == 3  # 1 shared + bob + carol
    shared_answers = answers[:3]  # alice's; bob and carol wait for GitHub's 6 s spacing
    assert len({json.dumps(a["results"]) for a in shared_answers}) == 1
    assert all(a["outcome"] == "ok" for a in shared_answers)


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
async def test_stack_exchange_backoff_holds_its_next_request() -> None:
    """REQ-CMP-002: a `backoff` on a successful answer keeps the hits and delays the engine."""
    body = json.loads(load_fixture("stackexchange", "ok_with_backoff.json"))
    body["backoff"] = 30
    route = Route(body=json.dumps(body).encode(), headers={"content-type": "application/json"})
    async with ProviderServer(ok_routes(stackexchange=route)) as server:
        services = Services(engines_config(server.base_url))
        first = await search(services, query="closures", category="code")
        second = await search(services, query="generators", category="code")
        await services.aclose()
    assert first["outcome"] == "ok"
    assert any("stackoverflow.com" in r["url"] for r in first["results"])
    assert len(server.requests_to(ENGINE_PATHS["stackexchange"])) == 1
    held = [n for n in second["notices"] if "stackexchange" in n["message"]]
    # Its turn is after the deadline because the provider paused it (CLR-5).
    assert [n["code"] for n in held] == ["engine_paused"]
    assert "timeout" not in held[0]["message"]


@pytest.mark.req("REQ-SEARCH-002", "REQ-ENG-003", "REQ-CFG-003")
async def test_a_disabled_engine_is_never_asked_and_its_lone_category_disappears() -> None:
    """REQ-SEARCH-002, REQ-ENG-003: disabling every science engine removes `science`.

    Hacker News is disabled too: code searches go on without it, with no notice,
    and none of the disabled engines' fakes sees a request, although each one's
    endpoint points at the fake.
    """
    science = [c.id for c in DRIVER_CLASSES if c.categories == {Category.SCIENCE}]
    disabled = (*(e for e in science if e in ENGINE_PATHS), "hackernews")
    async with ProviderServer(ok_routes()) as server:
        engines = {e: {"enabled": False, "endpoint": server.url(ENGINE_PATHS[e])} for e in disabled}
        services = Services(engines_config(server.base_url, engines=engines))
        async with Client(build_server(services)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            code = await client.call_tool("web_search", {"query": "http", "category": "code"})
            science = await client.call_tool(
                "web_search", {"query": "qubits", "category": "science"}
            )
        await services.aclose()
        asked = {e: len(server.requests_to(ENGINE_PATHS[e])) for e in ENGINE_PATHS}
    categories = tools["web_search"].input_schema["properties"]["category"]["enum"]
    assert "science" not in categories and {"general", "news", "code"} <= set(categories)
    assert code.structured_content is not None and science.structured_content is not None
    assert code.structured_content["outcome"] == "ok"
    assert all("hackernews" not in n["message"] for n in code.structured_content["notices"])
    assert science.is_error and science.structured_content["error"]["kind"] == "invalid_request"
    assert all(asked[e] == 0 for e in disabled), asked
    assert asked["github"] == 1
