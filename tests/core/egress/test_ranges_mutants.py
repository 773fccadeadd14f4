"""Tests that kill mutants of the refused-range module that survived (REQ-TEST-019).

`make mutation` found each case here: a change to the module that no other
test noticed. Each test pins the behaviour at the exact edge the mutant moved.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pytest

from rypsok.core.egress.policy import EgressRules
from rypsok.core.egress.ranges import embedded_ipv4


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-019")
def test_the_first_ipv4_compatible_address_after_loopback_carries_its_ipv4() -> None:
    """REQ-SEC-006: `::` and `::1` are IPv6's own; from `::2` on, the IPv4-compatible form
    carries an IPv4 address, so a deny rule for it also denies the IPv6 spelling
    (the mutant `int(plain) > 2` dropped exactly `::2`)."""
    assert embedded_ipv4(IPv6Address("::1")) == ()
    assert embedded_ipv4(IPv6Address("::2")) == (IPv4Address("0.0.0.2"),)
    assert EgressRules.from_strings(deny=["0.0.0.2/32"]).denies(None, IPv6Address("::2"))
