"""The two egress profiles and the operator's rules (REQ-SEC-005…009, REQ-SEC-017).

A profile is judged twice:

* before a request, on the URL, by `EngineProfile.check` or `AgentProfile.check`:
  scheme, port, credentials in the URL, the host notation, and a host that
  is an address literal or a denied name;
* at connect time, on every address the host resolved to, by the
  `AddressPolicy` of the connection pool (see `backend.py`). That is the
  address then connected to, so a DNS answer cannot change between the
  judgement and the connection.

Rules: a deny rule wins over an allow rule and applies to every profile;
an allow rule is the only way to reach a refused range (this is also how
tests reach their local servers, REQ-TEST-005). A rule is a network
(`ip_network`) or an ASCII host name; a name with a leading dot also covers
its subdomains. Callers cannot change a profile: profiles are built from
configuration only.

URL host parsing: the connection reads a URL with httpx2's parser, so that
is the reading judged. Inputs another parser could read differently are
refused rather than normalized: backslashes, '@' in the authority, any
'%' in the host (percent-encoding, zone ids), non-ASCII hosts whose labels
do not map one to one onto IDNA labels (full-width dots), and IPv4 literals
in any form other than four decimal octets (`2130706433`, `0x7f.1`,
`017700000001`, `127.1`), which resolvers read as addresses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)
from typing import Final

import httpx2

from rypsok.core import limits
from rypsok.core.egress.errors import EgressDenied
from rypsok.core.egress.ranges import embedded_ipv4, judge_address

__all__ = [
    "NO_RULES",
    "AddressPolicy",
    "AgentProfile",
    "EgressRules",
    "EngineProfile",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network
Rule = IPNetwork | str

DEFAULT_PORTS: Final = {"https": 443, "http": 80}
DENY_RULE: Final = "deny_rule"  # the range name given when an operator deny rule refused

_HOST_RULE = re.compile(r"\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
_ASCII_HOST = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")
_IPV6_LITERAL = re.compile(r"\[[0-9A-Fa-f:.]+\]")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
_DECIMAL_OCTET = re.compile(r"0|[1-9][0-9]{0,2}")


@dataclass(frozen=True, slots=True)
class EgressRules:
    """Operator allow and deny rules. Deny wins; allow opens refused ranges."""

    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    def __post_init__(self) -> None:
        for rule in (*self.allow, *self.deny):
            if isinstance(rule, str) and not _HOST_RULE.fullmatch(rule):
                # Names are compared with the ASCII (IDNA) form the connection uses.
                raise ValueError("an egress host rule must be a lower-case ASCII host name")

    @classmethod
    def from_strings(cls, *, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> EgressRules:
        """Rules from configuration text: CIDR networks or host names."""
        return cls(allow=tuple(map(_parse_rule, allow)), deny=tuple(map(_parse_rule, deny)))

    def denies(self, host: str | None, address: IPAddress | None) -> bool:
        # Deny also looks inside IPv6 forms that carry an IPv4 address, so
        # denying 10.0.0.0/8 also denies ::ffff:10.0.0.1 and 64:ff9b::10.0.0.1.
        candidates: tuple[IPAddress, ...] = ()
        if address is not None:
            candidates = (address, *_embedded(address))
        return _matches(self.deny, host, candidates)

    def allows(self, host: str | None, address: IPAddress | None) -> bool:
        # Allow is narrow: the address itself, or the IPv4 address an
        # IPv4-mapped address connects to, never an address behind a translator.
        candidates: tuple[IPAddress, ...] = ()
        if address is not None:
            mapped = address.ipv4_mapped if isinstance(address, IPv6Address) else None
            candidates = (address,) if mapped is None else (address, mapped)
        return _matches(self.allow, host, candidates)


NO_RULES: Final = EgressRules()


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """The connect-time judgement of one connection pool."""

    rules: EgressRules
    # False for engine endpoints the operator configured explicitly
    # (REQ-SEC-017): only deny rules apply to them.
    apply_ranges: bool = True

    def judge(self, host: str, address: IPAddress) -> str | None:
        """The refused range (or `deny_rule`) for connecting to `address` for `host`."""
        if self.rules.denies(host, address):
            return DENY_RULE
        if not self.apply_ranges or self.rules.allows(host, address):
            return None
        return judge_address(address)


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """Engine requests: the configured origin only, HTTPS unless explicit (REQ-SEC-017)."""

    rules: EgressRules = NO_RULES

    def check(self, url: str, *, explicit_endpoint: bool) -> httpx2.URL:
        """The parsed endpoint URL, or `EgressDenied`."""
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL:
            raise EgressDenied("url_syntax") from None
        schemes = ("https", "http") if explicit_endpoint else ("https",)
        if parsed.scheme not in schemes:
            raise EgressDenied("scheme")
        if parsed.userinfo:
            raise EgressDenied("url_credentials")
        host = parsed.raw_host.decode("ascii")
        if not host:
            raise EgressDenied("url_syntax")
        # Judged here as well as at connect time: behind a configured proxy the
        # connection is to the proxy, and the engine host would go unjudged.
        _judge_literal_or_name(self.address_policy(explicit_endpoint=explicit_endpoint), host)
        return parsed

    def address_policy(self, *, explicit_endpoint: bool) -> AddressPolicy:
        return AddressPolicy(self.rules, apply_ranges=not explicit_endpoint)


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """Agent-directed requests: web_fetch and robots.txt (REQ-SEC-006…009)."""

    rules: EgressRules = NO_RULES
    allow_http: bool = False
    extra_ports: tuple[int, ...] = ()  # LIM-F8: the operator may add ports

    @property
    def schemes(self) -> tuple[str, ...]:
        return ("https", "http") if self.allow_http else ("https",)

    @property
    def ports(self) -> frozenset[int]:
        base = (
            (*limits.FETCH_PORTS, DEFAULT_PORTS["http"]) if self.allow_http else limits.FETCH_PORTS
        )
        return frozenset((*base, *self.extra_ports))

    def address_policy(self) -> AddressPolicy:
        return AddressPolicy(self.rules, apply_ranges=True)

    def check(self, url: str) -> httpx2.URL:
        """The URL as the connection will read it, or `EgressDenied`."""
        if len(url) > limits.URL_MAX_CHARS:
            raise EgressDenied("url_length")
        if "\\" in url:
            # WHATWG parsers read '\' as '/', RFC 3986 parsers as data: the
            # two disagree on where the authority ends.
            raise EgressDenied("url_syntax")
        prefix = _SCHEME_PREFIX.match(url)
        if prefix is None:
            raise EgressDenied("url_syntax")
        if prefix.group(1).lower() not in self.schemes:
            raise EgressDenied("scheme")
        raw_host = _raw_host(url[prefix.end() :])
        try:
            parsed = httpx2.URL(url)
        except (httpx2.InvalidURL, UnicodeError):
            # UnicodeError: a lone surrogate, which no encoding of a URL can carry.
            raise EgressDenied("url_host" if not raw_host.isascii() else "url_syntax") from None
        host = parsed.raw_host.decode("ascii")
        if not _same_reading(raw_host, host):
            raise EgressDenied("url_host")
        if not raw_host.isascii() and _NUMERIC_LABEL.fullmatch(host.rstrip(".").split(".")[-1]):
            raise EgressDenied("url_host")  # IDNA made a name that ends in a number
        if parsed.userinfo:
            raise EgressDenied("url_credentials")
        if len(str(parsed)) > limits.URL_MAX_CHARS:
            # LIM-F9 bounds the URL as it is sent: IDNA and percent-encoding
            # can make a short input several times longer (REQ-FETCH-001).
            raise EgressDenied("url_length")
        port = parsed.port if parsed.port is not None else DEFAULT_PORTS[parsed.scheme]
        if port not in self.ports:
            raise EgressDenied("port")
        _judge_literal_or_name(self.address_policy(), host)
        return parsed


def _raw_host(after_scheme: str) -> str:
    """The host as written, after refusing authorities no two parsers agree on.

    With backslashes already refused, RFC 3986 and WHATWG both end the
    authority at the first '/', '?' or '#'.
    """
    end = len(after_scheme)
    for delimiter in "/?#":
        index = after_scheme.find(delimiter)
        if index != -1:
            end = min(end, index)
    authority = after_scheme[:end]
    if "@" in authority:
        raise EgressDenied("url_credentials")
    if "%" in authority:
        raise EgressDenied("url_host")  # percent-encoded host or IPv6 zone id
    if authority.startswith("["):
        close = authority.find("]")
        host, rest = authority[: close + 1], authority[close + 1 :]
        if close == -1 or not _IPV6_LITERAL.fullmatch(host):
            raise EgressDenied("url_host")
    else:
        host, colon, port = authority.partition(":")
        rest = colon + port
    if rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()):
        raise EgressDenied("url_syntax")
    if not host:
        raise EgressDenied("url_syntax")
    if host.isascii() and not host.startswith("["):
        if not _ASCII_HOST.fullmatch(host):
            raise EgressDenied("url_host")
        trailing_dot = host.endswith(".")
        labels = (host[:-1] if trailing_dot else host).split(".")
        if _NUMERIC_LABEL.fullmatch(labels[-1]) and (
            trailing_dot or not _is_dotted_decimal(labels)
        ):
            # A name ending in a number is an IPv4 address to WHATWG parsers
            # and to inet_aton, in forms that differ between them; only four
            # plain decimal octets are read the same way by all.
            raise EgressDenied("url_host")
    return host


def _is_dotted_decimal(labels: list[str]) -> bool:
    return len(labels) == 4 and all(
        _DECIMAL_OCTET.fullmatch(label) and int(label) <= 255 for label in labels
    )


def _same_reading(raw_host: str, host: str) -> bool:
    """Whether httpx2 read the host we checked, label for label."""
    if raw_host.startswith("["):
        try:
            return ip_address(raw_host[1:-1]) == ip_address(host)
        except ValueError:
            return False
    if raw_host.isascii():
        return raw_host.lower() == host
    # A non-ASCII name: each label must map to one IDNA label. A full-width
    # or ideographic dot would merge labels here and is refused.
    raw_labels, labels = raw_host.split("."), host.split(".")
    if len(raw_labels) != len(labels):
        return False
    return all(
        (raw.lower() == ascii_label) if raw.isascii() else ascii_label.startswith("xn--")
        for raw, ascii_label in zip(raw_labels, labels, strict=True)
    )


def _judge_literal_or_name(policy: AddressPolicy, host: str) -> None:
    try:
        literal: IPAddress | None = ip_address(host)
    except ValueError:
        literal = None
    if literal is None:
        if policy.rules.denies(host, None):
            raise EgressDenied("egress", range_name=DENY_RULE)
        return
    refused = policy.judge(host, literal)
    if refused is not None:
        raise EgressDenied("egress", range_name=refused)


def _embedded(address: IPAddress) -> tuple[IPv4Address, ...]:
    return embedded_ipv4(address) if isinstance(address, IPv6Address) else ()


def _matches(rules: tuple[Rule, ...], host: str | None, candidates: tuple[IPAddress, ...]) -> bool:
    name = host.rstrip(".").lower() if host is not None else None
    for rule in rules:
        if isinstance(rule, str):
            if name is not None and _name_matches(rule, name):
                return True
            continue
        for address in candidates:
            if address.version == rule.version and address in rule:
                return True
    return False


def _name_matches(rule: str, name: str) -> bool:
    if rule.startswith("."):
        return name == rule[1:] or name.endswith(rule)
    return name == rule


def _parse_rule(text: str) -> Rule:
    try:
        return ip_network(text)
    except ValueError:
        return text.strip().rstrip(".").lower()
