"""Egress policy cases the first mutation run showed no test checked (REQ-SEC-006, REQ-TEST-019).

The first run of `make mutation MODULES=egress.policy` killed 335 of 376
mutants; these tests pin down what the survivors changed unnoticed: the
URL length bound before and after encoding, the bracketed IPv6 authority,
numeric last labels with a trailing dot, dotted-decimal octets up to 255,
non-ASCII names whose dots merge labels, the connect-time rules by name, and
the words of each refusal.
"""

from __future__ import annotations

from ipaddress import ip_address, ip_network

import pytest

from rypsok.core import limits
from rypsok.core.egress.errors import EgressDenied
from rypsok.core.egress.policy import AddressPolicy, AgentProfile, EgressRules

PREFIX = "https://example.com/"


def _refusal(url: str) -> EgressDenied | None:
    try:
        AgentProfile().check(url)
    except EgressDenied as exc:
        return exc
    return None


def _reason(url: str) -> str | None:
    refused = _refusal(url)
    return refused.reason if refused is not None else None


@pytest.mark.req("REQ-SEC-006", "REQ-FETCH-001", "REQ-TEST-019")
def test_the_url_bound_admits_exactly_its_length_as_given_and_as_sent() -> None:
    """REQ-SEC-006, REQ-FETCH-001: LIM-F9 characters pass, one more is `url_length`; the bound
    holds for the URL as sent too, where encoding may lengthen it (one `ü` is 6 characters)."""
    exact = PREFIX + "a" * (limits.URL_MAX_CHARS - len(PREFIX))
    assert len(exact) == limits.URL_MAX_CHARS and _reason(exact) is None
    assert _reason(exact + "a") == "url_length"
    encoded_exact = PREFIX + "a" * (limits.URL_MAX_CHARS - len(PREFIX) - 6) + "ü"
    assert _reason(encoded_exact) is None  # 2,043 typed, 2,048 sent
    assert _reason(encoded_exact + "a") == "url_length"
    assert _reason(PREFIX + "ü" * 1000) == "url_length"  # 1,020 typed, 6,020 sent


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://[2606:4700::1111]:443/", None),
        ("https://[2606:4700::1111]/", None),
        ("https://[::1]]/", "url_syntax"),  # the authority after the first "]" is no port
        ("https://[:::1]/", "url_syntax"),  # brackets the connection cannot parse
        ("https://example.123./", "url_host"),  # a number as last label, with a dot after
        ("https://1.2.3.4./", "url_host"),
        ("https://bücher.123./", "url_host"),  # IDNA keeps the number as last label
        ("https://1.2.3.255/", None),  # four decimal octets up to 255 are an address
        ("https://1.2.3.256/", "url_host"),
        ("https://bücher。de/", "url_host"),  # an ideographic dot merges two labels
        # Digits of another script: the connection would drop this port and use 443.
        ("https://example.com:\u066443/", "url_syntax"),
        ("https://example.com:4\u0664/", "url_syntax"),
    ],
)
def test_hosts_are_read_one_way_or_refused(url: str, reason: str | None) -> None:
    """REQ-SEC-006: bracketed IPv6 with a port, numeric last labels, dotted-decimal octets and
    non-ASCII dots each give the verdict of the documented host reading."""
    assert _reason(url) == reason


@pytest.mark.req("REQ-SEC-006", "REQ-SEC-009", "REQ-TEST-019")
def test_connect_time_rules_by_name_apply_to_the_name_connected_for() -> None:
    """REQ-SEC-009: at connect time an allow rule by name opens a refused range for that name
    only, and a deny rule by name refuses even a public address."""
    private = ip_address("10.0.0.7")
    allowed = AddressPolicy(EgressRules.from_strings(allow=["intranet.example"]))
    assert allowed.judge("intranet.example", private) is None
    assert allowed.judge("other.example", private) == "private"
    denied = AddressPolicy(EgressRules.from_strings(deny=["evil.example"]))
    assert denied.judge("evil.example", ip_address("8.8.8.8")) == "deny_rule"
    assert denied.judge("good.example", ip_address("8.8.8.8")) is None


@pytest.mark.req("REQ-SEC-006", "REQ-SEC-009", "REQ-TEST-019")
def test_rules_compare_names_without_their_final_dot_only() -> None:
    """REQ-SEC-009: a host's and a rule's final dot are ignored, and nothing else is stripped:
    `example.cox` is not `example.co`. A network rule never matches a name alone."""
    rules = EgressRules.from_strings(deny=["Example.COX."], allow=["10.0.0.0/8"])
    assert rules.deny == ("example.cox",)
    assert rules.denies("example.cox.", None)
    assert not EgressRules(deny=("example.co",)).denies("example.coX", None)
    assert not rules.allows("intranet.example", None)
    assert rules.allows("intranet.example", ip_address("10.1.2.3"))


@pytest.mark.req("REQ-SEC-006", "REQ-SEC-009", "REQ-TEST-019")
def test_a_name_refused_by_a_deny_rule_names_the_rule_as_its_range() -> None:
    """REQ-SEC-009: a deny rule by name refuses before any lookup, with `deny_rule` as range."""
    profile = AgentProfile(EgressRules.from_strings(deny=["blocked.example"]))
    with pytest.raises(EgressDenied) as refused:
        profile.check("https://blocked.example/")
    assert refused.value.reason == "egress" and refused.value.range_name == "deny_rule"


@pytest.mark.req("REQ-SEC-006", "REQ-CFG-005", "REQ-TEST-019")
def test_a_host_rule_that_is_not_a_lower_case_ascii_name_is_refused_in_words() -> None:
    """REQ-CFG-005: a rule the connection's names could never equal is refused, saying why."""
    for rule in ("Example.com", "bücher.de", "a b"):
        with pytest.raises(ValueError) as refused:
            EgressRules(deny=(rule,))
        assert str(refused.value) == "an egress host rule must be a lower-case ASCII host name"
    assert EgressRules(allow=(ip_network("10.0.0.0/8"), ".example.com")).allow[1] == ".example.com"
