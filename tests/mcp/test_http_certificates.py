"""The certificate is judged before serving, and replaced on SIGHUP without a restart."""

from __future__ import annotations

import asyncio
import datetime
import os
import pathlib
import signal
import ssl
import subprocess
import sys

import anyio
import httpx2
import pytest
from cryptography import x509

from rypsok.mcp.http import certificate
from tests.mcp import http_support
from tests.mcp.http_support import (
    KEY_A,
    bearer,
    free_listener,
    http_config,
    make_test_ca,
    running_http,
)
from tests.support import child_env, write_config

CHECK = [sys.executable, "-m", "rypsok", "check"]
DAY = datetime.timedelta(days=1)
KEY_ENV = {"RYPSOK_TEST_CERT_KEY": "cert-test-key-0123456789"}


def tls_toml(ca: http_support.TestCA, key_file: pathlib.Path | None = None, hosts: str = "") -> str:
    return (
        "schema_version = 1\n[http]\n"
        f'tls_cert = {{ file = "{ca.cert_file}" }}\n'
        f'tls_key = {{ file = "{key_file or ca.key_file}" }}\n'
        + (f"allowed_hosts = {hosts}\n" if hosts else "")
        + '[[http.keys]]\ncaller = "agent"\nkey = { env = "RYPSOK_TEST_CERT_KEY" }\n'
    )


def run_check(directory: pathlib.Path, text: str) -> subprocess.CompletedProcess[str]:
    config = write_config(directory, text)
    return subprocess.run(
        [*CHECK, "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
        env=child_env(**KEY_ENV),
    )  # fmt: skip


def made(directory: pathlib.Path, name: str, **options: object) -> http_support.TestCA:
    folder = directory / name
    folder.mkdir()
    return make_test_ca(folder, **options)  # type: ignore[arg-type]


@pytest.mark.req("REQ-SEC-018", "REQ-CFG-005")
@pytest.mark.parametrize("case", ["expired", "not_yet_valid", "mismatched", "uncovered"])
def test_check_refuses_a_certificate_serve_should_not_present(
    tmp_path: pathlib.Path, case: str
) -> None:
    """REQ-SEC-018: expired, not yet valid, another key's, or names short of allowed_hosts.

    Each ends `check` with exit 1 and one line naming the keys; no traceback.
    """
    ca = made(tmp_path, "ca")
    text = tls_toml(ca)
    if case == "expired":
        text = tls_toml(made(tmp_path, "old", valid_from=-2 * DAY, valid_until=-DAY))
    elif case == "not_yet_valid":
        text = tls_toml(made(tmp_path, "new", valid_from=DAY, valid_until=2 * DAY))
    elif case == "mismatched":
        text = tls_toml(ca, key_file=made(tmp_path, "other").key_file)
    else:
        text = tls_toml(ca, hosts='["localhost:8750", "search.example.org:8750"]')
    run = run_check(tmp_path, text)
    assert run.returncode == 1, run.stdout
    assert "http.tls_cert" in run.stderr
    assert "Traceback" not in run.stderr
    expected = {
        "expired": "expired on",
        "not_yet_valid": "not valid before",
        "mismatched": "matching PEM pair",
        "uncovered": "do not cover search.example.org",
    }[case]
    assert expected in run.stderr


@pytest.mark.req("REQ-SEC-018")
def test_check_says_who_can_verify_and_warns_of_a_near_end(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: a private CA's certificate is said to be verifiable by its clients only.

    It expires in 3 days, so check passes with a warning naming http.tls_cert.
    """
    run = run_check(tmp_path, tls_toml(made(tmp_path, "soon", valid_until=3 * DAY)))
    assert run.returncode == 0, run.stderr
    assert certificate.PRIVATE_WORDS in run.stdout
    assert "warning: http.tls_cert: the certificate expires on" in run.stdout
    assert "caller agent: search, fetch" in run.stdout


@pytest.mark.req("REQ-SEC-018")
def test_a_chain_to_a_trusted_root_is_called_publicly_trusted(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-SEC-018: the words follow the chain: trusted by the store means any client.

    The system store is replaced by one holding the test CA, the position a
    public CA has; the same certificate is private against the real store.
    """
    ca = made(tmp_path, "ca")
    private = certificate.inspect(str(ca.cert_file), ("127.0.0.1:8750",), configured=True)
    root = x509.load_pem_x509_certificate(ca.ca_pem.encode())
    monkeypatch.setattr(
        certificate, "_system_store", lambda: certificate.verification.Store([root])
    )
    public = certificate.inspect(str(ca.cert_file), ("127.0.0.1:8750",), configured=True)
    assert not private.publicly_trusted and private.statement == certificate.PRIVATE_WORDS
    assert public.publicly_trusted and public.statement == certificate.PUBLIC_WORDS
    assert not public.problems


async def _served_serial(port: int, ca_pem: str) -> int:
    """The serial number of the certificate a new TLS handshake presents."""
    context = ssl.create_default_context(cadata=ca_pem)
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost"
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    return x509.load_der_x509_certificate(der).serial_number


@pytest.mark.req("REQ-SEC-018")
async def test_sighup_replaces_the_certificate_without_dropping_a_connection(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-018: after SIGHUP new handshakes get the renewed certificate; an open one lives.

    The files are overwritten in place, as an ACME client renews them.
    """
    first = made(tmp_path, "first")
    listener = free_listener()
    port = listener.getsockname()[1]
    config = http_config(
        tmp_path,
        port,
        tls_cert={"file": str(first.cert_file)},
        tls_key={"file": str(first.key_file)},
    )
    async with running_http(config, listener, scheme="https") as running:
        before = await _served_serial(port, first.ca_pem)
        async with httpx2.AsyncClient(verify=first.client_context(), headers=bearer(KEY_A)) as kept:
            assert (await kept.get(running.base("/"))).status_code == 404
            renewed = made(tmp_path, "renewed")
            first.cert_file.write_bytes(renewed.cert_file.read_bytes())
            first.key_file.write_bytes(renewed.key_file.read_bytes())
            os.kill(os.getpid(), signal.SIGHUP)
            await anyio.sleep(0.2)
            after = await _served_serial(port, renewed.ca_pem)
            # The connection opened before the reload still answers on its session.
            assert (await kept.get(running.base("/"))).status_code == 404
    renewed_serial = x509.load_pem_x509_certificate(renewed.cert_file.read_bytes()).serial_number
    assert before != after == renewed_serial
