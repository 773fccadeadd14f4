"""Shared test configuration.

Tests never reach the network: name resolution inside the test process is
limited to loopback names, so a test that would reach a real provider fails
at once instead of hanging on DNS (the build machines reach only the package
registries anyway).

A test marked `pytest.mark.asyncio(loop_factories=[...])` runs once on each
loop it names, "asyncio" and "uvloop" (skipped where uvloop is not installed).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

LoopFactory = Callable[[], asyncio.AbstractEventLoop]

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


def _every_loop() -> dict[str, LoopFactory]:
    loops: dict[str, LoopFactory] = {"asyncio": asyncio.new_event_loop}
    try:
        import uvloop  # noqa: PLC0415 (not installed on Windows)
    except ImportError:
        return loops
    loops["uvloop"] = uvloop.new_event_loop
    return loops


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    """asyncio's loop; every loop for a test that names the ones it runs on."""
    marker = item.get_closest_marker("asyncio")
    if marker is not None and "loop_factories" in marker.kwargs:
        return _every_loop()
    return {"served": asyncio.new_event_loop}
