"""MCP over Streamable HTTP on loopback: revisions, keys, listener protections, bounds."""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import re
import signal
import subprocess
import time
import tomllib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from rypsok.core import limits
from rypsok.core.config import Config, ConfigError, HttpConfig, Secret
from rypsok.mcp.http.auth import KeyVerifier
from rypsok.mcp.http.plan import certificate_statement, check_http, is_loopback, plan_http
from rypsok.mcp.http.serve import open_listener
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    RawMcp,
    RunningHttp,
    bearer,
    engine_sections,
    free_listener,
    http_config,
    make_test_ca,
    running_http,
)
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    SERVE,
    child_env,
    config_from,
    engines_toml,
    wait_until,
    write_config,
)

TOOLS = ["web_search", "web_fetch", "engine_status"]


@pytest.fixture
async def rypsok_http(tmp_path: pathlib.Path) -> AsyncIterator[RunningHttp]:
    listener = free_listener()
    config = http_config(tmp_path, listener.getsockname()[1])
    async with running_http(config, listener) as running:
        yield running


@pytest.mark.req("REQ-MCP-003", "REQ-MCP-006", "REQ-DEP-002")
@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
async def test_every_handshake_revision_opens_a_session_and_answers(
    rypsok_http: RunningHttp, version: str
) -> None:
    """REQ-MCP-003, REQ-MCP-006: each handshake revision gets a session over Streamable HTTP."""
    async with httpx2.AsyncClient() as http:
        raw = RawMcp(http, rypsok_http.url, KEY_A)
        opened = await raw.initialize(version)
        assert opened.status_code == 200
        assert opened.headers["content-type"].startswith("text/event-stream")
        assert raw.session
        listed = await raw.request(1, "tools/list", {})
        assert [t["name"] for t in listed["result"]["tools"]] == TOOLS
        called = await raw.request(2, "tools/call", {"name": "engine_status", "arguments": {}})
        assert called["result"]["structuredContent"]["outcome"] == "ok"
        assert (await raw.delete()).status_code == 200


@pytest.mark.req("REQ-MCP-003", "REQ-MCP-006", "REQ-DEP-002")
async def test_sdk_clients_reach_both_eras(rypsok_http: RunningHttp) -> None:
    """REQ-MCP-003, REQ-MCP-006: the SDK's handshake session and handshake-free client both work."""
    async with (
        httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
        streamable_http_client(rypsok_http.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.protocol_version == HANDSHAKE_PROTOCOL_VERSIONS[-1]
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == TOOLS
    async with (
        httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
        Client(streamable_http_client(rypsok_http.url, http_client=http)) as client,
    ):
        assert client.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
        result = await client.call_tool("engine_status", {})
        assert result.structured_content is not None
        assert result.structured_content["outcome"] == "ok"


@pytest.mark.req("REQ-MCP-003")
async def test_the_old_http_sse_transport_is_not_offered(rypsok_http: RunningHttp) -> None:
    """REQ-MCP-003: the HTTP+SSE endpoints of 2024-11-05 do not exist; GET /mcp opens no session."""
    async with httpx2.AsyncClient(headers=bearer(KEY_A)) as http:
        for path in ("/sse", "/messages", "/messages/"):
            assert (await http.get(rypsok_http.base(path))).status_code == 404
            assert (await http.post(rypsok_http.base(path), json={})).status_code == 404
        stream = await http.get(rypsok_http.url, headers={"accept": "text/event-stream"})
        assert stream.status_code == 400
        assert "mcp-session-id" not in stream.headers


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-014", "REQ-DEP-002")
async def test_missing_wrong_and_right_keys(rypsok_http: RunningHttp) -> None:
    """REQ-SEC-018, REQ-TEST-014: no key or a wrong key gets one 401 saying a new key is needed."""
    wrong = KEY_A[:-1] + "X"
    async with httpx2.AsyncClient() as http:
        missing = await RawMcp(http, rypsok_http.url, None).initialize("2025-11-25")
        refused = await RawMcp(http, rypsok_http.url, wrong).initialize("2025-11-25")
        prefix = await RawMcp(http, rypsok_http.url, KEY_A[:-1]).initialize("2025-11-25")
        other_path = await http.get(rypsok_http.base("/"), headers=bearer(wrong))
        right = await RawMcp(http, rypsok_http.url, KEY_A).initialize("2025-11-25")
    assert missing.status_code == 401
    assert "A key is needed" in missing.json()["error"]["message"]
    assert missing.headers["www-authenticate"] == 'Bearer realm="rypsok"'
    for response in (refused, prefix, other_path):
        assert response.status_code == 401
        assert "a new key is needed" in response.json()["error"]["message"]
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
        assert "mcp-session-id" not in response.headers
        everything = response.text + str(response.headers)
        assert wrong not in everything and KEY_A[:-1] not in everything
    assert right.status_code == 200
    assert rypsok_http.app.counters.keys_refused == 4
    # No OAuth metadata is offered: there is no authorization server to point to.
    assert "resource_metadata" not in refused.headers["www-authenticate"]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-014")
async def test_the_sdk_client_with_a_wrong_key_is_refused(rypsok_http: RunningHttp) -> None:
    """REQ-SEC-018, REQ-TEST-014: the SDK's client is refused with a wrong key, in either era."""
    async with httpx2.AsyncClient(headers=bearer(KEY_A[::-1])) as http:
        with pytest.raises(Exception) as legacy:  # the SDK wraps its error in groups
            async with (
                streamable_http_client(rypsok_http.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
        with pytest.raises(Exception) as modern:
            async with Client(streamable_http_client(rypsok_http.url, http_client=http)):
                pass
    # The SDK passes the 401's JSON-RPC error on: the agent reads that a new key is needed.
    assert "a new key is needed" in repr(legacy.value)
    assert "a new key is needed" in repr(modern.value)
    assert rypsok_http.app.counters.keys_refused >= 2


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-014")
async def test_wrong_host_or_origin_is_refused_before_the_key(rypsok_http: RunningHttp) -> None:
    """REQ-SEC-018, REQ-TEST-014: a foreign Host gets 421 and a foreign Origin 403, key or not."""
    port = rypsok_http.port
    async with httpx2.AsyncClient() as http:
        for key in (KEY_A, None):
            raw = RawMcp(http, rypsok_http.url, key)
            raw.headers["host"] = f"evil.example:{port}"
            assert (await raw.initialize("2025-11-25")).status_code == 421
            raw = RawMcp(http, rypsok_http.url, key)
            raw.headers["origin"] = "http://evil.example"
            assert (await raw.initialize("2025-11-25")).status_code == 403
        raw = RawMcp(http, rypsok_http.url, KEY_A)
        raw.headers["origin"] = f"http://localhost:{port}"  # rypsok's own origin
        assert (await raw.initialize("2025-11-25")).status_code == 200
        modern = await http.post(
            rypsok_http.url,
            headers={**bearer(KEY_A), "origin": "http://evil.example"},
            json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},
        )
        assert modern.status_code == 403
    counters = rypsok_http.app.counters
    assert (counters.hosts_refused, counters.origins_refused) == (2, 3)
    assert counters.keys_refused == 0  # refused before the key was looked at


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-014")
async def test_a_non_loopback_bind_checks_its_configured_hosts(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018, REQ-TEST-014: Host and Origin are checked on a wildcard bind too."""
    listener = free_listener()  # the socket is loopback; the plan is that of a public bind
    config = http_config(
        tmp_path,
        listener.getsockname()[1],
        host="0.0.0.0",
        behind_tls_proxy=True,
        allowed_hosts=["search.example.org"],
        allowed_origins=["https://agents.example.org"],
    )
    async with running_http(config, listener) as running, httpx2.AsyncClient() as http:
        assert running.plan.mode == "behind_tls_proxy"
        local = RawMcp(http, running.url, KEY_A)
        assert (await local.initialize("2025-11-25")).status_code == 421
        public = RawMcp(http, running.url, KEY_A)
        public.headers["host"] = "search.example.org"
        public.headers["origin"] = "https://agents.example.org"
        assert (await public.initialize("2025-11-25")).status_code == 200
        foreign = RawMcp(http, running.url, KEY_A)
        foreign.headers["host"] = "search.example.org"
        foreign.headers["origin"] = "https://search.example.org"
        assert (await foreign.initialize("2025-11-25")).status_code == 403


def outcome_of(result: CallToolResult) -> str:
    assert result.structured_content is not None
    outcome: str = result.structured_content["outcome"]
    return outcome


@pytest.mark.req("REQ-SEC-019", "REQ-TEST-014", "REQ-MCP-010")
async def test_per_caller_limits_with_two_keys(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-019, REQ-TEST-014: LIM-C8 counts per key's caller, across both eras."""
    listener = free_listener()
    base = {"limits": {"engine_status_per_minute": 2}}
    config = http_config(tmp_path, listener.getsockname()[1], base)
    async with running_http(config, listener) as running:
        outcomes: dict[str, list[str]] = {"a": [], "b": []}
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
            streamable_http_client(running.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(2):
                result = await session.call_tool("engine_status", {})
                outcomes["a"].append(outcome_of(result))
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A)) as http_a,
            httpx2.AsyncClient(headers=bearer(KEY_B)) as http_b,
            Client(streamable_http_client(running.url, http_client=http_a)) as client_a,
            Client(streamable_http_client(running.url, http_client=http_b)) as client_b,
        ):
            third = await client_a.call_tool("engine_status", {})
            for _ in range(2):
                result = await client_b.call_tool("engine_status", {})
                outcomes["b"].append(outcome_of(result))
            fourth_b = await client_b.call_tool("engine_status", {})
    assert outcomes == {"a": ["ok", "ok"], "b": ["ok", "ok"]}
    for refused in (third, fourth_b):
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["error"]["detail"]["reason"] == "rate_limit"


@pytest.mark.req("REQ-SEC-024")
async def test_the_session_bound_answers_503_with_retry_after(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-SEC-024: past LIM-H6 a handshake gets 503 + Retry-After, no session; logged, counted."""
    caplog.set_level(logging.INFO, logger="rypsok")
    listener = free_listener()
    config = http_config(tmp_path, listener.getsockname()[1], sessions=2)
    async with running_http(config, listener) as running, httpx2.AsyncClient() as http:
        # The third is another caller's, so the per-caller share (LIM-H10) is not what refuses.
        first, second = (RawMcp(http, running.url, KEY_A) for _ in range(2))
        third = RawMcp(http, running.url, KEY_B)
        assert (await first.initialize("2025-11-25")).status_code == 200
        assert (await second.initialize("2025-06-18")).status_code == 200
        refused = await third.initialize("2025-11-25")
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) > 0
        assert "mcp-session-id" not in refused.headers
        assert running.app.counters.sessions_refused == 1
        # The handshake-free revision holds no session and is unaffected.
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_B)) as modern_http,
            Client(streamable_http_client(running.url, http_client=modern_http)) as client,
        ):
            assert (await client.call_tool("engine_status", {})).is_error is False
        # The sessions still open keep working; ending one makes room.
        assert "result" in await first.request(1, "tools/list", {})
        assert (await second.delete()).status_code == 200
        assert (await third.initialize("2025-11-25")).status_code == 200
    refusals = [r for r in caplog.records if r.getMessage() == "session_refused"]
    assert len(refusals) == 1 and refusals[0].levelno == logging.WARNING


SHORT_BOUNDS = {
    "search": {"deadline_ms": 1500, "engine_timeout_ms": 1000, "reserve_ms": 500,
               "connect_timeout_ms": 1000, "ceiling_ms": 2000},
    "fetch": {"ceiling_ms": 2000, "timeout_ms": 2000, "connect_timeout_ms": 1000},
}  # fmt: skip


async def raw_exchange(port: int, data: bytes) -> tuple[bytes, float]:
    """Send bytes and stop; what comes back until the server closes, and when it closed."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    return answer, time.monotonic() - started


@pytest.mark.req("REQ-SEC-022")
async def test_every_request_state_ends_at_the_time_bound(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-022: a slow head and a slow body end after LIM-H5 with 408.

    (An open GET event stream has its own lifetime, LIM-H7: see
    test_an_idle_event_stream_ends_quietly_at_its_lifetime.)
    """
    listener = free_listener()
    port = listener.getsockname()[1]
    config = http_config(tmp_path, port, SHORT_BOUNDS, request_ms=2000)
    head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
    body = head + f"authorization: Bearer {KEY_A}\r\ncontent-type: application/json\r\n"
    body += 'content-length: 100\r\n\r\n{"jsonrpc":'
    results: dict[str, tuple[bytes, float]] = {}

    async def exchange(name: str, data: str) -> None:
        results[name] = await raw_exchange(port, data.encode())

    async with running_http(config, listener) as running, anyio.create_task_group() as group:
        group.start_soon(exchange, "head", head)
        group.start_soon(exchange, "body", body)
    for name, (_, elapsed) in results.items():
        assert 1.9 < elapsed < 3.5, (name, elapsed)
    assert results["head"][0].startswith(b"HTTP/1.1 408 ")
    assert results["body"][0].startswith(b"HTTP/1.1 408 ")
    assert b"was ended; send it again" in results["body"][0]
    assert running.app.counters.requests_timed_out == 2


SEARCH_ARGS: dict[str, Any] = {"query": "rust", "category": "code"}
CODE_SEARCH = {"name": "web_search", "arguments": SEARCH_ARGS}


@pytest.fixture
async def hanging_engine(
    tmp_path: pathlib.Path,
) -> AsyncIterator[tuple[ProviderServer, RunningHttp]]:
    """rypsok over HTTP whose hackernews engine never answers (a slow call to cancel)."""
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    table[ENGINE_PATHS["hackernews"]] = Route(hang=True)
    async with ProviderServer(table) as provider:
        listener = free_listener()
        config = http_config(
            tmp_path, listener.getsockname()[1], engine_sections(provider.base_url)
        )
        async with running_http(config, listener) as running:
            yield provider, running


async def engine_reached(provider: ProviderServer) -> None:
    await wait_until(lambda: provider.requests_to(ENGINE_PATHS["hackernews"]), 5)
    await anyio.sleep(0.1)


@pytest.mark.req("REQ-MCP-007", "REQ-TEST-009")
@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
async def test_closing_the_stream_cancels_a_handshake_revision_call(
    hanging_engine: tuple[ProviderServer, RunningHttp], version: str
) -> None:
    """REQ-MCP-007: on a handshake revision a closed response stream aborts the call in LIM-O2."""
    provider, running = hanging_engine
    async with httpx2.AsyncClient(timeout=10) as http:
        raw = RawMcp(http, running.url, KEY_A)
        await raw.initialize(version)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": CODE_SEARCH}
        async with http.stream("POST", running.url, headers=raw.current_headers(), json=call):
            await engine_reached(provider)
            closed_at = time.monotonic()
        await wait_until(lambda: provider.hangups, 2)
        assert provider.hangups[0] - closed_at < limits.CANCEL_MS / 1000
        assert "result" in await raw.request(8, "tools/list", {})


@pytest.mark.req("REQ-MCP-007", "REQ-TEST-009")
async def test_the_sdk_session_cancels_with_notifications_cancelled(
    hanging_engine: tuple[ProviderServer, RunningHttp],
) -> None:
    """REQ-MCP-007: the SDK's handshake-era client cancels a slow call; aborted in LIM-O2."""
    provider, running = hanging_engine
    async with (
        httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
        streamable_http_client(running.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "web_search", SEARCH_ARGS)
            await engine_reached(provider)
            cancelled_at = time.monotonic()
            group.cancel_scope.cancel()
        await wait_until(lambda: provider.hangups, 2)
        assert provider.hangups[0] - cancelled_at < limits.CANCEL_MS / 1000
        assert (await session.list_tools()).tools


@pytest.mark.req("REQ-MCP-007", "REQ-TEST-009")
async def test_the_handshake_free_client_cancels_by_closing_the_stream(
    hanging_engine: tuple[ProviderServer, RunningHttp],
) -> None:
    """REQ-MCP-007: on 2026-07-28 closing the response stream aborts the call in LIM-O2."""
    provider, running = hanging_engine
    async with (
        httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
        Client(streamable_http_client(running.url, http_client=http)) as client,
    ):
        assert client.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "web_search", SEARCH_ARGS)
            await engine_reached(provider)
            cancelled_at = time.monotonic()
            group.cancel_scope.cancel()
        await wait_until(lambda: provider.hangups, 2)
        assert provider.hangups[0] - cancelled_at < limits.CANCEL_MS / 1000
        assert (await client.call_tool("engine_status", {})).is_error is False


@pytest.mark.req("REQ-SEC-018", "REQ-SEC-022", "REQ-DEP-002")
async def test_tls_from_files_by_reference_and_no_http2(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018, REQ-SEC-022: TLS from referenced files; clients verify; h2 never negotiated."""
    ca = make_test_ca(tmp_path)
    listener = free_listener()
    port = listener.getsockname()[1]
    config = http_config(
        tmp_path,
        port,
        tls_cert={"file": str(ca.cert_file)},
        tls_key={"file": str(ca.key_file)},
    )
    async with running_http(config, listener, scheme="https") as running:
        assert running.plan.mode == "tls" and running.url.startswith("https://")
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A), verify=ca.client_context()) as http,
            Client(streamable_http_client(running.url, http_client=http)) as client,
        ):
            assert (await client.call_tool("engine_status", {})).is_error is False
        async with httpx2.AsyncClient() as untrusting:  # the system's trust store
            with pytest.raises(httpx2.ConnectError):
                await untrusting.post(running.url)
        # LIM-H4: HTTP/2 is not served, neither by ALPN nor by prior knowledge.
        context = ca.client_context()
        context.set_alpn_protocols(["h2", "http/1.1"])
        _, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="localhost"
        )
        alpn = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        writer.close()
        assert alpn in (None, "http/1.1")
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=ca.client_context(), server_hostname="localhost"
        )
        writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        answer = await reader.read()
        writer.close()
        assert not answer.startswith(b"\x00") and (answer == b"" or answer.startswith(b"HTTP/1.1"))


def keyed(**http: object) -> Config:
    """An [http] section with one key in an environment variable set by the caller."""
    keys = [{"caller": "agent", "key": {"env": "RYPSOK_TEST_HTTP_KEY"}}]
    return config_from({"http": {"keys": keys, **http}})


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-014")
def test_the_loopback_default_and_its_hosts() -> None:
    """REQ-SEC-018, REQ-TEST-014: loopback bind by default; Host and Origin default to its names."""
    assert HttpConfig().host == "127.0.0.1" and is_loopback(HttpConfig().host)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RYPSOK_TEST_HTTP_KEY", KEY_A)
        plan = plan_http(keyed())
    assert plan.mode == "loopback_plain" and plan.url == "http://127.0.0.1:8750/mcp"
    assert set(plan.allowed_hosts) == {"127.0.0.1:8750", "localhost:8750", "[::1]:8750"}
    assert "http://localhost:8750" in plan.allowed_origins
    assert all(o.startswith("http://") for o in plan.allowed_origins)
    assert KEY_A not in repr(plan)


@pytest.mark.req("REQ-SEC-018")
@pytest.mark.parametrize(
    ("http", "expected"),
    [
        ({}, "http.keys[0].key (caller 'agent'): the referenced secret is unset"),
        ({"host": "0.0.0.0"}, "http.host = '0.0.0.0' is not a loopback address"),
        ({"host": "192.0.2.7"}, "http.tls_cert and http.tls_key"),
        ({"host": "0.0.0.0", "behind_tls_proxy": True}, "http.allowed_hosts"),
        ({"tls_cert": {"file": "/nonexistent/cert.pem"}}, "http.tls_key is not"),
        ({"tls_cert": {"env": "X"}, "tls_key": {"env": "Y"}}, '{ file = "path" }'),
        ({"path": "mcp"}, "http.path"),
        ({"allowed_origins": ["*"]}, "http.allowed_origins"),
    ],
)
def test_start_up_refusals_name_the_key(
    http: dict[str, object], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-SEC-018: a listener that is not safe to serve is refused, naming the keys."""
    if http:
        monkeypatch.setenv("RYPSOK_TEST_HTTP_KEY", KEY_A)
    problems = check_http(keyed(**http))
    assert any(expected in p for p in problems), problems
    with pytest.raises(ConfigError):
        plan_http(keyed(**http))


@pytest.mark.req("REQ-SEC-018")
def test_keys_are_checked_without_ever_being_shown(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-SEC-018: no keys, short keys, reused keys and callers are refused; no key is named."""
    assert "at least one [[http.keys]]" in check_http(config_from({"http": {}}))[0]
    monkeypatch.setenv("SHORT", "tiny-key")
    monkeypatch.setenv("SAME", KEY_B)
    entries = [
        {"caller": "a", "key": {"env": "SHORT"}},
        {"caller": "b", "key": {"env": "SAME"}},
        {"caller": "c", "key": {"env": "SAME"}},
        {"caller": "c", "key": {"file": str(tmp_path / "absent")}},
        {"caller": "bad name", "key": {"env": "SAME"}},
    ]
    problems = check_http(config_from({"http": {"keys": entries}}))
    text = "; ".join(problems)
    for expected in ("http.keys[0].key (caller 'a'): a key must be", "http.keys[2].key (caller "
                     "'c'): the same key", "http.keys[3].caller", "http.keys[3].key",
                     "http.keys[4].caller"):  # fmt: skip
        assert expected in text
    assert "tiny-key" not in text and KEY_B not in text


@pytest.mark.req("REQ-SEC-018")
async def test_the_verifier_compares_every_key_and_keeps_none() -> None:
    """REQ-SEC-018: the TokenVerifier names the caller of an exact key only, holding digests."""
    verifier = KeyVerifier([("a", Secret(KEY_A)), ("b", Secret(KEY_B))])
    found = [await verifier.verify_token(k) for k in (KEY_A, KEY_B)]
    assert [t.client_id for t in found if t is not None] == ["a", "b"]
    assert all(t is not None and KEY_A not in t.token and KEY_B not in t.token for t in found)
    for near in (KEY_A[:-1], KEY_A + "x", KEY_A.upper(), "", " " + KEY_A):
        assert await verifier.verify_token(near) is None
    assert KEY_A not in repr(vars(verifier))


@pytest.mark.req("REQ-SEC-018")
@pytest.mark.parametrize("mode", ["tls", "behind_tls_proxy", "loopback_plain"])
def test_the_certificate_statement_says_who_verifies(mode: str) -> None:
    """REQ-SEC-018: each mode's start-up words say who can check the certificate."""
    words = certificate_statement(mode)  # type: ignore[arg-type]
    assert "certificate" in words
    if mode != "loopback_plain":
        assert "trust store" in words and "publicly trusted" in words


@pytest.mark.req("REQ-MCP-006")
async def test_the_operator_can_disable_the_handshake_revisions(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-006: with handshake_revisions = false only the handshake-free revision answers."""
    listener = free_listener()
    config = http_config(tmp_path, listener.getsockname()[1], handshake_revisions=False)
    async with running_http(config, listener) as running, httpx2.AsyncClient() as http:
        refused = await RawMcp(http, running.url, KEY_A).initialize("2025-11-25")
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["data"]["supported"] == list(MODERN_PROTOCOL_VERSIONS)
        http.headers.update(bearer(KEY_A))
        async with Client(streamable_http_client(running.url, http_client=http)) as client:
            assert (await client.call_tool("engine_status", {})).is_error is False


# Synthetic keys for the end-to-end test; neither may appear in any output.
CANARY = "rk_canary_Q7w8E9r0T1y2U3i4O5p6"
WRONG = "rk_wrong_M1n2B3v4C5x6Z7l8K9j0"


def run_rypsok(*args: str, config: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE[:-1], *args, "--config", str(config)],
        capture_output=True, text=True, timeout=30, check=False,
        env=child_env(RYPSOK_TEST_HTTP_KEY=CANARY),
    )  # fmt: skip


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002", "REQ-OPS-001")
def test_serve_and_check_refuse_an_unsafe_listener(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018, REQ-DEP-002: no keys, or a public bind without TLS, stops start-up (exit 1)."""
    key = '[[http.keys]]\ncaller = "agent"\nkey = { env = "RYPSOK_TEST_HTTP_KEY" }\n'
    cases = {
        "schema_version = 1\n[http]\nport = 1\n": "http.keys",
        f'schema_version = 1\n[http]\nhost = "0.0.0.0"\n{key}': "http.host = '0.0.0.0'",
    }
    for text, expected in cases.items():
        config = write_config(tmp_path, text)
        for command in (("serve", "--transport", "http"), ("check",)):
            run = run_rypsok(*command, config=config)
            assert run.returncode == 1, (command, run.stderr)
            assert expected in run.stderr and run.stdout == ""
            assert CANARY not in run.stderr
    config = write_config(tmp_path, f"schema_version = 1\n{key}")
    good = run_rypsok("check", config=config)
    assert good.returncode == 0 and "http: http://127.0.0.1:8750/mcp" in good.stdout


def free_port() -> int:
    with free_listener() as probe:
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.req(
    "REQ-SEC-018", "REQ-DEP-002", "REQ-MCP-003", "REQ-OPS-002", "REQ-TEST-014", "REQ-OBS-008"
)
async def test_network_mode_end_to_end_never_logs_a_key(tmp_path: pathlib.Path) -> None:
    """REQ-DEP-002, REQ-SEC-018: `rypsok serve --transport http` serves; no key in any output."""
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    table[ENGINE_PATHS["hackernews"]] = Route(hang=True)
    port = free_port()
    (tmp_path / "second.key").write_text(KEY_B, encoding="utf-8")
    async with ProviderServer(table) as provider:
        config = write_config(
            tmp_path,
            engines_toml(provider.base_url)
            + f"[http]\nport = {port}\n"
            + '[[http.keys]]\ncaller = "canary"\nkey = { env = "RYPSOK_TEST_HTTP_KEY" }\n'
            + f'[[http.keys]]\ncaller = "second"\nkey = {{ file = "{tmp_path / "second.key"}" }}\n',
        )
        process = await anyio.open_process(
            [*SERVE, "--transport", "http"], env=child_env(config, RYPSOK_TEST_HTTP_KEY=CANARY)
        )
        stderr = BufferedByteReceiveStream(process.stderr)  # type: ignore[arg-type]
        lines: list[bytes] = []
        try:
            with anyio.fail_after(30):  # start-up on a loaded machine; not what is tested
                while not any(b'"event":"serving"' in line for line in lines):
                    lines.append(await stderr.receive_until(b"\n", 1 << 20) + b"\n")
            url = f"http://127.0.0.1:{port}/mcp"
            async with httpx2.AsyncClient(timeout=10) as http:
                for key in (WRONG, None, CANARY[:-1]):
                    assert (
                        await RawMcp(http, url, key).initialize("2025-11-25")
                    ).status_code == 401
                evil = RawMcp(http, url, CANARY)
                evil.headers["host"] = "evil.example"
                assert (await evil.initialize("2025-11-25")).status_code == 421
                leaky = await http.post(f"{url}?key={CANARY}", headers=bearer(CANARY), json={})
                assert leaky.status_code == 400
                raw = RawMcp(http, url, CANARY)
                assert (await raw.initialize("2025-06-18")).status_code == 200
                call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": CODE_SEARCH}
                async with http.stream("POST", url, headers=raw.current_headers(), json=call):
                    await engine_reached(provider)
                    process.send_signal(signal.SIGTERM)
                    with anyio.fail_after(5 * limits.SHUTDOWN_MS / 1000):  # no hang
                        await process.wait()
            assert process.returncode == 0
            assert provider.hangups, "the call in flight was not aborted"
            with anyio.move_on_after(2):
                lines += (await stderr.receive()).splitlines(keepends=True)
                while True:
                    lines.append(await stderr.receive())
        except anyio.EndOfStream:
            pass
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
    text = b"".join(lines).decode()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    serving = next(r for r in records if r["event"] == "serving")
    assert serving["mode"] == "loopback_plain" and "certificate" in serving["certificate"]
    assert serving["url"] == url
    shutdown = next(r for r in records if r["event"] == "shutdown")
    assert shutdown["reason"] == "sigterm"
    # REQ-OBS-008: the counters leave the HTTP process too, as its last line.
    assert records[-1]["event"] == "metrics" and records[-1]["reason"] == "shutdown"
    # REQ-OPS-002: LIM-O1 from the signal's handling to the last line, by rypsok's own
    # clock: a loaded machine's delay in delivering the signal and in reaping the
    # process is not rypsok's (the wait above only rules out a hang).
    assert records[-1]["ts"] - shutdown["ts"] < limits.SHUTDOWN_MS / 1000
    assert set(records[-1]["calls"]) <= {"web_search"}
    statuses = [r["status"] for r in records if r["event"] == "http_request"]
    assert statuses.count(401) == 3 and 421 in statuses
    for secret in (CANARY, WRONG, KEY_B, CANARY[len("rk_canary_") :], WRONG[len("rk_wrong_") :]):
        assert secret not in text


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
def test_unusable_tls_material_or_address_is_a_configuration_error(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: unreadable TLS material or a taken address stops start-up, naming the keys."""
    (tmp_path / "cert.pem").write_text("not a certificate", encoding="utf-8")
    (tmp_path / "key.pem").write_text("not a key", encoding="utf-8")
    config = http_config(
        tmp_path,
        8750,
        tls_cert={"file": str(tmp_path / "cert.pem")},
        tls_key={"file": str(tmp_path / "key.pem")},
    )
    # The plan reads the chain already (the certificate is judged before serving).
    with pytest.raises(ConfigError, match=r"http\.tls_cert, http\.tls_key: .* no PEM"):
        plan_http(config)
    with free_listener() as taken, pytest.raises(ConfigError, match=r"http\.host, http\.port"):
        open_listener("127.0.0.1", taken.getsockname()[1])


@pytest.mark.req("REQ-SEC-019", "REQ-TEST-014")
async def test_a_session_answers_only_the_key_that_opened_it(rypsok_http: RunningHttp) -> None:
    """REQ-SEC-019: a session opened with one caller's key is not found with another key."""
    async with httpx2.AsyncClient() as http:
        owner = RawMcp(http, rypsok_http.url, KEY_A)
        assert (await owner.initialize("2025-11-25")).status_code == 200
        intruder = RawMcp(http, rypsok_http.url, KEY_B)
        intruder.session, intruder.version = owner.session, owner.version
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        assert (await intruder.post(listing)).status_code == 404
        assert "result" in await owner.request(2, "tools/list", {})


ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.req("REQ-DEP-002")
def test_the_documented_network_mode_configurations_are_valid() -> None:
    """REQ-DEP-002: the README shows the start command; every documented [http] example parses."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "rypsok serve --transport http" in readme
    guide = (ROOT / "docs" / "http-mode.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme + guide, flags=re.DOTALL)
    examples = [tomllib.loads(block) for block in blocks if "[http]" in block]
    assert len(examples) >= 4
    for example in examples:
        example.pop("schema_version", None)
        config = config_from(example)
        assert config.http != HttpConfig()
