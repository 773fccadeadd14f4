"""The tools/call answer on the wire: rendered once, byte for byte what the SDK makes of a model."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from tests.mcp.test_stdio import handshake
from tests.support import RawServer, params_for


def _as_the_sdk_writes_a_model(request_id: int, result: dict[str, Any], version: str) -> bytes:
    """The line the SDK writes for a handler that returned this result as a `CallToolResult`."""
    content = result["content"][0]
    model = types.CallToolResult(
        content=[types.TextContent(type="text", text=content["text"])],
        structured_content=result.get("structuredContent"),
        is_error=result["isError"],
    )
    dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire = methods.serialize_server_result("tools/call", version, dumped)
    if "_meta" in result:  # the SDK's own serverInfo stamp of the handshake-free revision
        wire["_meta"] = result["_meta"]
    response = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=wire)
    return (response.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()


@pytest.mark.req("REQ-MCP-011", "REQ-MCP-002")
@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS])
def test_answers_are_the_bytes_a_model_result_would_give(version: str) -> None:
    """REQ-MCP-011: an answer and a refusal, JSON text plus structured content, bytes unchanged."""
    server = RawServer()
    try:
        if version in HANDSHAKE_PROTOCOL_VERSIONS:
            handshake(server, version)
        calls = {
            1: {"name": "engine_status", "arguments": {}},
            2: {"name": "web_search", "arguments": {"query": ""}},  # refused: empty query
        }
        answers = {
            i: server.request(i, "tools/call", params_for(version, call))
            for i, call in calls.items()
        }
    finally:
        server.close_stdin_and_wait(timeout_s=10)
        server.kill()
    lines = {json.loads(line).get("id"): line for line in server.stdout_lines}
    assert answers[1]["result"]["isError"] is False and answers[2]["result"]["isError"] is True
    for request_id, answer in answers.items():
        result = answer["result"]
        assert {"content", "isError", "structuredContent"} <= set(result)
        compact = json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":"))
        assert result["content"] == [{"type": "text", "text": compact}]
        expected = _as_the_sdk_writes_a_model(request_id, result, version)
        assert lines[request_id] == expected
