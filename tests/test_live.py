"""`make live` output and exit status, on loopback only (REQ-TEST-003).

The live checks themselves reach real providers and are never part of the gate;
these tests run the same tool against a closed loopback port and a local fake
provider, to check that each engine gets one line and the exit status says
what happened.
"""

from __future__ import annotations

import asyncio
import pathlib
import socket
import sys

import pytest

from rypsok.core.engines.registry import known_ids
from tests.fakes.provider_server import ProviderServer, Route

ROOT = pathlib.Path(__file__).resolve().parents[1]
LIVE = ROOT / "tools" / "live.py"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


async def _live(config: pathlib.Path) -> tuple[int, list[str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(LIVE), "--config", str(config),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=90)
    assert not err.strip() or b"Traceback" not in err, err.decode()
    assert process.returncode is not None
    return process.returncode, out.decode().splitlines()


@pytest.mark.req("REQ-TEST-003")
@pytest.mark.timeout(120)
async def test_without_a_network_every_engine_is_unreachable_and_the_exit_is_3(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-TEST-003: with every request sent to a closed loopback port (the production egress
    client, its configured proxy) each enabled engine reports unreachable, the keyless ones
    are skipped, and the run exits 3: not success, and not a drift."""
    config = tmp_path / "rypsok.toml"
    config.write_text(
        f'schema_version = 1\n[egress]\nproxy = "http://127.0.0.1:{_closed_port()}"\n'
    )
    status, lines = await _live(config)
    by_engine = {line.split(": ")[1]: line for line in lines[:-1]}
    assert set(by_engine) == known_ids()
    for engine in ("wikipedia", "crossref", "arxiv", "hackernews"):
        assert by_engine[engine].startswith(f"live: {engine}: unreachable ("), by_engine[engine]
    assert by_engine["brave"] == "live: brave: skipped (no key or endpoint configured)"
    assert all(": unreachable (" in line or ": skipped (" in line for line in lines[:-1])
    assert lines[-1].startswith("live: 0 ok, 0 drifted, 0 refused, ")
    assert lines[-1].endswith("; exit 3")
    assert status == 3


@pytest.mark.req("REQ-TEST-003")
@pytest.mark.timeout(120)
async def test_ok_drifted_refused_and_unreachable_are_told_apart(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-003: one request per engine; a parsed answer is ok, a changed shape is
    drifted, a throttle is refused, a 5xx is unreachable; a drift decides the exit (1)."""
    routes = {
        "/wikipedia": Route.fixture("wikipedia", "ok.json"),
        "/crossref": Route.fixture("crossref", "wrong_shape.json"),
        "/hackernews": Route.fixture("hackernews", "ok.json", status=429),
        "/arxiv": Route(status=503, body=b"down"),
    }
    async with ProviderServer(routes) as server:
        lines = ["schema_version = 1"]
        for engine in sorted(known_ids()):
            lines.append(f"[engines.{engine}]")
            path = f"/{engine}"
            lines.append(
                f'endpoint = "{server.url(path)}"' if path in routes else "enabled = false"
            )
        config = tmp_path / "rypsok.toml"
        config.write_text("\n".join(lines) + "\n")
        status, out = await _live(config)
    assert "live: wikipedia: ok (" in "\n".join(out)
    assert "live: crossref: drifted (parse_failure: the answer no longer fits the driver)" in out
    assert "live: hackernews: refused (rate_limited)" in out
    assert "live: arxiv: unreachable (request_failure)" in out
    assert out[-1] == "live: 1 ok, 1 drifted, 1 refused, 1 unreachable; exit 1"
    assert status == 1
    assert sorted(r.path for r in server.requests) == sorted(routes)  # one request each
    assert all((r.header("user-agent") or "").startswith("rypsok/") for r in server.requests)
