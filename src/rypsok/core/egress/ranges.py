"""The address ranges no outbound connection may reach unless an operator rule allows it.

`judge_address` returns the name of the refused range an address falls in, or
None for an ordinary globally routable unicast address (REQ-SEC-006).

The table is written out from the IANA IPv4 and IPv6 Special-Purpose Address
Registries, the multicast registries and the providers' documented metadata
addresses. `ipaddress.is_global` is deliberately not used: in the Python
versions we support it calls NAT64, SRv6 SIDs, AS112, AMT, PCP/TURN anycast
and the Azure host address global, and its answers have changed between
patch releases.

Addresses that carry an IPv4 address inside an IPv6 one are canonicalized
before the table is read, so `::ffff:127.0.0.1` is judged as `127.0.0.1`:

    ::ffff:0:0/96   IPv4-mapped          judged as the IPv4 address
    ::/96           IPv4-compatible      deprecated; refused, named by the v4 if refused
    64:ff9b::/96    NAT64 well-known     refused, named by the v4 if refused
    2002::/16       6to4                 refused, named by the v4 if refused
    2001::/32       Teredo               refused, named by a v4 if refused

Everything in IPv6 outside 2000::/3 (global unicast) is refused.

6to4 and Teredo are tunnels: the packet goes to a relay, which forwards it
to an IPv4 address taken from the IPv6 one. Where that relay is and what it
can reach is decided outside the host (an anycast relay, a relay on the
site's own network, a Teredo server of the operator's ISP), so no judgement
of the embedded address here can say where the packet ends: a relay inside
the operator's network reaches private IPv4 space however public the
embedded address looks. Both mechanisms are deprecated for ordinary use
(RFC 7526 for the 6to4 anycast relays; Teredo is a last-resort NAT
traversal) and no web site needs them, so they are refused outright. An
operator whose network does route them can admit them with an allow rule
(`[egress] allow = ["2002::/16"]`), as for any refused range (REQ-SEC-006).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Final

__all__ = [
    "IPV4_REFUSED",
    "IPV6_REFUSED",
    "RANGE_NAMES",
    "judge_address",
]

IPAddress = IPv4Address | IPv6Address

# Most specific first: the first match names the refusal, so a metadata
# address inside link-local is reported as "cloud_metadata".
IPV4_REFUSED: Final[tuple[tuple[IPv4Network, str], ...]] = tuple(
    (IPv4Network(cidr), name)
    for cidr, name in (
        # Instance metadata and host endpoints reachable from inside a VM.
        ("169.254.169.254/32", "cloud_metadata"),  # AWS, GCP, Azure, OCI, DigitalOcean, …
        ("169.254.170.2/32", "cloud_metadata"),  # AWS ECS task metadata
        ("169.254.0.23/32", "cloud_metadata"),  # Tencent Cloud
        ("100.100.100.200/32", "cloud_metadata"),  # Alibaba Cloud
        ("168.63.129.16/32", "cloud_metadata"),  # Azure WireServer: inside public space
        ("192.0.0.192/32", "cloud_metadata"),  # Oracle Cloud (classic)
        ("255.255.255.255/32", "broadcast"),  # RFC 919
        ("0.0.0.0/32", "unspecified"),  # RFC 1122
        ("0.0.0.0/8", "this_network"),  # RFC 791
        ("10.0.0.0/8", "private"),  # RFC 1918
        ("100.64.0.0/10", "cgnat"),  # RFC 6598 shared address space
        ("127.0.0.0/8", "loopback"),  # RFC 1122
        ("169.254.0.0/16", "link_local"),  # RFC 3927
        ("172.16.0.0/12", "private"),  # RFC 1918
        # Includes the PCP and TURN anycast addresses IANA marks global:
        # protocol endpoints, never a web destination.
        ("192.0.0.0/24", "ietf_protocol"),  # RFC 6890
        ("192.0.2.0/24", "documentation"),  # RFC 5737 TEST-NET-1
        ("192.31.196.0/24", "as112"),  # RFC 7535
        ("192.52.193.0/24", "amt"),  # RFC 7450 anycast
        ("192.88.99.0/24", "6to4_relay"),  # RFC 7526 (deprecated anycast)
        ("192.168.0.0/16", "private"),  # RFC 1918
        ("192.175.48.0/24", "as112"),  # RFC 7534 direct delegation
        ("198.18.0.0/15", "benchmarking"),  # RFC 2544
        ("198.51.100.0/24", "documentation"),  # RFC 5737 TEST-NET-2
        ("203.0.113.0/24", "documentation"),  # RFC 5737 TEST-NET-3
        ("224.0.0.0/4", "multicast"),  # RFC 5771
        ("240.0.0.0/4", "reserved"),  # RFC 1112
    )
)

IPV6_REFUSED: Final[tuple[tuple[IPv6Network, str], ...]] = tuple(
    (IPv6Network(cidr), name)
    for cidr, name in (
        ("::/128", "unspecified"),  # RFC 4291
        ("::1/128", "loopback"),  # RFC 4291
        ("fd00:ec2::254/128", "cloud_metadata"),  # AWS IMDS over IPv6
        ("::ffff:0:0:0/96", "ipv4_translated"),  # RFC 2765 SIIT
        ("64:ff9b:1::/48", "nat64"),  # RFC 8215 local-use translation
        ("100::/64", "discard_only"),  # RFC 6666
        ("100:0:0:1::/64", "dummy_prefix"),  # RFC 9780
        ("2001:2::/48", "benchmarking"),  # RFC 5180
        ("2001:4:112::/48", "as112"),  # RFC 7535
        ("2001:10::/28", "orchid"),  # RFC 4843 (deprecated ORCHID)
        ("2001:20::/28", "orchid"),  # RFC 7343 ORCHIDv2
        # The rest of the IETF protocol block: anycast services, AMT, drone ids.
        # Teredo (2001::/32) is inside it and is named by its embedded
        # addresses (or "teredo") before this table is read.
        ("2001::/23", "ietf_protocol"),  # RFC 2928
        ("2001:db8::/32", "documentation"),  # RFC 3849
        ("3fff::/20", "documentation"),  # RFC 9637
        ("2620:4f:8000::/48", "as112"),  # RFC 7534 direct delegation
        ("5f00::/16", "srv6_sid"),  # RFC 9602
        ("fc00::/7", "unique_local"),  # RFC 4193
        ("fe80::/10", "link_local"),  # RFC 4291
        ("fec0::/10", "site_local"),  # RFC 3879 (deprecated)
        ("ff00::/8", "multicast"),  # RFC 4291
    )
)

_GLOBAL_UNICAST: Final = IPv6Network("2000::/3")
_NOT_GLOBAL_UNICAST: Final = "not_global_unicast"
_IPV4_MAPPED: Final = IPv6Network("::ffff:0:0/96")
_IPV4_COMPATIBLE: Final = IPv6Network("::/96")
_NAT64: Final = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR: Final = IPv6Network("2002::/16")
_TEREDO: Final = IPv6Network("2001::/32")

RANGE_NAMES: Final[frozenset[str]] = frozenset(
    {name for _, name in IPV4_REFUSED}
    | {name for _, name in IPV6_REFUSED}
    | {_NOT_GLOBAL_UNICAST, "ipv4_compatible", "nat64", "6to4", "teredo"}
)


def judge_address(addr: IPv4Address | IPv6Address) -> str | None:
    """The name of the refused range `addr` is in, or None when it may be connected to."""
    if isinstance(addr, IPv4Address):
        return _judge_ipv4(addr)
    return _judge_ipv6(addr)


def embedded_ipv4(addr: IPv6Address) -> tuple[IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries in one of the forms above."""
    # A scope id (fe80::1%eth0) plays no part in which range an address is in.
    plain = IPv6Address(int(addr))
    if plain in _IPV4_MAPPED or plain in _NAT64:
        return (IPv4Address(int(plain) & 0xFFFF_FFFF),)
    if plain in _IPV4_COMPATIBLE and int(plain) > 1:
        return (IPv4Address(int(plain)),)
    if plain in _SIX_TO_FOUR:
        return (IPv4Address((int(plain) >> 80) & 0xFFFF_FFFF),)
    if plain in _TEREDO:
        server = IPv4Address((int(plain) >> 64) & 0xFFFF_FFFF)
        client = IPv4Address(~int(plain) & 0xFFFF_FFFF)  # stored inverted (RFC 4380)
        return (server, client)
    return ()


def _judge_ipv4(addr: IPv4Address) -> str | None:
    for network, name in IPV4_REFUSED:
        if addr in network:
            return name
    return None


def _judge_ipv6(addr: IPv6Address) -> str | None:
    plain = IPv6Address(int(addr))
    embedded = embedded_ipv4(plain)
    if embedded:
        for v4 in embedded:
            refused = _judge_ipv4(v4)
            if refused is not None:
                return refused
        # The embedded addresses are fine; what remains is the carrier form.
        if plain in _IPV4_MAPPED:
            return None  # the socket connects to the IPv4 address itself
        if plain in _NAT64:
            return "nat64"  # the translator sits on our side of the policy
        if plain in _IPV4_COMPATIBLE:
            return "ipv4_compatible"  # deprecated by RFC 4291, never routed
        # A tunnel: a relay decides where it ends (see the module docstring).
        return "6to4" if plain in _SIX_TO_FOUR else "teredo"
    for network, name in IPV6_REFUSED:
        if plain in network:
            return name
    if plain not in _GLOBAL_UNICAST:
        return _NOT_GLOBAL_UNICAST
    return None
