"""`serve` on the event loop `[runtime] event_loop` names, over real stdio and HTTP sessions.

uvloop is only a faster loop: the same session on asyncio's loop and on uvloop
answers with the same bytes, the process says at info which loop runs it, and
a value that names no loop stops `serve` and `check` naming the key.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import signal
import subprocess
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import KEY_A, bearer, free_listener
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    SERVE,
    AsyncRawServer,
    child_env,
    engines_toml,
    write_config,
)

_UVLOOP = pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="no uvloop")
LOOPS = [pytest.param("asyncio"), pytest.param("uvloop", marks=_UVLOOP)]
SEARCHES: list[dict[str, Any]] = [
    {"query": "quantum", "max_results": 5},
    {"query": "rust async runtime", "category": "code"},
]


def _routes() -> dict[str, Route]:
    return {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}


def _events(err: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.decode().splitlines() if line.strip()]


def _loops_run(events: list[dict[str, Any]]) -> list[object]:
    return [e["loop"] for e in events if e["event"] == "event_loop"]


def _runtime(loop: str) -> str:
    """The `[runtime]` table that asks for `loop` ("" asks for nothing: the default)."""
    return f'[runtime]\nevent_loop = "{loop}"\n' if loop else ""


def _config(directory: pathlib.Path, text: str, loop: str) -> pathlib.Path:
    """A configuration file of its own per loop, so one test can start both."""
    folder = directory / (loop or "default")
    folder.mkdir()
    return write_config(folder, text + _runtime(loop))


async def _stdio_session(config: pathlib.Path) -> tuple[list[bytes], bytes]:
    """One raw stdio session on `config`: its stdout lines after the handshake, and stderr."""
    process = await anyio.open_process(SERVE, env=child_env(config))
    server = AsyncRawServer(process)
    try:
        with anyio.fail_after(60):  # start-up on a loaded machine; not what is tested
            await server.handshake(HANDSHAKE_PROTOCOL_VERSIONS[-1])
            answered = len(server.stdout_lines)
            for number, arguments in enumerate(SEARCHES, start=1):
                params = {"name": "web_search", "arguments": arguments}
                reply = await server.request(number, "tools/call", params)
                assert reply["result"]["isError"] is False, reply
        await server.close()
        assert process.returncode == 0
        assert process.stderr is not None
        err = b"".join([chunk async for chunk in process.stderr])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return server.stdout_lines[answered:], err


@pytest.mark.req("REQ-MCP-001", "REQ-MCP-002")
@_UVLOOP
async def test_web_search_over_stdio_answers_the_same_bytes_on_asyncio_and_uvloop(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-MCP-001: the same calls over stdio give byte-identical answers on either loop."""
    async with ProviderServer(_routes()) as provider:
        engines = engines_toml(provider.base_url)
        on_asyncio, asyncio_err = await _stdio_session(_config(tmp_path, engines, "asyncio"))
        on_uvloop, uvloop_err = await _stdio_session(_config(tmp_path, engines, "uvloop"))
    assert len(on_asyncio) == len(SEARCHES)
    assert on_uvloop == on_asyncio
    assert _loops_run(_events(asyncio_err)) == ["asyncio"]
    assert _loops_run(_events(uvloop_err)) == ["uvloop"]


@pytest.mark.req("REQ-MCP-002")
async def test_the_default_loop_is_uvloop_where_installed(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-002: without `[runtime] event_loop` (auto) `serve` runs on uvloop if installed."""
    async with ProviderServer(_routes()) as provider:
        _, err = await _stdio_session(_config(tmp_path, engines_toml(provider.base_url), ""))
    expected = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    assert _loops_run(_events(err)) == [expected]


@pytest.mark.req("REQ-CFG-005")
@pytest.mark.parametrize("command", [["serve"], ["serve", "--transport", "http"], ["check"]])
def test_a_value_naming_no_loop_is_refused_naming_the_key(
    command: list[str], tmp_path: pathlib.Path
) -> None:
    """REQ-CFG-005: an unknown `[runtime] event_loop` is exit 1 and one line naming the key."""
    config = write_config(tmp_path, "schema_version = 1\n" + _runtime("uvlop"))
    done = subprocess.run(
        [*SERVE[:-1], *command],
        env=child_env(config),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr
    (refusal,) = _events(done.stderr)
    assert refusal["event"] == "configuration_refused"
    assert refusal["problem"] == (
        "key 'runtime.event_loop': must be one of 'auto', 'asyncio' or 'uvloop'"
    )


async def _read_until(stderr: BufferedByteReceiveStream, lines: list[bytes], event: bytes) -> None:
    while not any(event in line for line in lines):
        lines.append(await stderr.receive_until(b"\n", 1 << 20) + b"\n")


@pytest.mark.req("REQ-MCP-003", "REQ-DEP-002", "REQ-OPS-002")
@pytest.mark.parametrize("loop", LOOPS)
async def test_http_mode_serves_a_streamable_http_session_on_each_loop(
    tmp_path: pathlib.Path, loop: str
) -> None:
    """REQ-MCP-003, REQ-OPS-002: `serve --transport http` on `loop` answers an SDK session's
    web_search and ends on SIGTERM with 0."""
    with free_listener() as probe:
        port = probe.getsockname()[1]
    async with ProviderServer(_routes()) as provider:
        config = write_config(
            tmp_path,
            engines_toml(provider.base_url)
            + _runtime(loop)
            + f"[http]\nport = {port}\n"
            + '[[http.keys]]\ncaller = "a"\nkey = { env = "RYPSOK_TEST_HTTP_KEY" }\n',
        )
        env = child_env(config, RYPSOK_TEST_HTTP_KEY=KEY_A)
        process = await anyio.open_process([*SERVE, "--transport", "http"], env=env)
        stderr = BufferedByteReceiveStream(process.stderr)  # type: ignore[arg-type]
        lines: list[bytes] = []
        try:
            with anyio.fail_after(60):  # start-up on a loaded machine; not what is tested
                await _read_until(stderr, lines, b'"event":"serving"')
                async with (
                    httpx2.AsyncClient(headers=bearer(KEY_A), timeout=30) as http,
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (
                        read,
                        write,
                    ),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    result = await session.call_tool("web_search", SEARCHES[0])
            assert not result.is_error and result.structured_content is not None
            assert result.structured_content["outcome"] == "ok"
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(5 * limits.SHUTDOWN_MS / 1000):  # no hang
                await process.wait()
                await _read_until(stderr, lines, b'"event":"shutdown"')
            assert process.returncode == 0
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
    assert _loops_run(_events(b"".join(lines))) == [loop]
