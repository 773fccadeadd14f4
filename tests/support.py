"""Helpers shared by tests: configuration files and rypsok processes."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from mcp.client.stdio import StdioServerParameters

from rypsok.core.config import Config, parse_config
from rypsok.core.engines.registry import known_ids

SERVE = [sys.executable, "-m", "rypsok", "serve"]


def config_from(data: Mapping[str, Any]) -> Config:
    return parse_config({"schema_version": 1, **data}, known_ids())


def write_config(directory: pathlib.Path, text: str) -> pathlib.Path:
    path = directory / "rypsok.toml"
    path.write_text(text, encoding="utf-8")
    return path


def child_env(config: pathlib.Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RYPSOK_")}
    if config is not None:
        env["RYPSOK_CONFIG"] = str(config)
    env.update(extra)
    return env


def stdio_params(config: pathlib.Path | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=SERVE[0], args=SERVE[1:], env=child_env(config))


class RawServer:
    """rypsok serve over real pipes, spoken to in raw JSON-RPC lines."""

    def __init__(self, config: pathlib.Path | None = None) -> None:
        self.process = subprocess.Popen(
            SERVE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(config),
        )
        self.stdout_lines: list[bytes] = []

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed stdout"
        self.stdout_lines.append(line)
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, request_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == request_id:
                return message

    def close_stdin_and_wait(self, timeout_s: float) -> tuple[float, bytes, bytes]:
        """Close stdin; the seconds until exit, remaining stdout and stderr."""
        started = time.monotonic()
        out, err = self.process.communicate(timeout=timeout_s)  # closes stdin first
        return time.monotonic() - started, out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
