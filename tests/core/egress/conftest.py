"""Fixtures for egress tests: a test CA made at test time, TLS contexts, resolvers."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.tls_site import site_certificates

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class LocalPKI:
    ca_pem: str
    ca_file: Path
    cert_file: Path  # leaf for DNS:localhost only (no IP SAN)
    key_file: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts the test CA and nothing else."""
        return ssl.create_default_context(cadata=self.ca_pem)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> LocalPKI:
    directory = tmp_path_factory.mktemp("pki")
    site = site_certificates(directory, names=["localhost"], addresses=[])
    (directory / "ca.pem").write_text(site.ca_pem, encoding="ascii")
    return LocalPKI(
        ca_pem=site.ca_pem,
        ca_file=directory / "ca.pem",
        cert_file=site.cert_file,
        key_file=site.key_file,
    )


@dataclass
class ScriptedResolver:
    """A resolver injected into the backend: answers from a script, records each call."""

    answers: dict[str, list[Sequence[str]]]
    calls: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> Sequence[IPAddress]:
        self.calls.append(host)
        script = self.answers[host]
        # Each call takes the next answer; the last one repeats.
        answer = script.pop(0) if len(script) > 1 else script[0]
        return [ipaddress.ip_address(text) for text in answer]


@pytest.fixture
def localhost_resolver() -> ScriptedResolver:
    """`localhost` is 127.0.0.1, and only that: the test does not depend on /etc/hosts."""
    return ScriptedResolver({"localhost": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})
