"""stdin and stdout on the event loop (rypsok.mcp.stdio_pipes), the SDK transport elsewhere."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.mcp.stdio_pipes import LoopLines, LoopWriter
from tests.mcp.test_stdio import handshake
from tests.support import SERVE, RawServer, child_env


def _lines_of(*chunks: bytes) -> list[str]:
    """What LoopLines yields for `chunks` written one by one into a pipe, then EOF."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)

    def feed() -> None:
        for chunk in chunks:
            os.write(write_fd, chunk)
        os.close(write_fd)

    async def collect() -> list[str]:
        return [line async for line in LoopLines(read_fd)]

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        return anyio.run(collect)
    finally:
        feeder.join()
        os.close(read_fd)


@pytest.mark.req("REQ-MCP-002")
def test_lines_are_decoded_as_the_sdk_text_wrapper_decodes_them() -> None:
    """REQ-MCP-002: UTF-8 with replacement, universal newlines, a last line without newline."""
    lines = _lines_of(b'{"a":"\xc3', b'\xa9"}\r\n{"b":1}\r{"c":"\xff"}\n', b'{"d":2}')
    assert lines == ['{"a":"é"}\n', '{"b":1}\n', '{"c":"\ufffd"}\n', '{"d":2}']


@pytest.mark.req("REQ-MCP-002")
def test_a_message_larger_than_the_pipe_is_written_whole() -> None:
    """REQ-MCP-002: a message past the pipe's buffer waits for the reader and arrives whole."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    message = json.dumps({"text": "é" * 400_000}) + "\n"
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 65536):
            received.extend(chunk)

    async def write() -> None:
        writer = LoopWriter(write_fd)
        await writer.write(message)
        await writer.flush()

    drainer = threading.Thread(target=drain)
    drainer.start()
    try:
        anyio.run(write)
    finally:
        os.close(write_fd)
        drainer.join()
        os.close(read_fd)
    assert received.decode("utf-8") == message


def _transport_of(err: bytes) -> list[object]:
    events = [json.loads(line) for line in err.decode().splitlines() if line.strip()]
    return [e["pipes"] for e in events if e["event"] == "stdio_transport"]


@pytest.mark.req("REQ-MCP-002")
def test_pipes_are_served_on_the_event_loop_and_stdout_holds_only_messages() -> None:
    """REQ-MCP-002: over pipes the loop serves them; stdout carries JSON-RPC lines only."""
    server = RawServer()
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        server.request(1, "tools/call", {"name": "engine_status", "arguments": {}})
        _, rest, err = server.close_stdin_and_wait(timeout_s=10)
    finally:
        server.kill()
    assert server.process.returncode == 0
    assert _transport_of(err) == ["event_loop"]
    lines = [*server.stdout_lines, *rest.splitlines()]
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)


@pytest.mark.req("REQ-MCP-002")
def test_stdin_from_a_file_falls_back_to_the_sdk_transport(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-002: a non-pipe stdin (a file) is served by the SDK's own transport, to EOF."""
    requests = tmp_path / "requests.jsonl"
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
            "capabilities": {},
            "clientInfo": {"name": "rypsok-tests", "version": "0"},
        },
    }
    requests.write_text(json.dumps(initialize) + "\n", encoding="utf-8")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            SERVE, stdin=stdin, capture_output=True, env=child_env(), timeout=60, check=False
        )
    assert done.returncode == 0
    assert _transport_of(done.stderr) == ["sdk_threads"]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers and answers[0]["id"] == 0 and "serverInfo" in answers[0]["result"]
