"""Helpers shared by tests: configuration files and rypsok processes."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from ipaddress import ip_address
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from rypsok.core.config import Config, parse_config
from rypsok.core.egress.backend import system_resolver
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.engines.registry import known_ids
from rypsok.core.services import Services, user_agent
from rypsok.mcp.server import build_server

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

    def __init__(
        self, config: pathlib.Path | None = None, command: Sequence[str] = tuple(SERVE)
    ) -> None:
        self.process = subprocess.Popen(
            list(command),
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


ENGINE_PATHS = {
    "wikipedia": "/w/api.php",
    "wikidata": "/wikidata/w/api.php",
    "arxiv": "/api/query",
    "github": "/search/repositories",
    "hackernews": "/api/v1/search",
    "gdelt": "/api/v2/doc/doc",
    "stackexchange": "/2.3/search/advanced",
    "europepmc": "/europepmc/webservices/rest/search",
    "crossref": "/works",
    "npm": "/-/v1/search",
    "dblp": "/search/publ/api",
}
OK_FIXTURES = {
    "wikipedia": "ok.json",
    "wikidata": "ok.json",
    "arxiv": "ok.xml",
    "github": "ok.json",
    "hackernews": "ok.json",
    "gdelt": "ok.json",
    "stackexchange": "ok.json",
    "europepmc": "ok.json",
    "crossref": "ok.json",
    "npm": "ok.json",
    "dblp": "ok.json",
}


def engines_toml(base_url: str, extra: str = "") -> str:
    """A configuration pointing every engine at a local fake provider.

    The endpoints are explicit (REQ-SEC-017 allows plain http and loopback for
    them), and loopback is allowed by an explicit egress rule injected here.
    """
    lines = ["schema_version = 1", "[egress]", 'allow = ["127.0.0.1/32"]']
    for engine, path in ENGINE_PATHS.items():
        lines += [f"[engines.{engine}]", f'endpoint = "{base_url}{path}"']
    return "\n".join(lines) + "\n" + extra


def engines_config(base_url: str, **sections: Any) -> Config:
    """The same configuration as `engines_toml`, built in code."""
    engines = {e: {"endpoint": f"{base_url}{p}"} for e, p in ENGINE_PATHS.items()}
    data: dict[str, Any] = {"egress": {"allow": ["127.0.0.1/32"]}, "engines": engines}
    for name, section in sections.items():
        data[name] = {**data.get(name, {}), **section}
    return config_from(data)


async def call_tool(
    services: Any, tool: str, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """One call through the SDK's in-memory client: (structured content, JSON text)."""
    async with Client(build_server(services)) as client:
        result = await client.call_tool(tool, dict(arguments))
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    assert json.loads(text) == result.structured_content
    assert result.is_error == (result.structured_content["outcome"] == "error")
    return result.structured_content, text


class AsyncRawServer:
    """rypsok serve over real pipes, driven from the test's event loop in raw JSON-RPC.

    Needed where a fake provider on the same loop must keep answering while the
    test waits for rypsok.
    """

    def __init__(self, process: Any) -> None:
        self.process = process
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.stdout_lines: list[bytes] = []

    @classmethod
    async def start(cls, config: pathlib.Path | None = None) -> AsyncRawServer:
        process = await anyio.open_process(SERVE, env=child_env(config))
        return cls(process)

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        line = await self._stdout.receive_until(b"\n", 10 * 1024 * 1024)
        self.stdout_lines.append(line)
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(
        self, request_id: int, method: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = await self.receive()
            if message.get("id") == request_id:
                return message

    async def handshake(self, version: str) -> dict[str, Any]:
        if version in MODERN_PROTOCOL_VERSIONS:
            return {}
        reply = await self.request(
            0,
            "initialize",
            {"protocolVersion": version, "capabilities": {},
             "clientInfo": {"name": "rypsok-tests", "version": "0"}},
        )  # fmt: skip
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    async def close(self) -> None:
        with anyio.move_on_after(5):
            await self.process.stdin.aclose()
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


def params_for(version: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Request params for a revision: the handshake-free one carries its version in _meta."""
    if version not in MODERN_PROTOCOL_VERSIONS:
        return dict(params)
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**params, "_meta": meta}


async def wait_until(predicate: Any, timeout_s: float, step_s: float = 0.005) -> None:
    """Poll a recorded fact of a fake server until it holds, or fail after timeout_s."""
    with anyio.fail_after(timeout_s):
        while not predicate():  # noqa: ASYNC110 (the records have no event to await)
            await anyio.sleep(step_s)


def fetch_config(base_url: str, **sections: Any) -> Config:
    """A configuration under which web_fetch may reach one local page server.

    The production egress policy stays in force; loopback is reached only
    through the explicit allow rule injected here, plain http only because the
    operator allows it, and the server's ephemeral port is added (REQ-TEST-005).
    """
    port = int(base_url.rsplit(":", 1)[1])
    fetch = {"allow_http": True, "ports": [port], **sections.pop("fetch", {})}
    data: dict[str, Any] = {"egress": {"allow": ["127.0.0.1/32"]}, "fetch": fetch, **sections}
    return config_from(data)


def services_resolving(config: Config, names: Mapping[str, str]) -> Services:
    """Services whose egress resolves these names to these addresses, others as usual.

    Names of the public internet cannot be resolved in tests; a scripted answer
    lets the production policy judge them (e.g. a redirect to a public host).
    """

    async def resolve(host: str, port: int) -> Any:
        if host in names:
            return (ip_address(names[host]),)
        return await system_resolver(host, port)

    egress = EgressClient(
        user_agent=user_agent(None),
        rules=EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny),
        fetch_allow_http=config.fetch.allow_http,
        fetch_extra_ports=config.fetch.ports,
        resolver=resolve,
    )
    return Services(config, egress=egress)
