"""The refused-range table and its canonical forms (REQ-SEC-006, REQ-TEST-005)."""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import pytest

from rypsok.core.egress.policy import NO_RULES, AddressPolicy, EgressRules
from rypsok.core.egress.ranges import (
    IPV4_REFUSED,
    IPV6_REFUSED,
    RANGE_NAMES,
    embedded_ipv4,
    judge_address,
)

# Every range the specification and the design brief name, with the name it
# must be refused under when no more specific entry covers the sample.
REQUIRED_V4 = {
    "0.0.0.0/8": "this_network",
    "10.0.0.0/8": "private",
    "100.64.0.0/10": "cgnat",
    "127.0.0.0/8": "loopback",
    "169.254.0.0/16": "link_local",
    "172.16.0.0/12": "private",
    "192.0.0.0/24": "ietf_protocol",
    "192.0.2.0/24": "documentation",
    "192.31.196.0/24": "as112",
    "192.88.99.0/24": "6to4_relay",
    "192.168.0.0/16": "private",
    "192.175.48.0/24": "as112",
    "198.18.0.0/15": "benchmarking",
    "198.51.100.0/24": "documentation",
    "203.0.113.0/24": "documentation",
    "224.0.0.0/4": "multicast",
    "240.0.0.0/4": "reserved",
    "255.255.255.255/32": "broadcast",
    "169.254.169.254/32": "cloud_metadata",
    "100.100.100.200/32": "cloud_metadata",
}
REQUIRED_V6 = {
    "::/128": "unspecified",
    "::1/128": "loopback",
    "fc00::/7": "unique_local",
    "fe80::/10": "link_local",
    "fec0::/10": "site_local",
    "ff00::/8": "multicast",
    "2001:2::/48": "benchmarking",
    "2001:db8::/32": "documentation",
    "3fff::/20": "documentation",
    "64:ff9b:1::/48": "nat64",
    "100::/64": "discard_only",
    "2001:20::/28": "orchid",
    "2001:4:112::/48": "as112",
    "2620:4f:8000::/48": "as112",
    "fd00:ec2::254/128": "cloud_metadata",
}

GLOBAL_V4 = ["1.1.1.1", "8.8.8.8", "9.9.9.9", "93.184.215.14", "151.101.1.69"]
GLOBAL_V6 = ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80e::200e"]


def _samples(network: str) -> list[str]:
    """First, last and a middle address of a network."""
    net = ip_network(network)
    return sorted({str(net[0]), str(net[-1]), str(net[net.num_addresses // 2])})


def _more_specific(address: str, table: tuple[tuple[object, str], ...], network: str) -> bool:
    """Whether an entry before `network` in the table also covers `address`."""
    for entry, _ in table:
        if str(entry) == str(ip_network(network)):
            return False
        if ip_address(address) in entry:  # type: ignore[operator]
            return True
    return False


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005")
@pytest.mark.parametrize(("network", "name"), sorted(REQUIRED_V4.items()))
def test_every_required_ipv4_range_is_refused_under_its_name(network: str, name: str) -> None:
    """REQ-SEC-006, REQ-TEST-005: each IPv4 range is refused at its edges and middle."""
    for address in _samples(network):
        refused = judge_address(IPv4Address(address))
        assert refused is not None, address
        if not _more_specific(address, IPV4_REFUSED, network):
            assert refused == name, address


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005")
@pytest.mark.parametrize(("network", "name"), sorted(REQUIRED_V6.items()))
def test_every_required_ipv6_range_is_refused_under_its_name(network: str, name: str) -> None:
    """REQ-SEC-006, REQ-TEST-005: each IPv6 range is refused at its edges and middle."""
    for address in _samples(network):
        refused = judge_address(IPv6Address(address))
        assert refused is not None, address
        if not _more_specific(address, IPV6_REFUSED, network):
            assert refused == name, address


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize(("network", "name"), [(str(n), name) for n, name in IPV4_REFUSED])
def test_every_ipv4_table_entry_refuses_its_edges(network: str, name: str) -> None:
    """REQ-SEC-006: no entry of the IPv4 table is dead (each refuses its first and last)."""
    for address in _samples(network):
        assert judge_address(IPv4Address(address)) is not None


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize(("network", "name"), [(str(n), name) for n, name in IPV6_REFUSED])
def test_every_ipv6_table_entry_refuses_its_edges(network: str, name: str) -> None:
    """REQ-SEC-006: no entry of the IPv6 table is dead (each refuses its first and last)."""
    for address in _samples(network):
        assert judge_address(IPv6Address(address)) is not None


def _v4_samples() -> list[tuple[str, str]]:
    return [(address, network) for network in REQUIRED_V4 for address in _samples(network)]


def _embedding_forms(v4: IPv4Address) -> dict[str, IPv6Address]:
    """The IPv6 addresses that carry `v4`, in each form the table canonicalizes."""
    value = int(v4)
    global_v4 = int(IPv4Address("8.8.8.8"))
    return {
        "mapped": IPv6Address((0xFFFF << 32) | value),
        "compatible": IPv6Address(value),
        "nat64": IPv6Address((0x64FF9B << 96) | value),
        "6to4": IPv6Address((0x2002 << 112) | (value << 80) | 1),
        "teredo_server": IPv6Address(
            (0x20010000 << 96) | (value << 64) | (~global_v4 & 0xFFFFFFFF)
        ),
        "teredo_client": IPv6Address(
            (0x20010000 << 96) | (global_v4 << 64) | (~value & 0xFFFFFFFF)
        ),
    }


@pytest.mark.req("REQ-SEC-006", "REQ-TEST-005")
@pytest.mark.parametrize(("address", "network"), _v4_samples())
def test_refused_ipv4_is_refused_in_every_ipv6_form(address: str, network: str) -> None:
    """REQ-SEC-006, REQ-TEST-005: mapped, compatible, NAT64, 6to4 and Teredo forms are refused."""
    v4 = IPv4Address(address)
    expected = judge_address(v4)
    assert expected is not None
    for form, v6 in _embedding_forms(v4).items():
        if form == "compatible" and int(v4) <= 1:
            continue  # ::, ::1 are the unspecified and loopback addresses themselves
        assert judge_address(v6) == expected, (form, str(v6))


@pytest.mark.req("REQ-SEC-006")
def test_embedded_forms_decode_to_the_carried_address() -> None:
    """REQ-SEC-006: canonicalization reads the address each form carries."""
    v4 = IPv4Address("192.0.2.45")
    forms = _embedding_forms(v4)
    for form in ("mapped", "compatible", "nat64", "6to4"):
        assert embedded_ipv4(forms[form]) == (v4,), form
    # RFC 4380's own example: server 65.54.227.120, client 192.0.2.45.
    teredo = IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2")
    assert embedded_ipv4(teredo) == (IPv4Address("65.54.227.120"), IPv4Address("192.0.2.45"))
    assert judge_address(teredo) == "documentation"


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize("address", GLOBAL_V4 + GLOBAL_V6)
def test_global_unicast_is_allowed(address: str) -> None:
    """REQ-SEC-006: ordinary global unicast addresses pass."""
    assert judge_address(ip_address(address)) is None


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize("address", GLOBAL_V4)
def test_carrier_forms_of_a_global_address(address: str) -> None:
    """REQ-SEC-006: only the mapped form of a global v4 passes; tunnels and NAT64 never do."""
    forms = _embedding_forms(IPv4Address(address))
    assert judge_address(forms["mapped"]) is None
    assert judge_address(forms["6to4"]) == "6to4"
    assert judge_address(forms["teredo_client"]) == "teredo"
    assert judge_address(forms["teredo_server"]) == "teredo"
    assert judge_address(forms["nat64"]) == "nat64"
    assert judge_address(forms["compatible"]) == "ipv4_compatible"


@pytest.mark.req("REQ-SEC-006")
def test_tunnelled_addresses_are_admitted_only_by_an_allow_rule() -> None:
    """REQ-SEC-006: 6to4 and Teredo are refused whatever they carry, unless the operator allows."""
    six_to_four = IPv6Address("2002:808:808::1")  # carries 8.8.8.8
    teredo = IPv6Address("2001:0:4136:e378:8000:63bf:f7f7:f7f7")  # public server and client
    policy = AddressPolicy(NO_RULES)
    assert policy.judge("example.org", six_to_four) == "6to4"
    assert policy.judge("example.org", teredo) == "teredo"
    operator = AddressPolicy(EgressRules.from_strings(allow=["2002::/16", "2001::/32"]))
    assert operator.judge("example.org", six_to_four) is None
    assert operator.judge("example.org", teredo) is None


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize(
    "address", ["4000::1", "8000::1", "c000::1", "e000::1", "f000::1", "::2:0:0:1", "1::1"]
)
def test_ipv6_outside_global_unicast_is_refused(address: str) -> None:
    """REQ-SEC-006: anything outside 2000::/3 is refused."""
    assert judge_address(IPv6Address(address)) == "not_global_unicast"


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("168.63.129.16", "cloud_metadata"),
        ("169.254.170.2", "cloud_metadata"),
        ("192.0.0.9", "ietf_protocol"),  # PCP anycast: is_global says True
        ("192.52.193.1", "amt"),  # is_global says True
        ("5f00::1", "srv6_sid"),  # is_global says True
        ("64:ff9b::808:808", "nat64"),  # is_global says True
        ("2001:1::1", "ietf_protocol"),
        ("2001:3::1", "ietf_protocol"),
        ("::ffff:0:7f00:1", "ipv4_translated"),
        ("fe80::1%eth0", "link_local"),
        ("233.252.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
    ],
)
def test_addresses_named_precisely(address: str, name: str) -> None:
    """REQ-SEC-006: metadata, anycast and translator addresses the stdlib calls global."""
    assert judge_address(ip_address(address)) == name


@pytest.mark.req("REQ-SEC-006")
@pytest.mark.parametrize(
    "address",
    [
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.255",
        "192.0.3.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
        "2001:200::1",
        "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:db9::",
        "3ffe:ffff::1",
        "3fff:1000::",
    ],
)
def test_neighbours_of_refused_ranges_are_allowed(address: str) -> None:
    """REQ-SEC-006: the table refuses its ranges exactly, not their neighbours."""
    assert judge_address(ip_address(address)) is None


@pytest.mark.req("REQ-SEC-016")
def test_range_names_are_a_fixed_vocabulary() -> None:
    """REQ-SEC-016: every refusal name is a lower-case identifier from the table."""
    names = {name for _, name in IPV4_REFUSED} | {name for _, name in IPV6_REFUSED}
    assert names <= RANGE_NAMES
    assert all(re.fullmatch(r"[0-9a-z_]+", name) for name in RANGE_NAMES)
