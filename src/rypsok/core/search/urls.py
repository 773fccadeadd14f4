"""Result URLs: the form returned to the caller and the key results are merged on.

`normalize_result_url(raw)` takes the URL a driver extracted (redirect wrappers
already unwrapped by that driver) and returns either a `ResultUrl` or the
`UrlRejection` that explains why the result must be dropped and counted in a
notice (REQ-RANK-003, REQ-CTX-006). It never raises on any `str`.

Reading. The input is read the way the WHATWG URL Standard reads an http(s)
URL, because that is what a browser, and the page that linked it, mean by it:

* leading and trailing C0 controls and spaces are stripped, and every tab, LF
  and CR inside is removed;
* the scheme is case-insensitive; only `http` and `https` are accepted;
* any run of `/` or `\\` after `scheme:` introduces the authority, and the
  authority ends at the first `/`, `\\`, `?` or `#`. So `http://a.example\\@b.example/`
  names host `a.example`, never `b.example`;
* `\\` in the path is a path separator and is written as `/`;
* the host is percent-decoded (it must then be UTF-8), mapped by UTS #46
  (nontransitional, which also folds case and full-width forms such as
  `ｅｘａｍｐｌｅ．ｃｏｍ`), then written in ASCII: every non-ASCII label as its
  IDNA A-label. A name that ends in a number is an IPv4 address in any of
  the WHATWG notations (`0x7f.1`, `2130706433`, `0177.0.0.1`) and is written
  dotted-decimal; `[…]` is an IPv6 address, written in its canonical
  compressed form. Writing the host in one canonical ASCII form means the
  egress policy, the resolver and any later parser see the same host.

Returned URL (REQ-RANK-003): the engine's URL with nothing changed except

1. the reading above (scheme lower-cased, tab/newline removed, `\\` as `/`,
   `//` after the scheme, the host in canonical ASCII, an empty port `:`
   dropped, a port's leading zeros dropped);
2. known tracking parameters removed from the query (`TRACKING_PARAMETERS`,
   `TRACKING_PARAMETER_PREFIXES`), the other parameters kept in order and
   byte for byte; a `?` left with nothing after it is dropped;
3. serialization as ASCII with the WHATWG percent-encode sets: every
   non-ASCII character (which covers invisible and bidi characters), every
   control character and space, and the few ASCII characters each set
   names (for the path `"#<>?^`{}`, the query `"#'<>`, the fragment
   `"<>``) become UTF-8 percent-escapes. Existing escapes are kept as they
   are, even malformed ones (`%zz`), as WHATWG keeps them.

A default port, dot segments, an empty path and the fragment are kept: they
are part of what the engine returned and changing them is the key's job.

Rejections, first match wins:

* `TOO_LONG`: the input is over 16 x LIM-F9 (refused before parsing, a bound
  on work), or the returned form is over LIM-F9 (REQ-CTX-006).
* `MALFORMED`: no scheme; a port that is not ASCII digits or above 65535.
* `NOT_HTTP`: a scheme other than http or https (`javascript:`, `data:`, `ftp:`).
* `BAD_HOST`: no host; userinfo (any `@` in the authority: web_fetch
  refuses URLs with credentials, REQ-FETCH-007, and a result must not leak
  them); an escape in the host that is not UTF-8; a code point UTS #46
  disallows; an invalid A-label or IDNA 2008 label; an empty label (`a..b`,
  a leading dot) other than one trailing dot, which names the DNS root and
  is kept, because it changes the Host header; a label over 63 or a name
  over 253 octets; a label outside letters, digits, `-` and `_` (stricter
  than WHATWG, which admits `!$&'()*+,;=` and more, that no resolvable
  host uses); a name ending in a number that is not a valid IPv4 address
  (`example.123`); an invalid IPv6 address or one with a zone. Hyphens
  anywhere are accepted (`r3---sn-x.example`), as WHATWG does.

Comparison key (REQ-RANK-002), derived from the returned URL's parts by
rules that RFC 3986 section 6.2.2-6.2.3 and RFC 9110 section 4.2.3 state
preserve the identity of an http(s) resource:

* scheme and host lower-case (they already are after reading);
* the default port dropped (80 for http, 443 for https), any other kept;
* an empty path written `/`;
* escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded, the
  hex digits of every other escape upper-cased, in path and query;
* the fragment dropped: it is never sent to the server;
* tracking parameters removed (already done in the returned URL).

Not rules, because each can change the resource: http and https stay
distinct, `www.` stays, query parameters keep their order, trailing
slashes, dot segments, `+` and `%20`, and case in path and query are kept.

The key is never returned and never fetched. `normalize_result_url(url).key`
equals `key` for a returned `url`, and so does the returned URL itself.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from dataclasses import dataclass
from typing import Final, NamedTuple
from urllib.parse import unquote, unquote_to_bytes

import idna

from rypsok.core import limits

__all__ = [
    "TRACKING_PARAMETERS",
    "TRACKING_PARAMETER_PREFIXES",
    "ResultUrl",
    "UrlRejection",
    "normalize_result_url",
]


class UrlRejection(enum.StrEnum):
    """Why a result URL was dropped; each is counted in a notice."""

    NOT_HTTP = "not_http"
    BAD_HOST = "bad_host"
    TOO_LONG = "too_long"
    MALFORMED = "malformed"


class ResultUrl(NamedTuple):
    """Immutable as a tuple: cheaper to build than a frozen dataclass (performance §22.2)."""

    url: str  # returned to the caller (REQ-RANK-003)
    key: str  # compared only; never returned, never fetched (REQ-RANK-002)


# Parameters whose only purpose is to attribute a click or a campaign; no site
# serves different content for them. Deliberately short: a name that some site
# uses for content (`ref`, `source`, `si`, `feature`) is not here. Matched
# case-sensitively on the percent-decoded name.
TRACKING_PARAMETERS: Final = frozenset(
    {
        "gclid",  # Google Ads click
        "gclsrc",  # Google Ads click source
        "gbraid",  # Google Ads app-to-web click
        "wbraid",  # Google Ads web-to-app click
        "dclid",  # Google Display (DoubleClick) click
        "srsltid",  # Google Merchant listing click
        "_ga",  # Google Analytics cross-domain linker
        "_gl",  # Google tag cross-domain linker
        "fbclid",  # Facebook click
        "igshid",  # Instagram share
        "msclkid",  # Microsoft Ads click
        "twclid",  # X/Twitter Ads click
        "ref_src",  # X/Twitter embed referral
        "ttclid",  # TikTok Ads click
        "li_fat_id",  # LinkedIn Ads click
        "yclid",  # Yandex Direct click
        "_openstat",  # Yandex Openstat campaign
        "mc_cid",  # Mailchimp campaign
        "mc_eid",  # Mailchimp recipient
        "_hsenc",  # HubSpot email
        "_hsmi",  # HubSpot email message
        "__hstc",  # HubSpot visitor cookie carried in the URL
        "__hssc",  # HubSpot session
        "__hsfp",  # HubSpot fingerprint
        "mkt_tok",  # Marketo email
    }
)
TRACKING_PARAMETER_PREFIXES: Final = ("utm_",)  # Google Analytics campaign (utm_source, …)

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_PORT_MAX: Final = 65_535
_INPUT_MAX_CHARS: Final = 16 * limits.URL_MAX_CHARS
_LABEL_MAX_OCTETS: Final = 63
_NAME_MAX_OCTETS: Final = 253  # without the trailing root dot
# An IPv4 part with more significant digits than this is at least 2**32 in any
# radix, which the IPv4 parser refuses; it is not converted.
_IPV4_SIGNIFICANT_DIGITS_MAX: Final = 12
_IPV4_TOO_BIG: Final = 2**32

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_AUTHORITY_END = re.compile(r"[/\\?#]")
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_C0_OR_SPACE: Final = "".join(map(chr, range(0x21)))
_SURROGATE = re.compile("[\ud800-\udfff]")
_HOST_LABEL = re.compile(rf"[a-z0-9_-]{{1,{_LABEL_MAX_OCTETS}}}")
_IPV6_TEXT = re.compile(r"[0-9A-Fa-f:.]+")
# A host the full reading returns unchanged (`_domain_or_ipv4_host`): labels of
# lower-case ASCII letters, digits, `-` and `_`, the last starting with a letter,
# an optional root dot, at most 253 octets without it. "xn--" is excluded apart.
_PLAIN_NAME = re.compile(
    rf"(?=.{{1,{_NAME_MAX_OCTETS}}}\.?\Z)"
    rf"(?:[a-z0-9_-]{{1,{_LABEL_MAX_OCTETS}}}\.)*[a-z][a-z0-9_-]{{0,{_LABEL_MAX_OCTETS - 1}}}\.?"
)
# A URL that `_read_url` returns unchanged, but for its host and query, which
# `_already_canonical` checks: lower-case scheme, `://`, a host of the plain
# name alphabet, no port; then path, query and fragment of printable ASCII
# without the characters of their WHATWG encode sets (below) and without `\\`
# in the path. The classes, spelled out:
#   path      ! $ % & ' ( ) * + , - . / 0-9 : ; = @ A-Z [ ] _ a-z | ~
#   query     every printable character but " # ' < >
#   fragment  every printable character but " < > `
# The host group is `_PLAIN_NAME` itself, its length look-ahead bounded by the end of
# the host (no character of the host alphabet follows): one match reads the URL and
# its host, where a second match of the host cost about as much again (issue 14,
# performance §28). "xn--" is excluded apart.
_CANONICAL = re.compile(
    r"(https?)://"
    rf"((?=[a-z0-9_.-]{{1,{_NAME_MAX_OCTETS}}}\.?(?![a-z0-9_.-]))"
    rf"(?:[a-z0-9_-]{{1,{_LABEL_MAX_OCTETS}}}\.)*[a-z][a-z0-9_-]{{0,{_LABEL_MAX_OCTETS - 1}}}\.?)"
    r"((?:/[!$-;=@-\[\]_a-z|~]*)?)"
    r"(?:\?([!$-&(-;=?-~]*))?"
    r"(?:#[!#-;=?-_a-~]*)?"
)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# The two hex digits of each escape that `_normalize_escape` leaves as it is:
# upper-case, of a character that is not unreserved. A component whose escapes
# are all of these is its own normal form, read without a call per escape
# (wikipedia's URLs hold several escapes each; issue 14, performance §22.2).
_KEPT_ESCAPE_DIGITS: Final = frozenset(
    f"{code:02X}" for code in range(256) if chr(code) not in _UNRESERVED
)
_IPV4_DIGITS: Final = {
    10: frozenset("0123456789"),
    8: frozenset("01234567"),
    16: frozenset("0123456789abcdefABCDEF"),
}

# WHATWG percent-encode sets: C0 controls, and everything above U+007E (DEL and
# all non-ASCII), plus the ASCII characters each component lists.
_PATH_TO_ENCODE = re.compile('[\x00-\x20"#<>?^`{}\x7f-\U0010ffff]+')
_QUERY_TO_ENCODE = re.compile("[\x00-\x20\"#'<>\x7f-\U0010ffff]+")
_FRAGMENT_TO_ENCODE = re.compile('[\x00-\x20"<>`\x7f-\U0010ffff]+')


@dataclass(frozen=True, slots=True)
class _Authority:
    host: str  # canonical ASCII: a name, dotted IPv4 or [IPv6]
    port: int | None


def normalize_result_url(raw: str) -> ResultUrl | UrlRejection:
    """Return the URL to show and the key to merge on, or why to drop the result."""
    return _already_canonical(raw) or _read_url(raw)


def _already_canonical(raw: str) -> ResultUrl | None:
    """The answer for a URL the full reading returns unchanged; None for any other.

    Most engines return such URLs, and one match replaces the dozen steps of
    `_read_url` (issue 14, performance §20.2). The pattern leaves out
    everything a step would change (upper case and `\\` in scheme and
    authority, a port, the characters each encode set names, non-ASCII); the
    host must be one `_domain_or_ipv4_host` keeps as it is, and the query
    free of tracking parameters.
    """
    if len(raw) > limits.URL_MAX_CHARS:
        return None
    match = _CANONICAL.fullmatch(raw)
    if match is None or "xn--" in match.group(2):  # the pattern holds `_PLAIN_NAME`'s host
        return None
    query = match.group(4)
    if query is not None and _without_tracking(query) is not query:
        return None
    host_end, path_end = match.end(2), match.end(3)
    key_end = path_end if query is None else match.end(4)
    if "%" in raw and not _escapes_kept(raw, key_end):  # the key normalizes escapes
        scheme, host, path = match.group(1, 2, 3)
        return ResultUrl(url=raw, key=_comparison_key(scheme, _Authority(host, None), path, query))
    # Otherwise the key is the URL up to its fragment, an empty path written `/`.
    if path_end > host_end:
        return ResultUrl(url=raw, key=raw[:key_end])
    return ResultUrl(url=raw, key=f"{raw[:host_end]}/{raw[host_end:key_end]}")


def _read_url(raw: str) -> ResultUrl | UrlRejection:
    """The full reading of the module docstring."""
    if len(raw) > _INPUT_MAX_CHARS:
        return UrlRejection.TOO_LONG
    text = _SURROGATE.sub("\ufffd", raw).strip(_C0_OR_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:  # translate costs more than the test
        text = text.translate(_TAB_OR_NEWLINE)

    scheme_match = _SCHEME.match(text)
    if scheme_match is None:
        return UrlRejection.MALFORMED
    scheme = scheme_match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        return UrlRejection.NOT_HTTP

    after_scheme = text[scheme_match.end() :].lstrip("/\\")
    authority_end = _AUTHORITY_END.search(after_scheme)
    split_at = len(after_scheme) if authority_end is None else authority_end.start()
    authority = _parse_authority(after_scheme[:split_at])
    if isinstance(authority, UrlRejection):
        return authority

    path, query, fragment = _split_rest(after_scheme[split_at:])
    path = _encode(_PATH_TO_ENCODE, path.replace("\\", "/"))
    if query is not None:
        query = _without_tracking(_encode(_QUERY_TO_ENCODE, query))
    if fragment is not None:
        fragment = _encode(_FRAGMENT_TO_ENCODE, fragment)

    url = _serialize(scheme, authority.host, authority.port, path, query=query, fragment=fragment)
    if len(url) > limits.URL_MAX_CHARS:
        return UrlRejection.TOO_LONG
    return ResultUrl(url=url, key=_comparison_key(scheme, authority, path, query))


def _split_rest(rest: str) -> tuple[str, str | None, str | None]:
    """Split what follows the authority into path, query and fragment."""
    before_fragment, has_fragment, fragment = rest.partition("#")
    path, has_query, query = before_fragment.partition("?")
    return path, (query if has_query else None), (fragment if has_fragment else None)


def _serialize(
    scheme: str,
    host: str,
    port: int | None,
    path: str,
    *,
    query: str | None,
    fragment: str | None,
) -> str:
    parts = [scheme, "://", host]
    if port is not None:
        parts += [":", str(port)]
    parts.append(path)
    if query is not None:
        parts += ["?", query]
    if fragment is not None:
        parts += ["#", fragment]
    return "".join(parts)


def _comparison_key(scheme: str, authority: _Authority, path: str, query: str | None) -> str:
    port = None if authority.port == _DEFAULT_PORTS[scheme] else authority.port
    key_query = None if query is None else _normalize_escapes(query)
    path = _normalize_escapes(path) or "/"
    return _serialize(scheme, authority.host, port, path, query=key_query, fragment=None)


# --- authority and host -------------------------------------------------------


def _parse_authority(authority: str) -> _Authority | UrlRejection:
    if "@" in authority:
        return UrlRejection.BAD_HOST  # userinfo: credentials are never returned or fetched
    if authority.startswith("["):
        close = authority.find("]")
        if close == -1:
            return UrlRejection.BAD_HOST
        after = authority[close + 1 :]
        if after and not after.startswith(":"):
            return UrlRejection.BAD_HOST
        host = _ipv6_host(authority[1:close])
        port_text = after[1:]
    else:
        host_text, _, port_text = authority.partition(":")
        host = _domain_or_ipv4_host(host_text)
    if host is None:
        return UrlRejection.BAD_HOST
    port = _parse_port(port_text)
    if isinstance(port, UrlRejection):
        return port
    return _Authority(host=host, port=port)


def _parse_port(port_text: str) -> int | UrlRejection | None:
    if not port_text:
        return None  # `host:` means the default port, as in WHATWG
    significant = port_text.lstrip("0")
    if not (port_text.isascii() and port_text.isdigit()) or len(significant) > len(str(_PORT_MAX)):
        return UrlRejection.MALFORMED
    port = int(significant or "0")
    return UrlRejection.MALFORMED if port > _PORT_MAX else port


def _is_plain_name(host_text: str) -> bool:
    return _PLAIN_NAME.fullmatch(host_text) is not None and "xn--" not in host_text


def _domain_or_ipv4_host(host_text: str) -> str | None:
    if _is_plain_name(host_text):
        # Lower-case ASCII labels ending in a letter: percent-decoding and UTS #46
        # leave them as they are, they cannot be an IPv4 address, and each is a
        # valid label, so the reading below would return them unchanged.
        return host_text
    return _read_host(host_text)


def _read_host(host_text: str) -> str | None:
    """Percent-decode, map by UTS #46, then an IPv4 address or a name of valid labels."""
    try:
        decoded = unquote_to_bytes(host_text).decode("utf-8")
        mapped = idna.uts46_remap(decoded, std3_rules=False)
    except UnicodeError:  # not UTF-8, a disallowed code point, or over idna's input bound
        return None
    if _ends_in_a_number(mapped):
        address = _parse_ipv4(mapped)
        return None if address is None else str(ipaddress.IPv4Address(address))
    return _ascii_name(mapped)


def _ascii_name(mapped: str) -> str | None:
    labels = mapped.split(".")
    has_root_dot = len(labels) > 1 and labels[-1] == ""
    if has_root_dot:
        labels.pop()
    ascii_labels: list[str] = []
    for label in labels:
        ascii_label = _ascii_label(label)
        if ascii_label is None:
            return None
        ascii_labels.append(ascii_label)
    name = ".".join(ascii_labels)
    if len(name) > _NAME_MAX_OCTETS:
        return None
    return name + "." if has_root_dot else name


def _ascii_label(label: str) -> str | None:
    try:
        if not label.isascii():
            label = idna.alabel(label).decode("ascii")
        elif label.startswith("xn--"):
            idna.ulabel(label)  # raises unless a valid, canonical A-label
    except UnicodeError:
        return None
    return label if _HOST_LABEL.fullmatch(label) else None


def _ends_in_a_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "":
        if len(parts) == 1:
            return False
        parts.pop()
    last = parts[-1]
    if last and last.isascii() and last.isdigit():
        return True
    return _parse_ipv4_number(last) is not None


def _parse_ipv4(host: str) -> int | None:
    """WHATWG IPv4 parser: one to four parts, each decimal, 0-octal or 0x-hex."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if len(parts) > 4:
        return None
    numbers: list[int] = []
    for part in parts:
        number = _parse_ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    if any(number > 255 for number in numbers[:-1]):
        return None
    if numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    address = numbers[-1]
    for position, number in enumerate(numbers[:-1]):
        address += number * 256 ** (3 - position)
    return address


def _parse_ipv4_number(part: str) -> int | None:
    """WHATWG IPv4 number: decimal, 0-prefixed octal or 0x-prefixed hex; None if not one."""
    if not part:
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not _IPV4_DIGITS[radix].issuperset(part):
        return None
    significant = part.lstrip("0")  # `0x` alone and `00` are zero in WHATWG
    if len(significant) > _IPV4_SIGNIFICANT_DIGITS_MAX:
        return _IPV4_TOO_BIG
    return int(significant or "0", radix)


def _ipv6_host(text: str) -> str | None:
    # The character check comes first: `ipaddress` also accepts a `%zone`.
    if not _IPV6_TEXT.fullmatch(text):
        return None
    try:
        packed = ipaddress.IPv6Address(text).packed
    except ValueError:
        return None
    return f"[{_compress_ipv6(packed)}]"


def _compress_ipv6(packed: bytes) -> str:
    """WHATWG's IPv6 serializer: lower-case hex, the first longest run (>= 2) of zeros as `::`."""
    pieces = [int.from_bytes(packed[i : i + 2], "big") for i in range(0, 16, 2)]
    run_start, run_length = -1, 1
    index = 0
    while index < 8:
        end = index
        while end < 8 and pieces[end] == 0:
            end += 1
        if end - index > run_length:
            run_start, run_length = index, end - index
        index = end + 1
    if run_start == -1:
        return ":".join(f"{piece:x}" for piece in pieces)
    head = ":".join(f"{piece:x}" for piece in pieces[:run_start])
    tail = ":".join(f"{piece:x}" for piece in pieces[run_start + run_length :])
    return f"{head}::{tail}"


# --- path, query and fragment -------------------------------------------------


def _encode(to_encode: re.Pattern[str], component: str) -> str:
    return to_encode.sub(_escape_match, component)


def _escape_match(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8"))


def _without_tracking(query: str) -> str | None:
    """Drop tracking parameters; None when that leaves the query empty."""
    parameters = query.split("&")
    kept = [parameter for parameter in parameters if not _is_tracking(parameter)]
    if len(kept) == len(parameters):
        return query
    return "&".join(kept) if any(kept) else None


def _is_tracking(parameter: str) -> bool:
    name = parameter.partition("=")[0]
    if "%" in name:
        name = unquote(name)
    return name in TRACKING_PARAMETERS or name.startswith(TRACKING_PARAMETER_PREFIXES)


def _normalize_escapes(component: str) -> str:
    if "%" not in component or _escapes_kept(component, len(component)):
        return component
    return _ESCAPE.sub(_normalize_escape, component)


def _escapes_kept(text: str, end: int) -> bool:
    """Whether `_normalize_escape` keeps every escape of `text[:end]` as it is.

    Escapes never overlap (a hex digit is not `%`), so these are the escapes
    `_ESCAPE.sub` replaces; `end` never cuts one that counts (it is the end of
    the text or of a query or path, before a `#`).
    """
    return _KEPT_ESCAPE_DIGITS.issuperset(_ESCAPE.findall(text, 0, end))


def _normalize_escape(match: re.Match[str]) -> str:
    character = chr(int(match.group(1), 16))
    return character if character in _UNRESERVED else match.group().upper()
