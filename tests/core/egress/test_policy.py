"""Profiles and operator rules, judged on URLs (REQ-SEC-005…009, REQ-SEC-017, REQ-TEST-005)."""

from __future__ import annotations

import urllib.parse
from ipaddress import ip_address, ip_network

import pytest

from rypsok.core import limits
from rypsok.core.egress.errors import DENIED_REASONS, EgressDenied
from rypsok.core.egress.policy import (
    AddressPolicy,
    AgentProfile,
    EgressRules,
    EngineProfile,
)

LOOPBACK_RULES = EgressRules(allow=(ip_network("127.0.0.1/32"),))


def _reason(call: object) -> str | None:
    try:
        call()  # type: ignore[operator]
    except EgressDenied as exc:
        return exc.reason
    return None


# (url, reason or None) for the agent-directed profile with default settings.
AGENT_CASES: list[tuple[str, str | None]] = [
    # accepted
    ("https://example.com/", None),
    ("https://EXAMPLE.com./path?q=1#frag", None),
    ("https://example.com:443/", None),
    ("https://example.com:0443/", None),
    ("https://bücher.de/", None),
    ("https://xn--bcher-kva.de/", None),
    ("https://a_b.example.com/", None),
    ("https://8.8.8.8/", None),
    ("https://[2606:4700:4700::1111]/", None),
    ("https://example.com#@evil.com", None),
    ("https://example.com/a b", None),
    # scheme
    ("http://example.com/", "scheme"),
    ("ftp://example.com/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://example.com/", "scheme"),
    # syntax
    ("javascript:alert(1)", "url_syntax"),
    ("https:example.com", "url_syntax"),
    ("https:/example.com/", "url_syntax"),
    ("//example.com/", "url_syntax"),
    ("https:///example.com/", "url_syntax"),
    ("https://example.com:/", "url_syntax"),
    ("https://example.com:44x/", "url_syntax"),
    ("https://example.com\\@evil.com/", "url_syntax"),
    ("https://example.com/\\..\\x", "url_syntax"),
    ("https://example.com/\ud800", "url_syntax"),  # a lone surrogate no encoding carries
    ("https://exa\tmple.com/", "url_host"),
    ("https://example.com/" + "a" * limits.URL_MAX_CHARS, "url_length"),
    # credentials and '@'
    ("https://user:pw@example.com/", "url_credentials"),
    ("https://user@example.com/", "url_credentials"),
    ("https://@example.com/", "url_credentials"),
    ("https://a@b@example.com/", "url_credentials"),
    ("https://example.com@127.0.0.1/", "url_credentials"),
    # host notations that readers disagree on
    ("https://%31%32%37.0.0.1/", "url_host"),
    ("https://ex%41mple.com/", "url_host"),
    ("https://[fe80::1%25eth0]/", "url_host"),
    ("https://[::1%eth0]/", "url_host"),
    ("https://[v1.fe]/", "url_host"),
    ("https://[::1/", "url_host"),
    ("https://exa\udc00mple.com/", "url_host"),
    ("https://１２７.０.０.１/", "url_host"),
    ("https://ｅｘａｍｐｌｅ.com/", "url_host"),
    ("https://example。com/", "url_host"),
    ("https://exa mple.com/", "url_host"),
    ("https://.example.com/", "url_host"),
    ("https://example..com/", "url_host"),
    ("https://exa!mple.com/", "url_host"),
    ("https://2130706433/", "url_host"),
    ("https://0x7f.1/", "url_host"),
    ("https://0x7f000001/", "url_host"),
    ("https://0X7F.0.0.1/", "url_host"),
    ("https://017700000001/", "url_host"),
    ("https://0177.0.0.1/", "url_host"),
    ("https://127.1/", "url_host"),
    ("https://127.0.1/", "url_host"),
    ("https://127.0.0.01/", "url_host"),
    ("https://127.0.0.1./", "url_host"),
    ("https://1.2.3.4.5/", "url_host"),
    ("https://256.0.0.1/", "url_host"),
    ("https://example.0x1/", "url_host"),
    ("https://example.123/", "url_host"),
    ("https://ü127.0.0.1/", "url_host"),
    # ports (LIM-F8)
    ("https://example.com:80/", "port"),
    ("https://example.com:8443/", "port"),
    ("https://example.com:22/", "port"),
    ("https://example.com:99999/", "port"),
    # refused destinations given as literals
    ("https://127.0.0.1/", "egress"),
    ("https://0.0.0.0/", "egress"),
    ("https://10.0.0.1/", "egress"),
    ("https://169.254.169.254/latest/meta-data/", "egress"),
    ("https://100.100.100.200/", "egress"),
    ("https://[::1]/", "egress"),
    ("https://[::]/", "egress"),
    ("https://[::ffff:127.0.0.1]/", "egress"),
    ("https://[::FFFF:7f00:1]/", "egress"),
    ("https://[::127.0.0.1]/", "egress"),
    ("https://[64:ff9b::7f00:1]/", "egress"),
    ("https://[2002:7f00:1::1]/", "egress"),
    ("https://[fd00:ec2::254]/", "egress"),
    ("https://[fe80::1]/", "egress"),
    ("https://[fc00::1]/", "egress"),
    ("https://[ff02::1]/", "egress"),
]


@pytest.mark.req("REQ-SEC-006", "REQ-SEC-009", "REQ-TEST-005")
@pytest.mark.parametrize(("url", "reason"), AGENT_CASES)
def test_agent_profile_judges_urls(url: str, reason: str | None) -> None:
    """REQ-SEC-006, REQ-SEC-009, REQ-TEST-005: literals, notations, credentials, ports."""
    assert _reason(lambda: AgentProfile().check(url)) == reason


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-013")
@pytest.mark.parametrize(("url", "reason"), [case for case in AGENT_CASES if case[1] is None])
def test_accepted_urls_read_the_same_by_another_parser(url: str, reason: None) -> None:
    """REQ-SEC-006, REQ-TEST-013: an accepted URL's host is the same to urllib's parser."""
    host = AgentProfile().check(url).raw_host.decode("ascii")
    other = urllib.parse.urlsplit(url).hostname
    assert other is not None
    expected = other.encode("idna").decode("ascii") if not other.isascii() else other
    assert host.rstrip(".") == expected.rstrip(".")


@pytest.mark.req("REQ-SEC-006")
def test_agent_profile_returns_the_reading_the_connection_uses() -> None:
    """REQ-SEC-006: the checked URL is httpx2's reading: IDNA host, default port."""
    url = AgentProfile().check("https://Bücher.DE:443/a?b=1")
    assert url.raw_host == b"xn--bcher-kva.de"
    assert url.port is None
    assert url.scheme == "https"


@pytest.mark.req("REQ-SEC-009")
def test_http_and_port_80_only_when_allowed() -> None:
    """REQ-SEC-009: http and its port only when the operator allowed http."""
    profile = AgentProfile(allow_http=True)
    assert _reason(lambda: profile.check("http://example.com/")) is None
    assert _reason(lambda: profile.check("https://example.com:80/")) is None
    assert _reason(lambda: profile.check("http://example.com:8080/")) == "port"
    assert profile.ports == frozenset({443, 80})
    assert AgentProfile().ports == frozenset({443})


@pytest.mark.req("REQ-SEC-009")
def test_operator_may_add_ports() -> None:
    """REQ-SEC-009: LIM-F8 ports plus the operator's."""
    profile = AgentProfile(extra_ports=(8443,))
    assert _reason(lambda: profile.check("https://example.com:8443/")) is None
    assert _reason(lambda: profile.check("https://example.com:8444/")) == "port"


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005")
def test_allow_rule_opens_a_refused_literal_and_deny_wins() -> None:
    """REQ-SEC-006, REQ-TEST-005: allow is the only way in; deny wins over allow."""
    url = "https://127.0.0.1/"
    assert _reason(lambda: AgentProfile().check(url)) == "egress"
    assert _reason(lambda: AgentProfile(LOOPBACK_RULES).check(url)) is None
    both = EgressRules(allow=(ip_network("127.0.0.0/8"),), deny=(ip_network("127.0.0.1/32"),))
    assert _reason(lambda: AgentProfile(both).check(url)) == "egress"
    assert _reason(lambda: AgentProfile(both).check("https://127.0.0.2/")) is None


@pytest.mark.req("REQ-SEC-006")
def test_deny_rules_by_name_and_network() -> None:
    """REQ-SEC-006: operator deny rules refuse names, subdomains and networks."""
    rules = EgressRules.from_strings(deny=["tracker.example", ".internal.example", "8.8.8.0/24"])
    profile = AgentProfile(rules)
    assert _reason(lambda: profile.check("https://tracker.example/")) == "egress"
    assert _reason(lambda: profile.check("https://TRACKER.example./")) == "egress"
    assert _reason(lambda: profile.check("https://sub.tracker.example/")) is None
    assert _reason(lambda: profile.check("https://a.b.internal.example/")) == "egress"
    assert _reason(lambda: profile.check("https://internal.example/")) == "egress"
    assert _reason(lambda: profile.check("https://xinternal.example/")) is None
    assert _reason(lambda: profile.check("https://8.8.8.8/")) == "egress"
    assert _reason(lambda: profile.check("https://[::ffff:8.8.8.8]/")) == "egress"
    assert _reason(lambda: profile.check("https://8.8.4.4/")) is None


@pytest.mark.req("REQ-SEC-006")
def test_rules_judge_embedded_and_mapped_addresses() -> None:
    """REQ-SEC-006: deny sees through IPv6 carriers; allow covers only the mapped form."""
    rules = EgressRules(allow=(ip_network("127.0.0.1/32"),), deny=(ip_network("10.0.0.0/8"),))
    assert rules.allows(None, ip_address("::ffff:127.0.0.1"))
    assert not rules.allows(None, ip_address("64:ff9b::7f00:1"))
    assert rules.denies(None, ip_address("64:ff9b::a00:1"))
    assert rules.denies(None, ip_address("2002:a00:1::1"))
    policy = AddressPolicy(rules)
    assert policy.judge("x", ip_address("::ffff:127.0.0.1")) is None
    assert policy.judge("x", ip_address("64:ff9b::7f00:1")) == "loopback"
    assert policy.judge("x", ip_address("::ffff:10.1.2.3")) == "deny_rule"


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize("rule", ["Example.com", "bücher.de", "exa mple.com", "", "a..b"])
def test_host_rules_must_be_ascii_lower_case_names(rule: str) -> None:
    """REQ-SEC-006: a rule is compared with the ASCII form, so other forms are refused."""
    with pytest.raises(ValueError, match="host rule"):
        EgressRules(deny=(rule,))


@pytest.mark.req("REQ-SEC-006")
def test_rules_from_configuration_text() -> None:
    """REQ-SEC-006: CIDR text becomes a network, anything else a normalized name."""
    rules = EgressRules.from_strings(allow=["10.1.0.0/16", "::1/128", "Local.Test."])
    assert rules.allow == (ip_network("10.1.0.0/16"), ip_network("::1/128"), "local.test")
    with pytest.raises(ValueError, match="host rule"):
        EgressRules.from_strings(deny=["10.1.0.1/16"])  # host bits set: a typo, not a name


@pytest.mark.req("REQ-SEC-017")
@pytest.mark.parametrize(
    ("url", "explicit", "reason"),
    [
        ("https://api.example.com/search", False, None),
        ("http://api.example.com/search", False, "scheme"),
        ("http://api.example.com/search", True, None),
        ("ftp://api.example.com/", True, "scheme"),
        ("https://key:secret@api.example.com/", False, "url_credentials"),
        ("https://127.0.0.1:8888/", False, "egress"),
        ("https://[::1]/", False, "egress"),
        ("https://10.1.2.3/", False, "egress"),
        ("http://127.0.0.1:8888/", True, None),
        ("http://10.1.2.3/", True, None),
        ("https:///x", False, "url_syntax"),
        ("https://[v1.x]/", False, "url_syntax"),
    ],
)
def test_engine_profile(url: str, explicit: bool, reason: str | None) -> None:
    """REQ-SEC-017: HTTPS only and no private literal unless the endpoint is explicit."""
    assert _reason(lambda: EngineProfile().check(url, explicit_endpoint=explicit)) == reason


@pytest.mark.req("REQ-SEC-017")
def test_engine_profile_applies_deny_rules_to_explicit_endpoints() -> None:
    """REQ-SEC-017: explicit endpoints skip the range table, never the deny rules."""
    profile = EngineProfile(EgressRules.from_strings(deny=["10.0.0.0/8", "blocked.example"]))
    assert _reason(lambda: profile.check("http://10.1.2.3/", explicit_endpoint=True)) == "egress"
    assert (
        _reason(lambda: profile.check("https://blocked.example/", explicit_endpoint=True))
        == "egress"
    )
    explicit = profile.address_policy(explicit_endpoint=True)
    assert explicit.judge("h", ip_address("192.168.1.1")) is None
    assert explicit.judge("h", ip_address("10.0.0.1")) == "deny_rule"
    default = profile.address_policy(explicit_endpoint=False)
    assert default.judge("h", ip_address("192.168.1.1")) == "private"


@pytest.mark.req("REQ-SEC-016")
def test_refusal_text_is_the_reason_only() -> None:
    """REQ-SEC-016: str() of a refusal carries the reason, never the host or URL."""
    with pytest.raises(EgressDenied) as caught:
        AgentProfile().check("https://169.254.169.254/latest/meta-data/iam")
    assert str(caught.value) == "egress"
    assert caught.value.range_name == "cloud_metadata"
    assert "169.254" not in repr(caught.value)
    with pytest.raises(ValueError, match="unknown"):
        EgressDenied("some host text")
    assert {reason for _, reason in AGENT_CASES if reason} <= DENIED_REASONS
