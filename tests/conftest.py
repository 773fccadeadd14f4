"""Shared test configuration.

Tests never reach the network: name resolution inside the test process is
limited to loopback names, so a test that would reach a real provider fails
at once instead of hanging on DNS (the build machines reach only the package
registries anyway).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "localhost.localdomain"}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and name not in _LOOPBACK_NAMES and not name.startswith("127."):
            raise socket.gaierror(socket.EAI_NONAME, "tests reach loopback only")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)
    yield
