"""A real redis-server for tests, on a Unix socket in a temporary directory.

Never a mock (issue 12): the fixture starts the Debian package's
`redis-server` with no persistence and no TCP port, so nothing outside the
test can reach it, and tests may kill and restart it on the same socket.
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

HMAC_KEY = "synthetic-hmac-key-for-tests-0123456789"


class RedisServer:
    def __init__(self, directory: pathlib.Path, *, password: str | None = None) -> None:
        self.directory = directory
        self.socket = directory / "redis.sock"
        self.password = password  # requirepass: clients must authenticate
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is missing: apt-get install redis-server (see README)")
        self.process = subprocess.Popen(
            [binary, "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--dir", str(self.directory),
             *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail("redis-server exited at start")
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(self.socket))
                probe.sendall(b"PING\r\n")
                if probe.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # up, with a password
                    return
            time.sleep(0.02)
        pytest.fail("redis-server did not answer within 10 s")

    def kill(self) -> None:
        """SIGKILL: Redis gone at once, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(5)
        self.socket.unlink(missing_ok=True)

    def command(self, *args: str) -> Any:
        """One command over a fresh synchronous client (the test's view of Redis)."""
        import redis  # noqa: PLC0415

        with redis.Redis(unix_socket_path=str(self.socket), password=self.password) as client:
            return client.execute_command(*args)

    def dump(self) -> list[tuple[bytes, bytes]]:
        """Every key with a readable form of its value: what a Redis dump would show."""
        import redis  # noqa: PLC0415

        rows = []
        with redis.Redis(unix_socket_path=str(self.socket), password=self.password) as client:
            for key in client.scan_iter():
                kind = client.type(key)
                if kind == b"string":
                    value = client.get(key) or b""
                elif kind == b"hash":
                    value = repr(client.hgetall(key)).encode()
                elif kind == b"zset":
                    value = repr(client.zrange(key, 0, -1, withscores=True)).encode()
                else:
                    value = b""
                rows.append((key, value))
        return rows


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    # A short path: Unix socket paths are limited to about 100 bytes.
    directory = pathlib.Path(tempfile.mkdtemp(prefix="rk"))
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.kill()
        shutil.rmtree(directory, ignore_errors=True)


def redis_section(server: RedisServer, **cache: Any) -> dict[str, Any]:
    """[cache] for the Redis backend, URL and HMAC key by file reference (REQ-CFG-004)."""
    (server.directory / "url").write_text(server.url + "\n", encoding="utf-8")
    (server.directory / "hmac").write_text(HMAC_KEY + "\n", encoding="utf-8")
    for secret in ("url", "hmac"):  # private, or serve refuses them
        (server.directory / secret).chmod(0o600)
    return {
        "backend": "redis",
        "redis_url": {"file": str(server.directory / "url")},
        "hmac_key": {"file": str(server.directory / "hmac")},
        # Generous for a shared 2-core build machine; the default is LIM-K4.
        "operation_ms": 500,
        **cache,
    }
