"""The engines' guarded wire on each event loop: asyncio's and uvloop's (where installed).

`rypsok serve` runs on uvloop where it is installed, and the whole suite with
it (tests/conftest.py); these tests of test_engine_get.py and test_wire.py run
here once on each loop, so a difference between the loops' transports (uvloop's
are not asyncio's classes; its TLS is its own) shows as a failure on one of them.
"""

from __future__ import annotations

import pytest

from rypsok.core.egress.client import EgressClient

from . import test_engine_get as engine_get
from . import test_wire as wire
from .conftest import LocalPKI, ScriptedResolver
from .test_engine_get import ClientFactory, make_client  # noqa: F401 (its fixture)
from .test_wire import client  # noqa: F401 (its fixture)

EVERY_LOOP = pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])


@EVERY_LOOP
@pytest.mark.req("REQ-TEST-005", "REQ-SEC-017", "REQ-RUST-002")
async def test_loopback_is_reached_only_through_an_allow_rule_on_each_loop(
    make_client: ClientFactory,  # noqa: F811
    pki: LocalPKI,
) -> None:
    """REQ-TEST-005, REQ-SEC-017: refused without the rule (no connection), reached with it."""
    await engine_get.test_loopback_is_reached_only_through_an_allow_rule(make_client, pki)


@EVERY_LOOP
@pytest.mark.req("REQ-SEC-017", "REQ-RUST-002")
async def test_explicit_endpoint_still_obeys_deny_rules_on_each_loop(
    make_client: ClientFactory,  # noqa: F811
) -> None:
    """REQ-SEC-017: a deny rule refuses an explicit endpoint before it connects."""
    await engine_get.test_explicit_endpoint_still_obeys_deny_rules(make_client)


@EVERY_LOOP
@pytest.mark.req("REQ-SEC-007", "REQ-SEC-017", "REQ-RUST-002")
async def test_tls_uses_the_hostname_while_connecting_to_the_judged_address_on_each_loop(
    make_client: ClientFactory,  # noqa: F811
    pki: LocalPKI,
    localhost_resolver: ScriptedResolver,
) -> None:
    """REQ-SEC-007, REQ-SEC-017: the loop's TLS checks the name on the judged address."""
    await engine_get.test_tls_uses_the_hostname_while_connecting_to_the_judged_address(
        make_client, pki, localhost_resolver
    )


@EVERY_LOOP
@pytest.mark.req("REQ-SEC-007", "REQ-TEST-005", "REQ-RUST-002")
async def test_rebinding_between_connections_is_refused_on_each_loop(
    make_client: ClientFactory,  # noqa: F811
    pki: LocalPKI,
) -> None:
    """REQ-SEC-007, REQ-TEST-005: each connection is judged on its own resolution."""
    await engine_get.test_rebinding_between_connections_is_refused(make_client, pki)


@EVERY_LOOP
@pytest.mark.req("REQ-PERF-001", "REQ-RUST-002")
async def test_kept_alive_connections_are_reused_and_a_speaking_idle_one_dropped_on_each_loop(
    make_client: ClientFactory,  # noqa: F811
    pki: LocalPKI,
    client: EgressClient,  # noqa: F811
) -> None:
    """REQ-PERF-001: one pooled connection for sequential requests; stray bytes drop it."""
    await engine_get.test_connections_are_kept_alive_and_reused(make_client, pki)
    await wire.test_an_idle_connection_the_server_speaks_on_is_not_reused(client)
