"""HTTP mode's signal capture where the platform has no SIGHUP (Windows), R-11."""

from __future__ import annotations

import signal

import pytest
import uvicorn

from rypsok.mcp.http.serve import _Server


async def _app(scope: object, receive: object, send: object) -> None:  # never called
    raise AssertionError


@pytest.mark.req("REQ-OPS-002")
def test_signal_capture_starts_without_sighup_and_still_ends_on_sigterm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-OPS-002: without `signal.SIGHUP` the capture sets SIGINT and SIGTERM, then restores."""
    before = signal.getsignal(signal.SIGTERM)
    hangup_before = signal.getsignal(signal.SIGHUP)
    monkeypatch.delattr(signal, "SIGHUP")
    server = _Server(uvicorn.Config(_app), tls=None)
    with server.capture_signals():
        assert signal.getsignal(signal.SIGTERM) == server.handle_exit
        assert signal.getsignal(signal.Signals(1)) == hangup_before  # SIGHUP's number untouched
    assert signal.getsignal(signal.SIGTERM) == before
