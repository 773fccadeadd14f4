"""A minimal MCP client over a child's stdio: raw JSON-RPC lines, many requests in flight."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

PROTOCOL = HANDSHAKE_PROTOCOL_VERSIONS[-1]
_LINE_LIMIT = 64 * 1024 * 1024


class StdioPeer:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(
        cls, command: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> StdioPeer:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            limit=_LINE_LIMIT,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                break
            message = json.loads(line)
            future = self._waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the server closed stdout"))

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await future

    async def initialize(self) -> dict[str, Any]:
        reply = await self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {},
             "clientInfo": {"name": "rypsok-bench", "version": "0"}},
        )  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    async def search(self, query: str) -> str:
        """One web_search; its outcome (or `protocol_error`)."""
        reply = await self.request(
            "tools/call", {"name": "web_search", "arguments": {"query": query}}
        )
        result = reply.get("result")
        if not isinstance(result, dict):
            return "protocol_error"
        return str((result.get("structuredContent") or {}).get("outcome", "unknown"))

    def cpu_seconds(self) -> float:
        """User plus system CPU of the child so far (Linux /proc)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    async def close(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError):
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
