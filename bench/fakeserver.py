"""A fake search provider in a process of its own: HTTP/1.1 on 127.0.0.1, keep-alive.

Run by `FakeServer` (the parent's handle), never by hand. The parent writes
the routes as one JSON line on the child's stdin; the child binds an
ephemeral port, prints `PORT <n>` and serves until its stdin closes.

Each route answers every request after a fixed delay with a fixed body:

    {"/bench/0": {"delay_ms": 20, "bench": {"index": 0}},
     "/w/api.php": {"delay_ms": 5, "file": ".../ok.json", "content_type": "..."}}

Every request is recorded as (path, tag, arrived, done): `tag` is the query
parameter holding the query (`q`, `srsearch`, `search` or `query`),
`arrived` the CLOCK_MONOTONIC time its head was complete, `done` the time
its last byte was handed to the kernel. CLOCK_MONOTONIC is system-wide on
Linux, so the parent can put these times on its own timeline.
`GET /_bench/stats` answers the records and the server's CPU seconds;
`GET /_bench/reset` clears the records.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl

from bench.payloads import bench_body

REPO = pathlib.Path(__file__).resolve().parent.parent
_MAX_HEAD = 64 * 1024

# The query parameters that carry a call's query: the bench engines' and the
# real general engines' (Wikipedia `srsearch`, Wikidata `search`, Marginalia `query`).
_TAG_KEYS = frozenset({"q", "srsearch", "search", "query"})

# (path, tag, arrived, done)
Record = tuple[str, str, float, float]


# -- the server process -----------------------------------------------------------------------


def _response(status: int, body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
        f"content-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: keep-alive\r\n\r\n"
    )
    return head.encode("latin-1") + body


def _build_routes(spec: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[float, bytes]]:
    routes: dict[str, tuple[float, bytes]] = {}
    for path, route in spec.items():
        if "bench" in route:
            body = bench_body(**route["bench"])
            content_type = "application/json"
        else:
            body = pathlib.Path(route["file"]).read_bytes()
            content_type = route.get("content_type", "application/json")
        routes[path] = (
            float(route.get("delay_ms", 0)) / 1000.0,
            _response(200, body, content_type),
        )
    return routes


class _Server:
    def __init__(self, routes: dict[str, tuple[float, bytes]]) -> None:
        self.routes = routes
        self.records: list[Record] = []

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                arrived = time.monotonic()
                target = head.split(b" ", 2)[1].decode("latin-1")
                path, _, query = target.partition("?")
                if path.startswith("/_bench/"):
                    writer.write(self.control(path))
                    await writer.drain()
                    continue
                route = self.routes.get(path)
                if route is None:
                    writer.write(_response(404, b"not found", "text/plain"))
                    await writer.drain()
                    continue
                delay, answer = route
                if delay:
                    await asyncio.sleep(delay)
                writer.write(answer)
                await writer.drain()
                done = time.monotonic()
                tag = next((v for k, v in parse_qsl(query) if k in _TAG_KEYS), "")
                self.records.append((path, tag, arrived, done))
        except (ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def control(self, path: str) -> bytes:
        if path == "/_bench/reset":
            self.records.clear()
            return _response(200, b"{}", "application/json")
        body = json.dumps({"cpu_s": time.process_time(), "records": self.records}).encode()
        return _response(200, body, "application/json")


async def _serve() -> None:
    spec = json.loads(sys.stdin.readline())
    server = _Server(_build_routes(spec))
    listener = await asyncio.start_server(server.connection, "127.0.0.1", 0, limit=_MAX_HEAD)
    port = listener.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    stdin_closed = asyncio.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(stdin_closed.set)

    threading.Thread(target=wait_for_eof, daemon=True).start()
    await stdin_closed.wait()
    # Nothing to clean up: leave at once rather than cancel the answers in flight.
    os._exit(0)


# -- the parent's handle ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stats:
    cpu_s: float
    records: list[Record]

    def by_tag(self) -> dict[str, list[Record]]:
        grouped: dict[str, list[Record]] = {}
        for record in self.records:
            grouped.setdefault(record[1], []).append(record)
        return grouped

    def count(self, path: str) -> int:
        return sum(1 for record in self.records if record[0] == path)


class FakeServer:
    """Starts `python -m bench.fakeserver` with these routes; stops it on exit."""

    def __init__(self, routes: Mapping[str, Mapping[str, Any]]) -> None:
        self._routes = dict(routes)
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def __enter__(self) -> Self:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.fakeserver"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(self._routes).encode() + b"\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline().decode()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError("the fake server did not start")
        self.port = int(line.split()[1])
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _get(self, path: str) -> bytes:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request("GET", path)
            return connection.getresponse().read()
        finally:
            connection.close()

    def stats(self) -> Stats:
        data = json.loads(self._get("/_bench/stats"))
        records: list[Record] = [(r[0], r[1], r[2], r[3]) for r in data["records"]]
        return Stats(data["cpu_s"], records)

    def reset(self) -> None:
        self._get("/_bench/reset")

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


if __name__ == "__main__":
    asyncio.run(_serve())
