"""The credential check as a user of the tools sees it, through a real MCP session.

Credential-shaped values are built at run time from a fixed seed, as in
tests/core/test_privacy.py, so no literal a secret scanner would flag is stored.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    call_tool,
    config_from,
    engines_config,
    fetch_config,
)

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
PAGE = Route(
    body=b"<html><body><main><p>Chord charts for beginners, in every key.</p></main></body></html>",
    headers={"content-type": "text/html; charset=utf-8"},
)


def synthetic(alphabet: str, length: int, seed: str) -> str:
    stream = hashlib.shake_256(seed.encode()).digest(length)
    return "".join(alphabet[byte % len(alphabet)] for byte in stream)


TWILIO_PAIR = "AC" + synthetic(HEX, 32, "session sid") + ":" + synthetic(HEX, 32, "session auth")
NOTION = "ntn_" + synthetic(string.digits, 11, "session n") + synthetic(ALNUM, 35, "session")
GENERATED_TOKEN = synthetic(ALNUM, 31, "session token") + "7"
B64URL = ALNUM + "_-"
# Written from each provider's documented format (prefix, alphabet, length).
LINEAR_OAUTH = "lin_oauth_" + synthetic(HEX, 63, "session linear") + "1"
ATLASSIAN_ADMIN = "ATCTT3xFfGN0" + synthetic(B64URL, 170, "session atl") + "=A1B2C3D4"
BITBUCKET_APP_PASSWORD = "ATBB" + synthetic(ALNUM, 30, "session atbb") + "a9"
NEW_RELIC_EU_LICENSE = "eu01xx" + synthetic(HEX, 29, "session nr") + "7NRAL"
PUTTY_AS_JSON_STRING = (
    "PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\nPrivate-Lines: 1\\nAAAAI"
    + synthetic(ALNUM, 38, "session putty")
    + "7=\\nPrivate-MAC: "
    + synthetic(HEX, 64, "session mac")
)
SESSION_ID = synthetic(ALNUM, 30, "session jsession") + "Q4"


@pytest.fixture
async def providers() -> AsyncIterator[ProviderServer]:
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    async with ProviderServer(routes) as server:
        yield server


def credential_notices(payload: dict[str, Any]) -> list[str]:
    return [n["code"] for n in payload["notices"] if n["code"].startswith("credential")]


@pytest.mark.req("REQ-PRIV-002", "REQ-SEARCH-006")
@pytest.mark.parametrize(
    ("query", "kind", "position"),
    [
        (f"curl -u {TWILIO_PAIR} fails", "twilio_credential", len("curl -u ")),
        (f"notion api 401 with {NOTION}", "notion_token", len("notion api 401 with ")),
        (f"why is ?token={GENERATED_TOKEN} rejected", "secret_parameter", len("why is ?token=")),
        (f"linear 401 {LINEAR_OAUTH}", "linear_api_key", len("linear 401 ")),
        (f"jira admin {ATLASSIAN_ADMIN}", "atlassian_api_token", len("jira admin ")),
        (f"git clone {BITBUCKET_APP_PASSWORD}", "atlassian_api_token", len("git clone ")),
        (f"newrelic {NEW_RELIC_EU_LICENSE} eu", "new_relic_key", len("newrelic ")),
        (
            f'ppk "{PUTTY_AS_JSON_STRING}"',
            "private_key",
            len('ppk "PuTTY-User-Key-File-3: ssh-ed25519') + len("\\nEncryption: none\\n"),
        ),
        (f"why /a;jsessionid={SESSION_ID} fails", "secret_parameter", len("why /a;jsessionid=")),
    ],
    ids=[
        "twilio_pair",
        "notion_token",
        "token_parameter",
        "linear_oauth_token",
        "atlassian_admin_key",
        "bitbucket_app_password",
        "new_relic_eu_license",
        "putty_key_as_json_string",
        "session_id_parameter",
    ],
)
async def test_deny_mode_refuses_a_search_with_a_new_format(
    query: str, kind: str, position: int
) -> None:
    """REQ-PRIV-002, REQ-SEARCH-006: web_search is denied naming the kind and position only."""
    services = Services(config_from({}))
    payload, text = await call_tool(services, "web_search", {"query": query})
    await services.aclose()
    error = payload["error"]
    assert (error["kind"], error["detail"]["reason"]) == ("denied", "credential")
    assert error["detail"]["credential_kind"] == kind
    assert error["detail"]["position"] == position
    secret = query[position:].split(" ", maxsplit=1)[0]
    assert secret not in text


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-008")
@pytest.mark.parametrize(("mode", "codes"), [("warn", ["credential_warning"]), ("deny", [])])
async def test_ordinary_queries_about_these_products_are_searched(
    providers: ProviderServer, mode: str, codes: list[str]
) -> None:
    """REQ-PRIV-002, REQ-TEST-008: a product named in prose is no credential; warn warns."""
    config = engines_config(providers.base_url, privacy={"credential_check": mode})
    services = Services(config)
    ordinary, _ = await call_tool(
        services,
        "web_search",
        {"query": "-----BEGIN OPENSSH PRIVATE KEY----- what does this header mean ?key=chord"},
    )
    flagged, flagged_text = await call_tool(
        services, "web_search", {"query": f"rotate twilio auth token {TWILIO_PAIR}"}
    )
    await services.aclose()
    assert ordinary["outcome"] == "ok"
    assert credential_notices(ordinary) == []
    if mode == "warn":
        assert flagged["outcome"] == "ok"
        assert credential_notices(flagged) == codes
    else:
        assert flagged["error"]["detail"]["reason"] == "credential"
    assert TWILIO_PAIR not in flagged_text


@pytest.mark.req("REQ-PRIV-002", "REQ-LIFE-001")
async def test_deny_mode_refuses_a_fetch_with_a_generated_token_parameter() -> None:
    """REQ-PRIV-002, REQ-LIFE-001: `?token=<generated>` is refused before any request goes out;
    `?key=chord` is fetched."""
    async with ProviderServer({"/songs": PAGE}) as server:
        services = Services(fetch_config(server.base_url))
        refused, refused_text = await call_tool(
            services, "web_fetch", {"url": server.url(f"/songs?token={GENERATED_TOKEN}")}
        )
        fetched, _ = await call_tool(services, "web_fetch", {"url": server.url("/songs?key=chord")})
        await services.aclose()
    error = refused["error"]
    assert (error["kind"], error["detail"]["reason"]) == ("denied", "credential")
    assert error["detail"]["credential_kind"] == "secret_parameter"
    assert GENERATED_TOKEN not in refused_text
    sent = json.dumps([(r.path, r.query) for r in server.requests])
    assert GENERATED_TOKEN not in sent
    assert fetched["outcome"] == "ok"
    assert "Chord charts" in fetched["content"]
    assert [r.query for r in server.requests_to("/songs")] == [(("key", "chord"),)]
