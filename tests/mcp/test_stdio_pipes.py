"""stdin and stdout on the event loop (rypsok.mcp.stdio_pipes), the SDK transport elsewhere."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp.server import stdio as sdk_stdio
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.mcp.stdio_pipes import READ_CHUNK, PipeMessages, PipeSender
from tests.mcp.test_stdio import handshake
from tests.support import SERVE, RawServer, child_env

# Split UTF-8, CRLF and lone CR, an undecodable byte, a malformed line, an empty
# line, a request, a notification, and a last line without its newline.
AWKWARD_INPUT = (
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\xc3',
    b'\xa9"}}\r\n{"jsonrpc":"2.0","method":"notifications/initialized"}\r',
    b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}\n{not json\n\n',
    b'{"jsonrpc":"2.0","id":2,"result":{}}',
)


def _fed(chunks: tuple[bytes, ...], read: Callable[[int], Awaitable[list[object]]]) -> list[object]:
    """What `read` makes of `chunks` written one by one into a pipe, then EOF."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)

    def feed() -> None:
        for chunk in chunks:
            os.write(write_fd, chunk)
        os.close(write_fd)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        return anyio.run(read, read_fd)
    finally:
        feeder.join()
        os.close(read_fd)


def _summary(item: object) -> object:
    """A message as its wire dump, an error as its type: what the session acts on."""
    if isinstance(item, SessionMessage):
        return item.message.model_dump(by_alias=True, exclude_unset=True)
    return type(item).__name__


async def _through_pipe_messages(fd: int) -> list[object]:
    return [_summary(item) async for item in PipeMessages(fd)]


async def _through_the_sdk_reader(fd: int) -> list[object]:
    """The SDK's own `stdio_server` reader over the same pipe (its text wrapper, in a thread).

    Blocking, as the stdin it is made for: on a non-blocking pipe its `readline`
    returns a line cut where the writer has got to (`{"a":"\ufffd` when the reader
    overtakes the second write), which made this comparison fail now and then.
    """
    os.set_blocking(fd, True)
    stdin = anyio.wrap_file(
        sdk_stdio._UnownedTextWrapper(
            os.fdopen(fd, "rb", closefd=False), encoding="utf-8", errors="replace"
        )
    )
    sink = anyio.wrap_file(open(os.devnull, "w", encoding="utf-8"))  # noqa: ASYNC230, SIM115
    try:
        async with sdk_stdio.stdio_server(stdin, sink) as (read_stream, write_stream):
            items = [_summary(item) async for item in read_stream]
            await write_stream.aclose()  # what the session does at end of input
            return items
    finally:
        await sink.aclose()


@pytest.mark.req("REQ-MCP-002", "REQ-MCP-004")
def test_lines_are_framed_and_refused_exactly_as_the_sdk_reader_does() -> None:
    """REQ-MCP-002, REQ-MCP-004: same messages, same refusals, in the same order as the SDK's."""
    ours = _fed(AWKWARD_INPUT, _through_pipe_messages)
    assert ours == _fed(AWKWARD_INPUT, _through_the_sdk_reader)
    assert ours[3:5] == ["ValidationError", "ValidationError"]  # `{not json` and the empty line
    assert len(ours) == 6 and ours[5] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert ours[0] == {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": "é"}}
    assert ours[2] == {"jsonrpc": "2.0", "id": "\ufffd", "method": "ping"}


@pytest.mark.req("REQ-MCP-002")
def test_reading_pauses_while_a_chunk_of_lines_waits_for_the_session() -> None:
    """REQ-MCP-002: a client that floods stdin is read at most two chunks ahead of the session.

    A read happens only while less than a chunk's worth of lines waits.
    """
    line = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    flood = (line * (8 * READ_CHUNK // len(line)),)

    async def first_then_state(fd: int) -> list[object]:
        messages = PipeMessages(fd)
        await messages.receive()
        await anyio.sleep(0.2)  # the loop would keep reading here if it did not pause
        waiting = messages._waiting_chars
        rest = [item async for item in messages]
        return [waiting, len(rest)]

    waiting, rest = _fed(flood, first_then_state)
    assert isinstance(waiting, int) and READ_CHUNK < waiting <= 2 * READ_CHUNK
    assert rest == len(flood[0]) // len(line) - 1


def _message(text: str, request_id: int = 1) -> SessionMessage:
    response = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"text": text})
    return SessionMessage(response)


def _drained(write: Callable[[int], Awaitable[None]], *, slow: bool = False) -> bytes:
    """Everything `write` put on a non-blocking pipe, read by a thread until EOF."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 4096 if slow else 65536):
            received.extend(chunk)
            if slow:
                time.sleep(0.001)

    drainer = threading.Thread(target=drain)
    drainer.start()
    try:
        anyio.run(write, write_fd)
    finally:
        os.close(write_fd)
        drainer.join()
        os.close(read_fd)
    return bytes(received)


@pytest.mark.req("REQ-MCP-002")
def test_a_message_is_written_as_the_sdk_writer_writes_it() -> None:
    """REQ-MCP-002: by alias, unset fields left out, one line, UTF-8; larger than the pipe too."""
    message = _message("é" * 400_000)

    async def write(fd: int) -> None:
        await PipeSender(fd).send(message)

    expected = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
    assert _drained(write) == expected.encode("utf-8")


@pytest.mark.req("REQ-MCP-002")
def test_concurrent_senders_never_interleave_and_keep_their_order() -> None:
    """REQ-MCP-002: messages sent together past the pipe's size arrive whole, in sending order."""
    texts = [str(i) * (150_000 + i) for i in range(4)]

    async def write(fd: int) -> None:
        sender = PipeSender(fd)
        async with anyio.create_task_group() as group:
            for i, text in enumerate(texts):
                group.start_soon(sender.send, _message(text, i))
                await anyio.lowlevel.checkpoint()  # start each send in turn

    lines = _drained(write, slow=True).decode("utf-8").split("\n")
    assert lines[-1] == ""
    assert [json.loads(line)["result"]["text"] for line in lines[:-1]] == texts


@pytest.mark.req("REQ-MCP-002", "REQ-MCP-007")
def test_a_sender_cancelled_while_the_pipe_is_full_leaves_no_half_frame() -> None:
    """REQ-MCP-002, REQ-MCP-007: a cancelled send's message still arrives whole, then the next."""
    big, small = _message("x" * 300_000, 1), _message("after", 2)

    async def write(fd: int) -> None:
        sender = PipeSender(fd)
        with anyio.move_on_after(0.001):
            await sender.send(big)  # the pipe holds 64 KiB: this send must wait, and is cancelled
        await sender.send(small)
        await sender.flushed()

    lines = _drained(write, slow=True).decode("utf-8").split("\n")
    assert [json.loads(line)["id"] for line in lines[:-1]] == [1, 2]


@pytest.mark.req("REQ-MCP-002")
def test_a_closed_reader_makes_sends_fail_as_a_broken_stream() -> None:
    """REQ-MCP-002: once the client stops reading, sends fail as the session expects, no crash."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    os.close(read_fd)

    async def write() -> list[str]:
        sender = PipeSender(write_fd)
        failures = []
        for _ in range(2):
            try:
                await sender.send(_message("lost"))
            except anyio.BrokenResourceError:
                failures.append("broken")
        await sender.flushed()
        await sender.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await sender.send(_message("late"))
        return failures

    try:
        assert anyio.run(write) == ["broken", "broken"]
    finally:
        os.close(write_fd)


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
