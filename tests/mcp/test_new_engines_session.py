"""The issue-11 engines through real MCP sessions against local fakes in each provider's format.

Every new engine answers through the whole pipeline (egress, queue, driver,
fusion) and merges with the others by URL; `rypsok check` lists every engine
with its categories and keyed ones as inactive without a key; a scraping
engine is refused without `[scraping] enabled = true`, and with it the fake
HTML page's results come back in order while the fake saw no browser-like
header.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rypsok.core.engines.registry import DRIVER_CLASSES
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route, load_fixture
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, child_env, config_from, write_config

KEY_ENV = "RYPSOK_TEST_ENGINE_KEY"
KEY = "k3y-" + "Q1w2E3r4T5y6U7i8"  # synthetic
# New engine -> (endpoint path on the fake, the paths it requests and their answers).
NEW: dict[str, tuple[str, dict[str, Route]]] = {
    "crates": ("/api/v1/crates", {"/api/v1/crates": Route.fixture("crates", "ok.json")}),
    "pubmed": (
        "/entrez/eutils/",
        {
            "/entrez/eutils/esearch.fcgi": Route.fixture("pubmed", "search.json"),
            "/entrez/eutils/esummary.fcgi": Route.fixture("pubmed", "ok.json"),
        },
    ),
    "openalex": ("/openalex/works", {"/openalex/works": Route.fixture("openalex", "merge.json")}),
    "kagi": ("/kagi/api/v1/search", {"/kagi/api/v1/search": Route.fixture("kagi", "ok.json")}),
    "tavily": ("/tavily/search", {"/tavily/search": Route.fixture("tavily", "ok.json")}),
    "exa": ("/exa/search", {"/exa/search": Route.fixture("exa", "ok.json")}),
    "you": ("/v1/search", {"/v1/search": Route.fixture("you", "ok.json")}),
    "marginalia": (
        "/marginalia/search",
        {"/marginalia/search": Route.fixture("marginalia", "ok.json")},
    ),
    "duckduckgo": ("/html/", {"/html/": Route.fixture("duckduckgo", "ok.html")}),
    "bing": ("/search", {"/search": Route.fixture("bing", "ok.html")}),
}
KEYED = ("openalex", "kagi", "tavily", "exa", "you", "marginalia")
SCRAPING = ("duckduckgo", "bing")
BROWSER_HEADER_PREFIXES = ("accept-language", "sec-fetch-", "sec-ch-", "referer", "cookie", "dnt",
                           "upgrade-insecure-requests")  # fmt: skip


def _engines(base_url: str) -> dict[str, dict[str, Any]]:
    engines: dict[str, dict[str, Any]] = {
        engine: {"endpoint": f"{base_url}{path}"} for engine, path in ENGINE_PATHS.items()
    }
    for engine, (path, _) in NEW.items():
        engines[engine] = {"endpoint": f"{base_url}{path}"}
        if engine in KEYED:
            engines[engine]["api_key"] = {"env": KEY_ENV}
        if engine in SCRAPING or engine == "pubmed":
            engines[engine]["enabled"] = True
    return engines


def _config(base_url: str) -> Any:
    return config_from(
        {
            "egress": {"allow": ["127.0.0.1/32"]},
            "operator": {"contact": "ops@example.org"},
            "search": {"max_engines": 16, "attribution": True},
            "scraping": {"enabled": True},
            "engines": _engines(base_url),
        }
    )


@pytest.fixture
async def providers(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ProviderServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    routes = {path: Route.fixture(e, OK_FIXTURES[e]) for e, path in ENGINE_PATHS.items()}
    for _, served in NEW.values():
        routes.update(served)
    async with ProviderServer(routes) as server:
        yield server


async def _search(services: Services, query: str, category: str) -> dict[str, Any]:
    payload, _ = await call_tool(
        services, "web_search", {"query": query, "category": category, "max_results": 20}
    )
    return payload


def _engines_seen(payload: dict[str, Any]) -> set[str]:
    return {engine for result in payload["results"] for engine in result["engines"] or []}


@pytest.mark.req("REQ-ENG-008", "REQ-TEST-002", "REQ-RANK-004")
async def test_every_new_engine_answers_and_merges_with_the_others_by_url(
    providers: ProviderServer,
) -> None:
    """REQ-ENG-008, REQ-TEST-002: each new engine's results arrive; same URLs merge."""
    services = Services(_config(providers.base_url))
    general = await _search(services, "rust async runtime", "general")
    science = await _search(services, "base editing", "science")
    code = await _search(services, "serde express", "code")
    await services.aclose()
    for payload in (general, science, code):
        assert payload["outcome"] == "ok", payload["notices"]
    assert {"kagi", "tavily", "exa", "you", "marginalia", "duckduckgo", "bing"} <= _engines_seen(
        general
    )
    assert {"pubmed", "openalex", "dblp"} <= _engines_seen(science)
    assert {"npm", "crates"} <= _engines_seen(code)
    by_url = {result["url"]: result for result in general["results"]}
    assert set(by_url["https://tokio.rs/"]["engines"]) == {"duckduckgo", "bing"}
    paper = next(r for r in science["results"] if "nature17946" in r["url"])
    assert {"pubmed", "openalex"} <= set(paper["engines"])  # one DOI, two engines, one result
    crate = next(r for r in code["results"] if r["url"] == "https://crates.io/crates/serde")
    assert crate["title"] == "serde" and crate["date"] == "2026-09-27"


@pytest.mark.req("REQ-TEST-002", "REQ-CMP-004", "REQ-SEC-017")
async def test_the_wire_carries_two_pubmed_calls_and_each_key_in_its_one_place(
    providers: ProviderServer,
) -> None:
    """REQ-CMP-004, REQ-SEC-017: esearch then esummary with tool/email; keys as headers or body."""
    services = Services(_config(providers.base_url))
    await _search(services, "base editing", "science")
    await _search(services, "rust async runtime", "general")
    await services.aclose()
    search = providers.requests_to("/entrez/eutils/esearch.fcgi")[0]
    summary = providers.requests_to("/entrez/eutils/esummary.fcgi")[0]
    assert search.arrived <= summary.arrived
    assert summary.param("id") == "27096365,31452104"
    assert (summary.param("tool"), summary.param("email")) == ("rypsok", "ops@example.org")
    assert providers.requests_to("/openalex/works")[0].param("api_key") == KEY
    kagi = providers.requests_to("/kagi/api/v1/search")[0]
    assert kagi.method == "POST" and kagi.header("authorization") == f"Bearer {KEY}"
    assert json.loads(kagi.body)["query"] == "rust async runtime"
    assert providers.requests_to("/exa/search")[0].header("x-api-key") == KEY
    assert providers.requests_to("/v1/search")[0].header("x-api-key") == KEY
    assert providers.requests_to("/marginalia/search")[0].header("api-key") == KEY


@pytest.mark.req("REQ-ENG-013", "REQ-ENG-014", "REQ-TEST-018", "REQ-CMP-004")
async def test_with_the_switch_duckduckgo_returns_its_page_in_order_without_browser_headers(
    providers: ProviderServer,
) -> None:
    """REQ-ENG-014, REQ-TEST-018: results in page order; the fake saw only rypsok's UA."""
    config = config_from(
        {
            "egress": {"allow": ["127.0.0.1/32"]},
            "scraping": {"enabled": True},
            "search": {"preference": ["duckduckgo"], "max_engines": 1},
            "engines": {"duckduckgo": {"enabled": True,
                                       "endpoint": f"{providers.base_url}/html/"}},
        }
    )  # fmt: skip
    services = Services(config)
    payload = await _search(services, "rust async runtime", "general")
    await services.aclose()
    assert payload["outcome"] == "ok"
    in_order = ["https://tokio.rs/", "https://async.rs/docs?v=1&lang=en", "https://smol.example/"]
    assert [r["url"] for r in payload["results"]] == in_order
    (wire,) = providers.requests_to("/html/")
    assert wire.method == "POST" and b"q=rust+async+runtime" in wire.body
    names = [name for name, _ in wire.headers]
    assert not [n for n in names if n.startswith(BROWSER_HEADER_PREFIXES)]
    agent = wire.header("user-agent") or ""
    assert agent.startswith("rypsok/") and "Mozilla" not in agent


def _check(tmp_path: pathlib.Path, text: str) -> subprocess.CompletedProcess[str]:
    config = write_config(tmp_path, "schema_version = 1\n" + text)
    return subprocess.run(
        [sys.executable, "-m", "rypsok", "check", "--config", str(config)],
        capture_output=True, text=True, env=child_env(), timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.req("REQ-ENG-013", "REQ-TEST-018", "REQ-CFG-005")
@pytest.mark.parametrize("engine", SCRAPING)
def test_check_refuses_a_scraping_engine_without_the_switch(
    tmp_path: pathlib.Path, engine: str
) -> None:
    """REQ-ENG-013, REQ-TEST-018: exit 1 naming the engine, the page type and the terms."""
    refused = _check(tmp_path, f"[engines.{engine}]\nenabled = true\n")
    assert refused.returncode == 1
    assert f"'{engine}'" in refused.stderr
    assert "human-facing page" in refused.stderr and "provider's terms" in refused.stderr
    allowed = _check(tmp_path, f"[scraping]\nenabled = true\n[engines.{engine}]\nenabled = true\n")
    assert allowed.returncode == 0, allowed.stderr
    assert f"engine {engine}: active (general)" in allowed.stdout
    # The switch alone enables nothing: scraping engines are never on by default.
    switch_only = _check(tmp_path, "[scraping]\nenabled = true\n")
    assert f"engine {engine}: disabled" in switch_only.stdout


@pytest.mark.req("REQ-OPS-003", "REQ-CFG-004", "REQ-ENG-013")
def test_check_lists_every_engine_with_categories_and_keyed_ones_inactive(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-OPS-003, REQ-CFG-004: every engine and its categories; no key, inactive_no_key."""
    listed = _check(tmp_path, "")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split(":")[0].strip(): line for line in listed.stdout.splitlines()}
    for engine in KEYED:
        assert "inactive_no_key" in lines[f"engine {engine}"]
    assert lines["engine kagi"].endswith("(general, news)")
    assert lines["engine openalex"].endswith("(science)")
    assert "inactive_no_contact (code)" in lines["engine crates"]
    assert "disabled (science)" in lines["engine pubmed"]
    assert "active (code)" in lines["engine npm"] and "active (science)" in lines["engine dblp"]
    for engine in SCRAPING:
        assert "disabled (general)" in lines[f"engine {engine}"]


EMPTY = {
    "crates": ("crates", "empty.json"), "npm": ("npm", "empty.json"),
    "dblp": ("dblp", "empty.json"), "pubmed": ("pubmed", "empty.json"),
    "openalex": ("openalex", "empty.json"), "kagi": ("kagi", "empty.json"),
    "tavily": ("tavily", "empty.json"), "exa": ("exa", "empty.json"),
    "you": ("you", "empty.json"), "marginalia": ("marginalia", "empty.json"),
    # DuckDuckGo's own no-results page: the marker is a result item of its own.
    "duckduckgo": ("duckduckgo", "empty_item.html"), "bing": ("bing", "empty.html"),
}  # fmt: skip
CATEGORY = {"crates": "code", "npm": "code", "dblp": "science", "pubmed": "science",
            "openalex": "science"}  # fmt: skip
PATHS = {**{e: p for e, (p, _) in NEW.items()}, "npm": "/-/v1/search", "dblp": "/search/publ/api"}
SEARCH_PATH = {"pubmed": "/entrez/eutils/esearch.fcgi"}


def _alone(base_url: str, engine: str) -> Any:
    """A configuration in which `engine` is the one engine a search asks."""
    table: dict[str, Any] = {"endpoint": f"{base_url}{PATHS[engine]}", "enabled": True}
    if engine in KEYED:
        table["api_key"] = {"env": KEY_ENV}
    return config_from(
        {
            "egress": {"allow": ["127.0.0.1/32"]},
            "operator": {"contact": "ops@example.org"},
            "scraping": {"enabled": True},
            "search": {"preference": [engine], "max_engines": 1},
            "engines": {engine: table},
        }
    )


@pytest.mark.req("REQ-TEST-002", "REQ-AGG-004")
@pytest.mark.parametrize("engine", sorted(EMPTY))
async def test_each_new_engine_empty_and_throttled_through_a_session(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-TEST-002: the provider's empty answer is `empty`; its 429 is a rate_limited notice."""
    monkeypatch.setenv(KEY_ENV, KEY)
    path = SEARCH_PATH.get(engine, PATHS[engine])
    throttled = Route(status=429, headers={"retry-after": "5", "content-type": "text/plain"})
    async with ProviderServer({path: [Route.fixture(*EMPTY[engine]), throttled]}) as server:
        services = Services(_alone(server.base_url, engine))
        category = CATEGORY.get(engine, "general")
        empty = await _search(services, "zzqxjvw", category)
        limited = await _search(services, "zzqxjvw again", category)
        await services.aclose()
    assert empty["outcome"] == "empty", empty
    assert limited["outcome"] == "error"
    assert any(engine in n["message"] and "rate_limited" in n["message"]
               for n in limited["notices"]), limited["notices"]  # fmt: skip


def _serve_until_end_of_input(config: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """`rypsok serve` with an empty stdin: it starts (or refuses) and ends at end of input."""
    return subprocess.run(
        [sys.executable, "-m", "rypsok", "serve", "--config", str(config)],
        capture_output=True, text=True, env=child_env(), timeout=60, check=False, input="",
    )  # fmt: skip


@pytest.mark.req("REQ-ENG-013")
def test_serve_refuses_a_scraping_engine_without_the_switch(tmp_path: pathlib.Path) -> None:
    """REQ-ENG-013: `serve` stops with exit 1 naming the engine, before serving anything."""
    config = write_config(tmp_path, "schema_version = 1\n[engines.bing]\nenabled = true\n")
    run = _serve_until_end_of_input(config)
    assert run.returncode == 1
    assert "'bing'" in run.stderr and "human-facing page" in run.stderr
    assert run.stdout == ""


# Each new engine's provider trap, as the provider sends it: (fixture, status,
# the class the notice names). Errors under 200, challenges, drift.
TRAPS: dict[str, tuple[str, str, int, str]] = {
    "crates": ("crates", "throttled_200.json", 200, "rate_limited"),
    "npm": ("npm", "bad_request.json", 200, "request_failure"),
    "dblp": ("dblp", "drifted_no_hit.json", 200, "parse_failure"),
    "pubmed": ("pubmed", "rate_limited.json", 200, "rate_limited"),
    "openalex": ("openalex", "rate_limit.json", 403, "rate_limited"),
    "kagi": ("kagi", "throttled_200.json", 200, "rate_limited"),
    "tavily": ("tavily", "keyless_limit.json", 200, "rate_limited"),
    "exa": ("exa", "error.json", 200, "auth_failure"),
    "you": ("you", "error.json", 200, "auth_failure"),
    "marginalia": ("marginalia", "rate_limited.txt", 503, "rate_limited"),
    "duckduckgo": ("duckduckgo", "challenge.html", 202, "blocked"),
    "bing": ("bing", "challenge.html", 200, "blocked"),
}


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006", "REQ-ENG-009", "REQ-ENG-014")
@pytest.mark.parametrize("engine", sorted(TRAPS))
async def test_each_new_engine_classifies_its_providers_trap_through_a_session(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-ENG-006, REQ-ENG-009: an error under 200, a 202 challenge, drift: named, never empty."""
    monkeypatch.setenv(KEY_ENV, KEY)
    provider, name, status, expected = TRAPS[engine]
    path = SEARCH_PATH.get(engine, PATHS[engine])
    async with ProviderServer({path: Route.fixture(provider, name, status=status)}) as server:
        services = Services(_alone(server.base_url, engine))
        payload = await _search(services, "zzqxjvw", CATEGORY.get(engine, "general"))
        await services.aclose()
    assert payload["outcome"] == "error", payload
    assert not payload.get("results")
    assert any(engine in n["message"] and expected in n["message"]
               for n in payload["notices"]), payload["notices"]  # fmt: skip


@pytest.mark.req("REQ-CFG-001", "REQ-CFG-005")
@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('[engines.tavily]\nsearch_depth = "deep"\n', "'engines.tavily.search_depth'"),
        ('[engines.pubmed]\ntool = "bad tool"\n', "'engines.pubmed.tool'"),
        ('[engines.pubmed]\nemail = "nope"\n', "'engines.pubmed.email'"),
        ("[engines.exa]\nsearch_type = 3\n", "'engines.exa.search_type'"),
        ('[engines.duckduckgo]\nvariant = "full"\n', "'engines.duckduckgo.variant'"),
        ('[engines.kagi]\nversion = "v0"\n', "'engines.kagi.version'"),  # no `extra` dict
    ],
)
def test_check_refuses_a_wrong_engine_setting_naming_its_key(
    tmp_path: pathlib.Path, table: str, named: str
) -> None:
    """REQ-CFG-001, REQ-CFG-005: typed per-engine settings; a bad or unknown key is named."""
    refused = _check(tmp_path, table)
    assert refused.returncode == 1
    assert named in refused.stderr


@pytest.mark.req("REQ-OPS-003", "REQ-CFG-004")
def test_serve_logs_each_keyed_engine_inactive_without_its_key(tmp_path: pathlib.Path) -> None:
    """REQ-OPS-003: the start-up log names every new engine's state before serving."""
    config = write_config(tmp_path, "schema_version = 1\n")
    run = _serve_until_end_of_input(config)
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.strip()]
    states = {line["engine"]: line["state"] for line in lines if line.get("event") == "engine"}
    assert all(states[engine] == "inactive_no_key" for engine in KEYED), states
    assert states["npm"] == states["dblp"] == "active"
    assert states["crates"] == "inactive_no_contact" and states["pubmed"] == "disabled"
    assert all(states[engine] == "disabled" for engine in SCRAPING)


@pytest.mark.req("REQ-ENG-015", "REQ-TEST-018")
@pytest.mark.parametrize("engine", SCRAPING)
async def test_a_scraped_page_past_its_byte_bound_is_never_read(engine: str) -> None:
    """REQ-ENG-015: a page larger than the admission's `max_body_bytes` gives no result."""
    bound = next(cls for cls in DRIVER_CLASSES if cls.id == engine).admission.max_body_bytes
    padding = b"<!--" + b"x" * bound + b"--></body>"
    page = load_fixture(engine, "ok.html").replace(b"</body>", padding)
    route = Route(status=200, headers={"content-type": "text/html; charset=utf-8"}, body=page)
    async with ProviderServer({PATHS[engine]: route}) as server:
        services = Services(_alone(server.base_url, engine))
        payload = await _search(services, "rust async runtime", "general")
        await services.aclose()
    assert payload["outcome"] == "error", payload
    assert not payload.get("results")
    assert any(engine in n["message"] for n in payload["notices"]), payload["notices"]
