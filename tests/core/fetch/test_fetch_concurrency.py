"""LIM-C3 and LIM-C4 through real MCP sessions: fetches waiting for a busy host hold no slot.

Two or three local page servers stand for different sites: each listens on
its own loopback address (127.0.0.1, .2, .3), which the production egress
policy reaches only through the allow rule injected here, so each is a host
of its own for LIM-C4.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import pytest

from rypsok.core import limits
from rypsok.core.callers import LOCAL
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import call_tool, config_from, wait_until

HTML = {"content-type": "text/html; charset=utf-8"}
SLOW = Route(delay_s=10.0, headers=HTML, body=b"<main><p>slow page</p></main>")
FAST = Route(headers=HTML, body=b"<main><p>fast page</p></main>")


@contextlib.asynccontextmanager
async def sites(*routes: dict[str, Route]) -> AsyncIterator[list[ProviderServer]]:
    """One page server per table, the n-th on 127.0.0.n+1."""
    async with contextlib.AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(ProviderServer(table, host=f"127.0.0.{n + 1}"))
            for n, table in enumerate(routes)
        ]
        yield servers


def services_for(servers: Iterable[ProviderServer], **fetch: Any) -> Services:
    servers = list(servers)
    config = config_from({
        "egress": {"allow": [f"127.0.0.{n + 1}/32" for n in range(len(servers))]},
        "fetch": {"allow_http": True,
                  "ports": [int(s.base_url.rsplit(":", 1)[1]) for s in servers], **fetch},
    })  # fmt: skip
    return Services(config)


async def fetch(services: Services, url: str) -> dict[str, Any]:
    payload, _ = await call_tool(services, "web_fetch", {"url": url})
    return payload


def most_at_once(starts: Iterable[float], lasting_s: float) -> int:
    """The most of these requests a server held at one time, each for at least `lasting_s`.

    The page server answers a slow route only `lasting_s` after the request
    arrived, so each request was in flight for all of [arrival, arrival +
    lasting_s): counting overlaps of those spans (a little shorter, so that a
    request sent as the previous answer came in is not counted with it) gives
    a lower bound of what rypsok had in flight, measured outside rypsok.
    """
    edges = sorted(
        [(start, 1) for start in starts] + [(start + lasting_s - 0.05, -1) for start in starts]
    )
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


@pytest.mark.req("REQ-SEC-012")
async def test_fetches_queued_for_a_slow_host_leave_another_hosts_fetch_prompt() -> None:
    """REQ-SEC-012: 12 fetches of a slow site (LIM-C4 = 2 in flight) do not hold up another site.

    At the default limits the ten fetches waiting for the slow site's host
    slots hold no LIM-C3 slot while they wait, so a fetch of another site is
    answered while the slow site still holds its first two requests. Had the
    waiting fetches kept their LIM-C3 slots (the defect this guards), the
    other site's fetch would wait for the slow ones, 10 s a round.
    """
    async with sites({"/slow": SLOW}, {"/fast": FAST}) as (slow_site, fast_site):
        services = services_for((slow_site, fast_site))
        slots = services.fetch_pipeline.slots
        assert (await fetch(services, fast_site.url("/fast")))["outcome"] == "ok"  # warmed up
        slow_answers: list[dict[str, Any]] = []

        async def slow() -> None:
            slow_answers.append(await fetch(services, slow_site.url("/slow")))

        async with anyio.create_task_group() as group:
            for _ in range(12):
                group.start_soon(slow)
            await wait_until(lambda: len(slow_site.requests_to("/slow")) >= 2, 10)
            with anyio.fail_after(SLOW.delay_s):
                fast = await fetch(services, fast_site.url("/fast"))
            sent_to_slow = len(slow_site.requests_to("/slow"))
            fetch_slots_held = slots.in_flight.held_by(LOCAL)
            group.cancel_scope.cancel()  # the slow fetches are not waited for
        await services.aclose()
    assert fast["outcome"] == "ok", fast
    assert slow_answers == []  # answered while every slow fetch was still pending
    assert sent_to_slow == limits.FETCHES_PER_HOST  # LIM-C4: the other ten wait unsent
    assert fetch_slots_held == limits.FETCHES_PER_HOST  # ... and hold no LIM-C3 slot


@pytest.mark.req("REQ-SEC-012")
async def test_fetch_slots_are_never_exceeded_and_never_left_idle() -> None:
    """REQ-SEC-012: LIM-C3 = 3 and LIM-C4 = 2 across two slow sites, measured at the servers.

    Three fetches of each site: never more than two in flight at a site, never
    more than three in all, and three at once at the start (a hop that can
    proceed is not kept waiting while a LIM-C3 slot is free).
    """
    lasting_s = 1.0
    page = Route(delay_s=lasting_s, headers=HTML, body=b"<main><p>page</p></main>")
    async with sites({"/p": page}, {"/p": page}) as servers:
        services = services_for(servers, fetches_in_flight=3, fetches_per_host=2)
        answers: list[dict[str, Any]] = []

        async def one(site: ProviderServer) -> None:
            answers.append(await fetch(services, site.url("/p")))

        async with anyio.create_task_group() as group:
            for site in (*servers, *servers, *servers):
                group.start_soon(one, site)
        await services.aclose()
    assert [a["outcome"] for a in answers] == ["ok"] * 6
    per_site = [[r.arrived for r in site.requests_to("/p")] for site in servers]
    assert all(most_at_once(starts, lasting_s) <= 2 for starts in per_site)  # LIM-C4
    assert most_at_once([t for starts in per_site for t in starts], lasting_s) == 3  # LIM-C3


@pytest.mark.req("REQ-SEC-012")
async def test_a_fetch_waiting_for_its_host_blocks_nobody_and_keeps_to_its_deadline() -> None:
    """REQ-SEC-012: LIM-C3 = 2, LIM-C4 = 1: a second fetch of a hanging site waits for its host.

    It holds no LIM-C3 slot while it waits, so a third site's fetch is answered
    at once. Its request goes out only when the first fetch ends at LIM-F5,
    and it too ends unavailable (deadline) at its own LIM-F5. LIM-F5 is 4 s so that
    the third fetch has that long to be answered on a loaded machine.
    """
    async with sites({"/hang": Route(hang=True)}, {"/fast": FAST}) as (hanging, other):
        services = services_for(
            (hanging, other), fetches_in_flight=2, fetches_per_host=1,
            ceiling_ms=4_000, timeout_ms=4_000, connect_timeout_ms=1_000,
        )  # fmt: skip
        assert (await fetch(services, other.url("/fast")))["outcome"] == "ok"  # warmed up
        stuck: list[tuple[dict[str, Any], float]] = []

        async def fetch_hanging() -> None:
            started = anyio.current_time()
            answer = await fetch(services, hanging.url("/hang"))
            stuck.append((answer, anyio.current_time() - started))

        async with anyio.create_task_group() as group:
            group.start_soon(fetch_hanging)
            await wait_until(lambda: hanging.requests_to("/hang"), 5)
            # A second later: started at once, its own LIM-F5 could end it in the instant
            # the first fetch frees the host, before its request went out (seen once).
            await anyio.sleep(1.0)
            group.start_soon(fetch_hanging)
            await wait_until(lambda: services.fetch_pipeline.slots.waiting_hops() == 1, 5)
            fast = await fetch(services, other.url("/fast"))
            answered_while_both_waited = stuck == []
        await services.aclose()
    assert fast["outcome"] == "ok" and answered_while_both_waited
    first, second = (r.arrived for r in hanging.requests_to("/hang"))
    assert second - first > 3.0  # sent when the first ended at LIM-F5 (4 s), not before
    for answer, elapsed_s in stuck:
        assert answer["error"]["kind"] == "unavailable", answer
        assert answer["error"]["detail"]["reason"] == "deadline"
        # The read timeout and LIM-F5 are equal here, so either may end the first fetch.
        assert answer["error"]["message"] in {
            "The fetch hit its time limit; retry later.",
            "The site did not answer in time; retry later.",
        }
        assert elapsed_s < 4.0 + 2.0  # LIM-F5, with slack for a loaded machine
