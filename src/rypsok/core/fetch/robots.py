"""robots.txt: an RFC 9309 parser and a per-origin verdict cache (REQ-CMP-005).

The parser is written here rather than taken from a library: the measurement
in docs/robots.md shows the common Python parsers misread product tokens and
the byte order mark, and urllib.robotparser misses longest match as well.

Parsing (RFC 9309 §2.1-§2.2, §2.5):
- only the first LIM-F13 bytes count; a line cut by that bound is dropped, so
  a cut `Allow: /abc` cannot turn into a wider `Allow: /a`;
- records are `key: value`, keys case-insensitive, `#` starts a comment, lines
  end in CR, LF or CRLF, a leading UTF-8 byte order mark is skipped; a line
  without a colon is read as `key value` when a run of spaces or tabs splits
  it into exactly two words (as Google's reference parser reads it), and is
  otherwise ignored; a line with an unknown key is ignored and ends no group;
- a group is one or more user-agent lines followed by rules; blank lines and
  other records do not end it, the next user-agent line after a rule does;
- the groups naming our product token are merged; only when no group names it
  do the merged `*` groups apply; a group with no rules allows everything.

Matching (§2.2.2-§2.2.3): both the rule and the request path are put in one
canonical percent-encoded form; the matching rule with the most octets wins
and allow wins a tie; `*` matches any run of octets and a final `$` anchors
the end; `/robots.txt` is always allowed.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from rypsok.core import limits, logs

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "PRODUCT_NAME",
    "UNREACHABLE_TTL_S",
    "RobotsAnswer",
    "RobotsCache",
    "RobotsRules",
    "parse_robots",
    "rules_for",
]

log = logging.getLogger("rypsok.fetch")

# The name robots.txt groups address us by (RFC 9309 §2.2.1); the User-Agent
# header the fetch sends carries it as "rypsok/<version>".
PRODUCT_NAME = "rypsok"
ROBOTS_PATH = "/robots.txt"
# An unreachable robots.txt is a complete disallow (§2.3.1.4). It is usually a
# passing outage, so that verdict is kept for a shorter time than a real file,
# or one 503 would shut a site out for a whole day.
UNREACHABLE_TTL_S = 600.0

_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
# A colon-less record: two runs of non-blank octets with spaces or tabs between
# them (the reference parser's separators); a third run makes it no record.
_WHITESPACE_SEPARATED = re.compile(rb"([^ \t]++)[ \t]++([^ \t]++)")
# §2.2.1: a product token is letters, "_" and "-"; a user-agent value such as
# "ExampleBot/1.0" names the token in front of the first other character.
_TOKEN = re.compile(rb"[A-Za-z_-]+")
_TOKEN_TEXT = re.compile(r"[A-Za-z_-]+")
_STAR = "*"
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# What the canonical form rewrites: an escape (decoded only when it stands for
# an unreserved character, §2.2.2), a stray "%", and every octet outside
# printable ASCII. A rule keeps "*" as its wildcard; "$" left in a rule after
# the anchor is taken off is literal. A path has no wildcards, so its "*" and
# "$" are escaped to meet a rule's literal "%2A" and "%24" (§2.2.3).
_RULE_OCTETS = re.compile(rb"%([0-9A-Fa-f]{2})|[^\x21-\x7e]|[%$]")
_PATH_OCTETS = re.compile(rb"%([0-9A-Fa-f]{2})|[^\x21-\x7e]|[%$*]")


def _canonical_octet(match: re.Match[bytes]) -> bytes:
    hex_digits = match.group(1)
    if hex_digits is None:
        return b"%%%02X" % match.group(0)[0]
    octet = int(hex_digits, 16)
    if octet in _UNRESERVED:
        return bytes((octet,))
    return b"%" + hex_digits.upper()


def _canonical(raw: bytes, octets: re.Pattern[bytes]) -> str:
    # Only printable ASCII is left afterwards, so the decode cannot fail.
    return octets.sub(_canonical_octet, raw).decode("ascii")


def _canonical_path(path: str) -> str:
    # surrogatepass: a lone surrogate becomes three escaped octets, not an error.
    raw = path.encode("utf-8", "surrogatepass")
    if not raw.startswith(b"/"):
        raw = b"/" + raw
    return _canonical(raw, _PATH_OCTETS)


@dataclass(frozen=True, slots=True)
class _Rule:
    allow: bool
    # Octets of the canonical pattern, wildcards and anchor included (§2.2.2:
    # "the most specific match is the match that has the most octets").
    priority: int
    # The pattern cut at each "*": pieces to find in order, left to right.
    pieces: tuple[str, ...]
    anchored: bool

    def matches(self, path: str) -> bool:
        """Whether the pattern matches from the path's first octet.

        Taking the leftmost place for every piece is enough for `*`-only
        patterns, so matching is a few `str.find` calls, with no backtracking
        for a hostile pattern to exploit.
        """
        first = self.pieces[0]
        if not path.startswith(first):
            return False
        if len(self.pieces) == 1:
            return not self.anchored or len(path) == len(first)
        position = len(first)
        for piece in self.pieces[1:-1]:
            found = path.find(piece, position)
            if found < 0:
                return False
            position = found + len(piece)
        last = self.pieces[-1]
        if self.anchored:
            return len(path) - len(last) >= position and path.endswith(last)
        return path.find(last, position) >= 0


def _make_rule(allow: bool, value: bytes) -> _Rule | None:
    """The rule of one allow/disallow value; None for an empty value (matches nothing)."""
    anchored = value.endswith(b"$")
    body = value[:-1] if anchored else value
    if not body:
        return None
    pattern = _canonical(body, _RULE_OCTETS)
    return _Rule(
        allow=allow,
        priority=len(pattern) + anchored,
        pieces=tuple(pattern.split(_STAR)),
        anchored=anchored,
    )


def _rule_order(rule: _Rule) -> tuple[int, bool]:
    # Longest first; at equal length allow first (§2.2.2 "allow SHOULD be used").
    return (-rule.priority, not rule.allow)


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """The rules that apply to rypsok on one origin, most specific first."""

    rules: tuple[_Rule, ...] = ()

    def allows(self, path: str) -> bool:
        """Whether a request for `path` (path and query, as sent) may be made."""
        canonical = _canonical_path(path)
        if canonical == ROBOTS_PATH:
            return True
        # Sorted by priority, allow first on a tie: the first match decides.
        for rule in self.rules:
            if rule.matches(canonical):
                return rule.allow
        return True


ALLOW_ALL = RobotsRules()
DISALLOW_ALL = RobotsRules((_Rule(allow=False, priority=1, pieces=("/",), anchored=False),))


def _bounded_lines(body: bytes) -> list[bytes]:
    """The lines of the first LIM-F13 bytes, without a line cut by that bound."""
    limit = limits.ROBOTS_MAX_BYTES
    if len(body) >= limit:
        # The reader stops at the limit too, so a body this long may be cut.
        head = body[:limit]
        body = head[: max(head.rfind(b"\n"), head.rfind(b"\r")) + 1]
    if body.startswith(_BOM):
        body = body[len(_BOM) :]
    return _LINE_BREAK.split(body)


def _key_and_value(content: bytes) -> tuple[bytes, bytes] | None:
    """The key and value of one line without its comment; None if it is no record.

    `key: value` is the form of RFC 9309. Like Google's reference parser (the
    RFC authors' own, robots.cc), a line without a colon is read as `key value`
    when it holds exactly two runs of characters separated by spaces or tabs:
    `Disallow /private` is a rule, `this line is not a record` is not.
    """
    key, colon, value = content.partition(b":")
    if not colon:
        words = _WHITESPACE_SEPARATED.fullmatch(content.strip())
        if words is None:
            return None
        key, value = words.group(1), words.group(2)
    key = key.strip()
    if not key:
        return None
    return key.lower(), value.strip()


def _records(lines: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """(lower-case key, value) of each line that is a record; the rest is skipped."""
    for line in lines:
        record = _key_and_value(line.split(b"#", 1)[0])
        if record is not None:
            yield record


def _agent(value: bytes) -> str:
    """The product token a user-agent value names: "*", a lower-case token, or ""."""
    if value == b"*" or (value.startswith(b"*") and value[1:2].isspace()):
        return _STAR
    token = _TOKEN.match(value)
    return token.group(0).decode("ascii").lower() if token else ""


@dataclass(slots=True)
class _Group:
    agents: set[str]
    rules: list[_Rule]


def _groups(records: Iterable[tuple[bytes, bytes]]) -> list[_Group]:
    groups: list[_Group] = []
    current: _Group | None = None
    in_rules = False
    for key, value in records:
        if key == b"user-agent":
            if current is None or in_rules:
                current = _Group(set(), [])
                groups.append(current)
                in_rules = False
            current.agents.add(_agent(value))
        elif key in (b"allow", b"disallow"):
            if current is None:
                continue  # a rule before any user-agent line belongs to no group
            # Even an empty rule ends the group's user-agent lines.
            in_rules = True
            rule = _make_rule(key == b"allow", value)
            if rule is not None:
                current.rules.append(rule)
    return groups


def _check_token(product_token: str) -> str:
    if not _TOKEN_TEXT.fullmatch(product_token):
        raise ValueError("a product token is letters, '_' and '-' only (RFC 9309 §2.2.1)")
    return product_token.lower()


def parse_robots(body: bytes, product_token: str = PRODUCT_NAME) -> RobotsRules:
    """The rules of a robots.txt body for `product_token`; total on any bytes.

    Raises ValueError only for a malformed `product_token` (a caller's error).
    """
    token = _check_token(product_token)
    named = False
    own: list[_Rule] = []
    everyone: list[_Rule] = []
    for group in _groups(_records(_bounded_lines(body))):
        if token in group.agents:
            named = True
            own.extend(group.rules)
        elif _STAR in group.agents:
            everyone.extend(group.rules)
    chosen = own if named else everyone
    return RobotsRules(tuple(sorted(chosen, key=_rule_order)))


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """The fetch pipeline's final answer for `<origin>/robots.txt`."""

    status: int | None  # after redirects; None = unreachable
    body: bytes  # at most LIM-F13 bytes


def _is_available(status: int | None) -> bool:
    """Whether the answer says something definite about the site (2xx or 4xx)."""
    return status is not None and 200 <= status < 500 and not 300 <= status < 400


def rules_for(answer: RobotsAnswer) -> RobotsRules:
    """RFC 9309 §2.3.1: 2xx is parsed, 4xx allows all, anything else disallows all.

    A final 3xx means the redirect budget ran out; like a 5xx, a timeout or a
    connection error it is read as unreachable, a complete disallow.
    """
    status = answer.status
    if status is not None and 200 <= status < 300:
        return parse_robots(answer.body)
    if status is not None and 400 <= status < 500:
        return ALLOW_ALL
    return DISALLOW_ALL


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_and_path(url: str) -> tuple[str, str]:
    """(scheme://host[:port], path?query) of an http(s) URL; ValueError otherwise."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname  # lower-cased, brackets and user info removed
    if scheme not in _DEFAULT_PORTS or not host:
        raise ValueError("robots.txt applies to http and https URLs with a host")
    port = parts.port  # raises ValueError for a port that is not a number in range
    if ":" in host:
        host = f"[{host}]"
    origin = f"{scheme}://{host}"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        origin += f":{port}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return origin, path


@dataclass(slots=True)
class _Entry:
    rules: RobotsRules
    expires_at: float


class _Flight:
    """One read in progress; `rules` stays None if its reader was cancelled."""

    __slots__ = ("done", "rules")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.rules: RobotsRules | None = None


class RobotsCache:
    """Per-origin robots verdicts: one read in flight per origin, kept for a bounded time.

    Concurrent callers for an origin share the read of the first one (decision
    2 of the specification). If that caller is cancelled, the read goes with
    it and the waiters go round again, so one of them starts a new read.
    """

    def __init__(
        self,
        read: Callable[[str], Awaitable[RobotsAnswer]],
        *,
        ttl_s: float = limits.ROBOTS_CACHE_S,
        clock: Callable[[], float] = time.monotonic,
        max_origins: int = 10_000,
        unreachable_ttl_s: float = UNREACHABLE_TTL_S,
    ) -> None:
        if not 0 <= ttl_s <= limits.ROBOTS_CACHE_S:
            raise ValueError("ttl_s must lie between 0 and LIM-F12")
        if max_origins < 1:
            raise ValueError("max_origins must be at least 1")
        self._read = read
        self._ttl_s = ttl_s
        self._unreachable_ttl_s = min(max(unreachable_ttl_s, 0.0), ttl_s)
        self._clock = clock
        self._max_origins = max_origins
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._flights: dict[str, _Flight] = {}

    async def allowed(self, url: str) -> bool:
        """Whether robots.txt lets rypsok fetch `url`; ValueError if it is not http(s)."""
        origin, path = origin_and_path(url)
        rules = await self._rules(origin)
        return rules.allows(path)

    def __len__(self) -> int:
        return len(self._entries)

    async def _rules(self, origin: str) -> RobotsRules:
        while True:
            cached = self._cached(origin)
            if cached is not None:
                return cached
            flight = self._flights.get(origin)
            if flight is None:
                return await self._lead(origin)
            await flight.done.wait()
            if flight.rules is not None:
                return flight.rules
            # Its reader was cancelled: go round; the first waiter back leads.

    def _cached(self, origin: str) -> RobotsRules | None:
        entry = self._entries.get(origin)
        if entry is None:
            return None
        if self._clock() < entry.expires_at:
            return entry.rules
        del self._entries[origin]
        return None

    async def _lead(self, origin: str) -> RobotsRules:
        # No await between the lookup in _rules and this registration, so no
        # second reader can start for the origin.
        flight = _Flight()
        self._flights[origin] = flight
        try:
            rules, ttl_s = await self._fetch(origin)
            self._store(origin, rules, ttl_s)
            flight.rules = rules
            return rules
        finally:
            if self._flights.get(origin) is flight:
                del self._flights[origin]
            flight.done.set()

    async def _fetch(self, origin: str) -> tuple[RobotsRules, float]:
        """The rules for an origin and how long to keep them; never raises but on cancel."""
        try:
            answer = await self._read(origin)
            # Parsing a file near LIM-F13 takes a few hundred milliseconds:
            # a worker thread keeps that off the event loop.
            rules = await anyio.to_thread.run_sync(rules_for, answer)
        except Exception as exc:
            # The class only: the message may carry the site's text or an address.
            logs.event(log, "robots_read_failed", logging.WARNING, error=type(exc).__name__)
            return DISALLOW_ALL, self._unreachable_ttl_s
        ttl_s = self._ttl_s if _is_available(answer.status) else self._unreachable_ttl_s
        return rules, ttl_s

    def _store(self, origin: str, rules: RobotsRules, ttl_s: float) -> None:
        self._entries.pop(origin, None)
        self._entries[origin] = _Entry(rules, self._clock() + ttl_s)
        while len(self._entries) > self._max_origins:
            self._entries.popitem(last=False)  # the oldest verdict goes first
