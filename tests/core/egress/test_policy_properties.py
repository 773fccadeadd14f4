"""Property tests of the agent-directed URL judgement (REQ-TEST-013, REQ-SEC-006)."""

from __future__ import annotations

import urllib.parse
from ipaddress import ip_address

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.egress.errors import DENIED_REASONS, EgressDenied
from rypsok.core.egress.policy import AgentProfile
from rypsok.core.egress.ranges import judge_address

# Characters that separate, escape or confuse URL parts, and look-alikes.
_TRICKY = "/\\@:%.[]?#0123456789xX \t-_abcdefAZü。．１ｅ"
_SCHEMES = st.sampled_from(["https://", "http://", "HTTPS://", "https:", "https:/", "//", ""])
_HOSTS = st.sampled_from(
    [
        "example.com",
        "127.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "169.254.169.254",
        "2130706433",
        "0x7f.1",
        "bücher.de",
        "8.8.8.8",
        "",
    ]
)
_URLS = st.builds(
    lambda scheme, before, host, after: scheme + before + host + after,
    _SCHEMES,
    st.text(alphabet=_TRICKY, max_size=8),
    _HOSTS,
    st.text(alphabet=_TRICKY, max_size=12),
)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-006")
@settings(max_examples=600, deadline=None, derandomize=True)
@given(_URLS)
def test_judgement_is_total_and_safe(url: str) -> None:
    """REQ-TEST-013, REQ-SEC-006: any input is refused with a reason or read unambiguously."""
    try:
        checked = AgentProfile().check(url)
    except EgressDenied as exc:
        assert exc.reason in DENIED_REASONS
        return
    host = checked.raw_host.decode("ascii")
    assert checked.scheme == "https"
    assert checked.port in (None, 443)
    assert not checked.userinfo
    try:
        literal = ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        assert judge_address(literal) is None
    else:
        # A name never ends in a number: no resolver reads it as an address.
        assert not host.rstrip(".").rsplit(".", 1)[-1].isdigit()
    other = urllib.parse.urlsplit(url).hostname
    assert other is not None
    if other.isascii():
        assert other.rstrip(".") == host.rstrip(".")
    else:
        assert all(label.isascii() for label in host.split("."))
