"""Key scopes over HTTP: a key lists and calls only the tools its scope admits."""

from __future__ import annotations

import pathlib

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from rypsok.core.config import Config, ConfigError
from rypsok.mcp.http.plan import check_http
from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    bearer,
    free_listener,
    key_entries,
    running_http,
)
from tests.support import config_from


def scoped_config(directory: pathlib.Path, port: int) -> Config:
    """Caller a holds search, fetch and status; caller b keeps the default scopes."""
    keys = key_entries(directory, scopes=["search", "fetch", "status"], a=KEY_A)
    keys += key_entries(directory, scopes=None, b=KEY_B)
    return config_from({"http": {"port": port, "keys": keys}})


@pytest.mark.req("REQ-MCP-009", "REQ-SEC-018")
async def test_a_key_without_status_neither_lists_nor_calls_engine_status(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-MCP-009: each key's tool list is fixed by its configured scopes, in both eras.

    The default scopes (search, fetch) hide engine_status; calling it anyway
    is answered as an unknown tool, naming only the tools that key has.
    """
    listener = free_listener()
    async with running_http(scoped_config(tmp_path, listener.getsockname()[1]), listener) as run:
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_B)) as http,
            streamable_http_client(run.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed_tools = (await session.list_tools()).tools
            listed = [tool.name for tool in listed_tools]
            # The listed tools keep their declared annotations (REQ-MCP-009).
            for tool in listed_tools:
                assert tool.annotations is not None and tool.annotations.read_only_hint
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("engine_status", {})
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_B)) as http,
            Client(streamable_http_client(run.url, http_client=http)) as client,
        ):
            modern = [tool.name for tool in (await client.list_tools()).tools]
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
            Client(streamable_http_client(run.url, http_client=http)) as client,
        ):
            full = [tool.name for tool in (await client.list_tools()).tools]
            status = await client.call_tool("engine_status", {})
    assert listed == modern == ["web_search", "web_fetch"]
    assert "Unknown tool" in str(unknown.value)
    assert "engine_status" not in str(unknown.value)
    assert full == ["web_search", "web_fetch", "engine_status"]
    assert status.structured_content is not None
    assert status.structured_content["outcome"] == "ok"


@pytest.mark.req("REQ-MCP-009")
def test_scopes_come_from_a_fixed_vocabulary_and_are_never_empty(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-MCP-009: an unknown scope word or an empty list is refused naming the key."""

    with pytest.raises(ConfigError) as unknown:
        config_from({"http": {"keys": key_entries(tmp_path, scopes=["admin"], a=KEY_A)}})
    assert "http.keys" in str(unknown.value) and "scopes" in str(unknown.value)
    empty = config_from({"http": {"keys": key_entries(tmp_path, scopes=[], a=KEY_A)}})
    problems = check_http(empty)
    assert any("http.keys[0].scopes (caller 'a')" in problem for problem in problems)
