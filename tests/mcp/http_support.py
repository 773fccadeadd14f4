"""Helpers for the HTTP mode's tests: keys, a test CA, an in-process server, raw requests."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import json
import pathlib
import socket
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rypsok.core.config import Config
from rypsok.core.egress.client import EgressClient
from rypsok.core.services import Services
from rypsok.mcp.http.layers import HttpApp, build_http_app
from rypsok.mcp.http.plan import HttpPlan, plan_http
from rypsok.mcp.http.serve import make_server
from tests.support import ENGINE_PATHS, config_from

# Synthetic keys, long enough for the policy; never real.
KEY_A = "rk_test_A1b2C3d4E5f6G7h8I9j0"
KEY_B = "rk_test_Z9y8X7w6V5u4T3s2R1q0"
JSON_AND_SSE = "application/json, text/event-stream"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


# Every tool: the tests of the transport see all three (scopes have their own tests).
ALL_TOOL_SCOPES = ["search", "fetch", "status"]


def key_entries(
    directory: pathlib.Path, scopes: list[str] | None = ALL_TOOL_SCOPES, **callers: str
) -> list[dict[str, Any]]:
    """[[http.keys]] entries, each key in its own file (keys are given by reference).

    `scopes=None` leaves the key's scopes at their default.
    """
    entries = []
    for caller, key in callers.items():
        path = directory / f"{caller}.key"
        path.write_text(key + "\n", encoding="utf-8")
        path.chmod(0o600)  # as an operator keeps it: serve refuses a key others can read
        entry: dict[str, Any] = {"caller": caller, "key": {"file": str(path)}}
        if scopes is not None:
            entry["scopes"] = list(scopes)
        entries.append(entry)
    return entries


def http_config(
    directory: pathlib.Path, port: int, base: Mapping[str, Any] | None = None, **http: Any
) -> Config:
    """A configuration with keys for callers a (KEY_A) and b (KEY_B) on 127.0.0.1:port."""
    data: dict[str, Any] = {k: dict(v) for k, v in (base or {}).items()}
    section = {"port": port, "keys": key_entries(directory, a=KEY_A, b=KEY_B), **http}
    data["http"] = {**data.get("http", {}), **section}
    return config_from(data)


def free_listener() -> socket.socket:
    return socket.create_server(("127.0.0.1", 0))


@dataclass
class RunningHttp:
    plan: HttpPlan
    app: HttpApp
    services: Services
    port: int
    scheme: str = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{self.plan.path}"

    def base(self, path: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"


@contextlib.asynccontextmanager
async def running_http(
    config: Config,
    listener: socket.socket,
    scheme: str = "http",
    egress: EgressClient | None = None,
) -> AsyncIterator[RunningHttp]:
    """rypsok's HTTP app under uvicorn on the test's loop, on an already bound listener.

    `egress` replaces the process's egress client (a test's own trust store).
    """
    plan = plan_http(config)
    services = Services(config, egress=egress)
    app = build_http_app(services, plan)
    server = make_server(app, plan)
    port = listener.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield RunningHttp(plan, app, services, port, scheme)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        await services.aclose()
        listener.close()


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (or a plain JSON body)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return [json.loads(stripped)]
    return [
        json.loads(line[len("data:") :])
        for line in text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip()
    ]


class RawMcp:
    """Raw JSON-RPC over HTTP, for what the SDK client hides: revisions, status codes, headers."""

    def __init__(self, client: httpx2.AsyncClient, url: str, key: str | None) -> None:
        self.client = client
        self.url = url
        self.headers = {"accept": JSON_AND_SSE, "content-type": "application/json"}
        if key is not None:
            self.headers.update(bearer(key))
        self.session: str | None = None
        self.version: str | None = None

    def current_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.session is not None:
            headers["mcp-session-id"] = self.session
        if self.version is not None:
            headers["mcp-protocol-version"] = self.version
        return headers

    async def post(self, message: Mapping[str, Any]) -> httpx2.Response:
        return await self.client.post(self.url, headers=self.current_headers(), json=dict(message))

    async def initialize(self, version: str) -> httpx2.Response:
        response = await self.post(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "rypsok-tests", "version": "0"}}}
        )  # fmt: skip
        if response.status_code == 200:
            self.session = response.headers["mcp-session-id"]
            self.version = version
            done = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert done.status_code == 202
        return response

    async def request(self, request_id: int, method: str, params: Mapping[str, Any]) -> Any:
        response = await self.post(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}
        )
        assert response.status_code == 200, response.text
        replies = [m for m in sse_messages(response.text) if m.get("id") == request_id]
        return replies[0]

    async def delete(self) -> httpx2.Response:
        return await self.client.delete(self.url, headers=self.current_headers())


@dataclass(frozen=True)
class TestCA:
    ca_pem: str
    cert_file: pathlib.Path
    key_file: pathlib.Path

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _key_usage(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip


def make_test_ca(
    directory: pathlib.Path,
    extra_names: Sequence[str] = (),
    valid_from: datetime.timedelta = datetime.timedelta(minutes=-5),
    valid_until: datetime.timedelta = datetime.timedelta(days=1),
) -> TestCA:
    """A CA made at test time and a server certificate for 127.0.0.1 and localhost.

    `extra_names` adds names to the certificate; `valid_from` and `valid_until`
    (relative to now) make one that is not yet valid, expired or expiring.
    """
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("rypsok http test CA"))
        .issuer_name(_name("rypsok http test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)  # as a real CA has (RFC 5280)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    names = [_general_name(name) for name in ("localhost", "127.0.0.1", *extra_names)]
    leaf_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + valid_from)
        .not_valid_after(now + valid_until)
        .add_extension(x509.SubjectAlternativeName(names), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(leaf_cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    return TestCA(ca_pem=ca_pem, cert_file=cert_file, key_file=key_file)


def engine_sections(base_url: str) -> dict[str, Any]:
    """Every engine pointed at one local fake provider, loopback allowed explicitly."""
    engines = {e: {"endpoint": f"{base_url}{p}"} for e, p in ENGINE_PATHS.items()}
    return {"egress": {"allow": ["127.0.0.1/32"]}, "engines": engines}
