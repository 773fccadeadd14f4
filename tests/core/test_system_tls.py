"""The egress CA store loaded in a thread while `serve` imports (issue 14 item 3).

The handle must give exactly the context the synchronous call gives, hand back
the thread's failure as raised, and a store that cannot be loaded must end
`serve` where and how the synchronous load ends `check`.
"""

from __future__ import annotations

import ssl
import subprocess
import sys

import httpx2
import pytest

from rypsok.core.egress.client import EgressClient
from rypsok.core.system_tls import build_system_context, start_system_context
from tests.support import child_env

_STORE_ERROR = "[X509: NO_CERTIFICATE_OR_CRL_FOUND] no certificate or crl found (test)"


def _unloadable_store(*args: object, **kwargs: object) -> ssl.SSLContext:
    raise ssl.SSLError(185090050, _STORE_ERROR)


@pytest.mark.req("REQ-SEC-017", "REQ-PERF-005")
def test_the_threaded_load_gives_the_context_of_the_synchronous_call() -> None:
    """REQ-SEC-017, REQ-PERF-005: same verify mode, hostname check and CA count as today."""
    loaded = start_system_context().result()
    expected = httpx2.create_ssl_context(verify=True, trust_env=False)
    for context in (loaded, build_system_context()):
        assert context.verify_mode == expected.verify_mode == ssl.CERT_REQUIRED
        assert context.check_hostname is expected.check_hostname is True
        assert context.cert_store_stats() == expected.cert_store_stats()
        assert context.options == expected.options


@pytest.mark.req("REQ-SEC-017", "REQ-PERF-005")
def test_the_thread_ignores_ssl_cert_file_like_the_synchronous_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-017: SSL_CERT_FILE/SSL_CERT_DIR change nothing in the threaded load."""
    expected = build_system_context().cert_store_stats()
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    monkeypatch.setenv("SSL_CERT_DIR", "/nonexistent")
    assert start_system_context().result().cert_store_stats() == expected


@pytest.mark.req("REQ-PERF-005")
def test_the_handle_re_raises_the_threads_error_and_the_client_joins_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PERF-005: the load's exception reaches the joiner, and EgressClient raises it."""
    monkeypatch.setattr(httpx2, "create_ssl_context", _unloadable_store)
    pending = start_system_context()
    with pytest.raises(ssl.SSLError, match="no certificate or crl found") as first:
        pending.result()
    with pytest.raises(ssl.SSLError) as from_client:
        EgressClient(user_agent="rypsok-test", system_context=pending)
    assert from_client.value is first.value


@pytest.mark.req("REQ-PERF-005")
def test_the_client_takes_the_context_from_the_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-PERF-005: with a handle, the client builds no second context of its own."""
    pending = start_system_context()
    pending.result()
    monkeypatch.setattr(httpx2, "create_ssl_context", _unloadable_store)
    EgressClient(user_agent="rypsok-test", system_context=pending)  # no SSLError: joined
    with pytest.raises(ssl.SSLError):
        EgressClient(user_agent="rypsok-test")  # without one it loads, as today


_IMPORTS_OF_THE_THREAD = """
import json, sys, threading
threading.Thread.start = lambda self: None  # the thread's work is run below, in the open
from rypsok.core.system_tls import start_system_context
pending = start_system_context()
before = set(sys.modules)
pending._thread.run()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@pytest.mark.req("REQ-PERF-005")
def test_the_thread_imports_nothing_the_importing_thread_could_be_importing() -> None:
    """REQ-PERF-005: every module the load needs is imported before the thread starts."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_OF_THE_THREAD],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout


_CHILD = f"""
import ssl, sys
import httpx2
def unloadable(*args, **kwargs):
    raise ssl.SSLError(185090050, {_STORE_ERROR!r})
httpx2.create_ssl_context = unloadable
from rypsok.cli import main
sys.exit(main([sys.argv[1]]))
"""


def _run_with_unloadable_store(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, command],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        check=False,
    )


@pytest.mark.req("REQ-PERF-005", "REQ-SEC-017")
def test_a_store_that_cannot_load_ends_serve_as_it_ends_check() -> None:
    """REQ-PERF-005, REQ-SEC-017: serve (threaded load) fails with check's (synchronous) error."""
    serve = _run_with_unloadable_store("serve")
    check = _run_with_unloadable_store("check")
    assert serve.returncode == check.returncode != 0
    assert serve.stdout == ""
    last_line = serve.stderr.strip().splitlines()[-1]
    assert last_line == check.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ssl.SSLError:")
    assert _STORE_ERROR in last_line
