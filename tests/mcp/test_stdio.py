"""MCP over real stdio pipes: every revision, stdout purity, shutdown."""

from __future__ import annotations

import json
import pathlib
import signal
import time
from typing import Any

import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import stdio_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.support import RawServer, stdio_params, write_config

TOOLS = ["web_search", "web_fetch", "engine_status"]
ANNOTATIONS = {
    "web_search": (True, False, True, True),
    "web_fetch": (True, False, True, True),
    "engine_status": (True, False, True, False),
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_PROTOCOL_VERSIONS[-1],
    "io.modelcontextprotocol/clientCapabilities": {},
}


def handshake(server: RawServer, version: str) -> dict[str, Any]:
    reply = server.request(
        0,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "rypsok-tests", "version": "0"},
        },
    )
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return reply


def check_tool_list(tools: list[dict[str, Any]]) -> None:
    assert [t["name"] for t in tools] == TOOLS
    for tool in tools:
        hints = tool["annotations"]
        assert (
            hints["readOnlyHint"],
            hints["destructiveHint"],
            hints["idempotentHint"],
            hints["openWorldHint"],
        ) == ANNOTATIONS[tool["name"]]
        assert tool["description"] and tool["outputSchema"]["type"] == "object"


@pytest.mark.req("REQ-MCP-001", "REQ-MCP-002", "REQ-MCP-006", "REQ-MCP-009", "REQ-TEST-009")
@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_every_handshake_revision_lists_tools_and_answers(version: str) -> None:
    """REQ-MCP-006, REQ-MCP-009, REQ-TEST-009: each handshake revision, over real pipes."""
    server = RawServer()
    try:
        init = handshake(server, version)
        assert init["result"]["protocolVersion"] == version
        assert init["result"]["serverInfo"]["name"] == "rypsok"
        listed = server.request(1, "tools/list", {})
        check_tool_list(listed["result"]["tools"])
        call = server.request(
            2, "tools/call", {"name": "web_search", "arguments": {"query": "x", "max_results": 0}}
        )["result"]
        assert call["isError"] is True
        assert call["structuredContent"]["error"]["kind"] == "invalid_request"
        assert json.loads(call["content"][0]["text"]) == call["structuredContent"]
        elapsed, rest, _ = server.close_stdin_and_wait(timeout_s=10)
        assert elapsed < limits.SHUTDOWN_MS / 1000
        server.stdout_lines += rest.splitlines(keepends=True)
    finally:
        server.kill()
    for line in server.stdout_lines:  # REQ-MCP-002: stdout holds MCP messages only
        assert json.loads(line)["jsonrpc"] == "2.0"


@pytest.mark.req("REQ-MCP-006", "REQ-TEST-009")
def test_handshake_free_revision_over_raw_pipes() -> None:
    """REQ-MCP-006: the 2026-07-28 revision works without initialize."""
    server = RawServer()
    try:
        listed = server.request(1, "tools/list", {"_meta": MODERN_META})
        check_tool_list(listed["result"]["tools"])
        call = server.request(
            2,
            "tools/call",
            {"name": "web_search", "arguments": {"query": "x", "category": "images"},
             "_meta": MODERN_META},
        )["result"]  # fmt: skip
        assert call["isError"] is True
        assert "category" in call["structuredContent"]["error"]["message"]
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()


@pytest.mark.req("REQ-MCP-001", "REQ-MCP-006", "REQ-SEARCH-002", "REQ-SEARCH-003")
async def test_sdk_clients_of_both_eras_get_invalid_request_naming_the_parameter() -> None:
    """REQ-MCP-006: the SDK's legacy session (2025-11-25) and modern client (2026-07-28)."""
    async with stdio_client(stdio_params()) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        assert init.protocol_version == HANDSHAKE_PROTOCOL_VERSIONS[-1]
        assert [t.name for t in (await s.list_tools()).tools] == TOOLS
        result = await s.call_tool("web_search", {"query": "x", "max_results": 0})
        assert result.is_error and result.structured_content is not None
        assert result.structured_content["error"]["detail"]["parameter"] == "max_results"
    async with Client(stdio_params()) as client:
        assert client.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
        result = await client.call_tool("web_search", {"query": "x", "category": "images"})
        assert result.is_error and result.structured_content is not None
        assert result.structured_content["error"]["detail"]["parameter"] == "category"


@pytest.mark.req("REQ-ERR-003", "REQ-MCP-004")
def test_unknown_tool_and_malformed_message_are_protocol_errors() -> None:
    """REQ-ERR-003: unknown tool and malformed messages are protocol errors, server lives on."""
    server = RawServer()
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        unknown = server.request(1, "tools/call", {"name": "web_browse", "arguments": {}})
        assert unknown["error"]["code"] == -32602
        assert "web_browse" not in unknown["error"]["message"]
        assert server.process.stdin is not None
        server.process.stdin.write(b"{not json\n")
        server.process.stdin.flush()
        after = server.request(2, "tools/list", {})
        assert [t["name"] for t in after["result"]["tools"]] == TOOLS
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()


@pytest.mark.req("REQ-MCP-002", "REQ-OPS-002", "REQ-TEST-009")
def test_idle_server_exits_quickly_on_end_of_input() -> None:
    """REQ-MCP-002, REQ-OPS-002: stdin EOF ends the process within LIM-O1."""
    server = RawServer()
    handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
    elapsed, rest, err = server.close_stdin_and_wait(timeout_s=10)
    assert server.process.returncode == 0
    assert elapsed < limits.SHUTDOWN_MS / 1000
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines())
    assert b'"event":"shutdown"' in err


@pytest.mark.req("REQ-OPS-002")
def test_sigterm_shuts_down_within_the_limit() -> None:
    """REQ-OPS-002: SIGTERM starts a graceful shutdown that exits within LIM-O1."""
    server = RawServer()
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        server.request(1, "tools/list", {})
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)
        assert time.monotonic() - started < limits.SHUTDOWN_MS / 1000
        assert server.process.returncode == 0
    finally:
        server.kill()


@pytest.mark.req("REQ-MCP-002", "REQ-OBS-005")
def test_startup_logs_are_json_lines_on_stderr_and_stdout_stays_clean() -> None:
    """REQ-MCP-002, REQ-OBS-005: diagnostics are JSON lines on stderr from the first byte."""
    server = RawServer()
    handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
    server.request(1, "tools/call", {"name": "engine_status", "arguments": {}})
    _, _, err = server.close_stdin_and_wait(timeout_s=10)
    assert server.stdout_lines[0].startswith(b'{"jsonrpc"')
    lines = [json.loads(line) for line in err.decode().splitlines() if line.strip()]
    assert lines and all({"ts", "level", "event"} <= set(line) for line in lines)
    assert any(line["event"] == "serving" for line in lines)
    assert any(line["event"] == "call" and line["tool"] == "engine_status" for line in lines)


@pytest.mark.req("REQ-MCP-010", "REQ-TEST-016")
def test_invocation_limit_refuses_with_retry_after(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-010, REQ-TEST-016: beyond LIM-C6 per minute, unavailable with retry_after_ms."""
    config = write_config(tmp_path, "schema_version = 1\n[limits]\nweb_search_per_minute = 2\n")
    server = RawServer(config)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        answers = [
            server.request(
                i,
                "tools/call",
                {"name": "web_search", "arguments": {"query": "x", "max_results": 0}},
            )["result"]["structuredContent"]
            for i in range(1, 4)
        ]
        assert [a["error"]["kind"] for a in answers] == [
            "invalid_request", "invalid_request", "unavailable",
        ]  # fmt: skip
        limited = answers[2]["error"]
        assert limited["detail"]["reason"] == "rate_limit"
        assert 0 < limited["detail"]["retry_after_ms"] <= 60_000
        status = server.request(5, "tools/call", {"name": "engine_status", "arguments": {}})
        assert status["result"]["structuredContent"]["outcome"] == "ok"  # other tools unaffected
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()


@pytest.mark.req("REQ-MCP-011")
def test_operator_can_switch_structured_content_off(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-011: with structured_content = false only the JSON text is sent."""
    config = write_config(tmp_path, "schema_version = 1\n[output]\nstructured_content = false\n")
    server = RawServer(config)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        result = server.request(1, "tools/call", {"name": "engine_status", "arguments": {}})
        assert "structuredContent" not in result["result"]
        assert json.loads(result["result"]["content"][0]["text"])["outcome"] == "ok"
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()


@pytest.mark.req("REQ-STATUS-003", "REQ-MCP-009")
def test_disabled_engine_status_leaves_the_tool_list(tmp_path: pathlib.Path) -> None:
    """REQ-STATUS-003: [tools] engine_status = false removes the tool."""
    config = write_config(tmp_path, "schema_version = 1\n[tools]\nengine_status = false\n")
    server = RawServer(config)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        tools = server.request(1, "tools/list", {})["result"]["tools"]
        assert [t["name"] for t in tools] == ["web_search", "web_fetch"]
        refused = server.request(2, "tools/call", {"name": "engine_status", "arguments": {}})
        assert "error" in refused
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()


@pytest.mark.req("REQ-CFG-003", "REQ-SEARCH-002", "REQ-OPS-003")
def test_zero_configuration_serves_every_category_and_logs_engine_states() -> None:
    """REQ-CFG-003, REQ-SEARCH-002: with no file, keyless engines serve all four categories."""
    server = RawServer()
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        tools = server.request(1, "tools/list", {})["result"]["tools"]
    finally:
        _, _, err = server.close_stdin_and_wait(timeout_s=10)
        server.kill()
    category = tools[0]["inputSchema"]["properties"]["category"]
    assert category["enum"] == ["general", "news", "science", "code"]
    assert category["default"] == "general"
    lines = [json.loads(line) for line in err.decode().splitlines() if line.strip()]
    states = {line["engine"]: line["state"] for line in lines if line["event"] == "engine"}
    keyless = {"wikipedia", "wikidata", "arxiv", "github", "hackernews", "gdelt",
               "stackexchange", "europepmc", "crossref"}  # fmt: skip
    assert all(states[engine] == "active" for engine in keyless)
    assert states["brave"] == states["mojeek"] == "inactive_no_key"
    assert states["searxng"] == "inactive_no_endpoint"
