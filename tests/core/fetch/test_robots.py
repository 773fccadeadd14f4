"""robots.txt parsing, status mapping and the per-origin verdict cache (RFC 9309)."""

from __future__ import annotations

import logging
import random
import re

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    PRODUCT_NAME,
    UNREACHABLE_TTL_S,
    RobotsAnswer,
    RobotsCache,
    parse_robots,
    rules_for,
)

KIB = 1024
# One comment line of exactly 1 KiB: padding that carries no record.
PAD = b"# " + b"x" * (KIB - 3) + b"\n"


# Groups for rypsok and for "*" spread over the file, to be merged per agent.
MERGED = (
    b"User-agent: rypsok\nDisallow: /a\n\n"
    b"User-agent: *\nDisallow: /b\n\n"
    b"User-agent: rypsok\nDisallow: /c\n"
)
MERGED_STAR = (
    b"User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: *\nDisallow: /c\n"
)


def allows(body: bytes, path: str, token: str = PRODUCT_NAME) -> bool:
    return parse_robots(body, token).allows(path)


# (id, robots.txt, path, allowed?) — the RFC 9309 conformance table of docs/robots.md.
CONFORMANCE = [
    # §2.2.1 product token: case-insensitive, letters "_" "-", exact name
    ("ua-case", b"User-agent: RyPsOk\nDisallow: /a\n", "/a", False),
    ("ua-version", b"User-agent: rypsok/1.0\nDisallow: /a\n", "/a", False),
    ("ua-version-comment", b"User-agent: Rypsok/2 # us\nDisallow: /a\n", "/a", False),
    ("ua-longer-name", b"User-agent: rypsokbot\nDisallow: /a\n", "/a", True),
    ("ua-hyphen-name", b"User-agent: rypsok-news\nDisallow: /a\n", "/a", True),
    ("ua-shorter-name", b"User-agent: ryp\nDisallow: /a\n", "/a", True),
    ("ua-star-glued", b"User-agent: *bot\nDisallow: /a\n", "/a", True),
    (
        "ua-specific-over-star",
        b"User-agent: *\nDisallow: /\n\nUser-agent: rypsok\nDisallow: /private\n",
        "/public",
        True,
    ),
    ("ua-empty-group", b"User-agent: *\nDisallow: /\n\nUser-agent: rypsok\n", "/x", True),
    (
        "ua-star-fallback",
        b"User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /a\n",
        "/b",
        True,
    ),
    ("ua-no-group-applies", b"User-agent: other\nDisallow: /\n", "/x", True),
    # §2.1 groups: consecutive user-agent lines share the rules below them
    (
        "group-blank-between-agents",
        b"User-agent: rypsok\n\nUser-agent: other\nDisallow: /a\n",
        "/a",
        False,
    ),
    ("group-shared", b"User-agent: other\nUser-agent: rypsok\nDisallow: /a\n", "/a", False),
    (
        "group-ends-at-agent",
        b"User-agent: rypsok\nDisallow: /a\nUser-agent: other\nDisallow: /b\n",
        "/b",
        True,
    ),
    (
        "group-merge-specific-1",
        MERGED,
        "/a",
        False,
    ),
    (
        "group-merge-specific-2",
        MERGED,
        "/c",
        False,
    ),
    (
        "group-merge-specific-3",
        MERGED,
        "/b",
        True,
    ),
    (
        "group-merge-star",
        MERGED_STAR,
        "/c",
        False,
    ),
    ("group-rules-before-agent", b"Disallow: /a\nUser-agent: *\nDisallow: /b\n", "/a", True),
    (
        "group-other-records-inside",
        b"User-agent: *\nCrawl-delay: 5\nSitemap: https://e.test/s.xml\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "group-sitemap-between-agents",
        b"User-agent: rypsok\nSitemap: https://e.test/s.xml\nUser-agent: x\nDisallow: /a\n",
        "/a",
        False,
    ),
    # §2.2.2 longest match, allow wins a tie, case-sensitive, query included
    ("longest-allow-after", b"User-agent: *\nDisallow: /\nAllow: /public\n", "/public/x", True),
    (
        "longest-disallow-after",
        b"User-agent: *\nAllow: /folder\nDisallow: /folder/secret\n",
        "/folder/secret/x",
        False,
    ),
    (
        "longest-rfc-example",
        b"User-agent: *\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
        "/example/page/disallowed.gif",
        False,
    ),
    ("tie-allow-same", b"User-agent: *\nDisallow: /page\nAllow: /page\n", "/page", True),
    ("tie-allow-before", b"User-agent: *\nAllow: /page\nDisallow: /page\n", "/page", True),
    ("tie-allow-wildcard", b"User-agent: *\nDisallow: /ab*\nAllow: /abc\n", "/abcd", True),
    ("case-sensitive-path", b"User-agent: *\nDisallow: /A\n", "/a", True),
    ("query-in-rule", b"User-agent: *\nDisallow: /search?q=\n", "/search?q=cats", False),
    ("prefix-only-from-start", b"User-agent: *\nDisallow: /b\n", "/a/b", True),
    ("pattern-without-slash", b"User-agent: *\nDisallow: private\n", "/private", True),
    # §2.2.3 "*" and "$"
    ("star-middle-hit", b"User-agent: *\nDisallow: /a*b\n", "/axxb", False),
    ("star-middle-miss", b"User-agent: *\nDisallow: /a*b\n", "/axx", True),
    ("star-double", b"User-agent: *\nDisallow: /a**b\n", "/a-b", False),
    ("dollar-hit", b"User-agent: *\nDisallow: /*.gif$\n", "/x/y.gif", False),
    ("dollar-miss-query", b"User-agent: *\nDisallow: /*.gif$\n", "/x/y.gif?s=1", True),
    ("dollar-miss-suffix", b"User-agent: *\nDisallow: /*.gif$\n", "/x/y.gifs", True),
    ("dollar-root-other", b"User-agent: *\nDisallow: /$\n", "/x", True),
    ("dollar-root-hit", b"User-agent: *\nDisallow: /$\n", "/", False),
    ("dollar-exact-miss", b"User-agent: *\nDisallow: /a$\n", "/ab", True),
    ("star-leading", b"User-agent: *\nDisallow: *.pdf\n", "/doc/x.pdf", False),
    ("star-only", b"User-agent: *\nDisallow: *\n", "/x", False),
    ("dollar-inner-literal", b"User-agent: *\nDisallow: /a$b\n", "/a$b", False),
    ("dollar-inner-not-anchor", b"User-agent: *\nDisallow: /a$b\n", "/a", True),
    ("literal-star-encoded", b"User-agent: *\nDisallow: /a-%2A.html\n", "/a-*.html", False),
    ("literal-dollar-encoded", b"User-agent: *\nDisallow: /foo-%24\n", "/foo-$", False),
    ("path-star-is-literal", b"User-agent: *\nDisallow: /a*b$\n", "/a*b", False),
    # §2.2.2 percent-encoding: unreserved decoded, reserved kept, non-ASCII encoded
    ("pct-rule-tilde", b"User-agent: *\nDisallow: /%7Efoo\n", "/~foo", False),
    ("pct-path-tilde", b"User-agent: *\nDisallow: /~foo\n", "/%7Efoo", False),
    ("pct-path-tilde-lower", b"User-agent: *\nDisallow: /~foo\n", "/%7efoo", False),
    ("pct-unreserved-letters", b"User-agent: *\nDisallow: /baz\n", "/%62%61%7A", False),
    ("pct-slash-rule", b"User-agent: *\nDisallow: /a%2Fb\n", "/a/b", True),
    ("pct-slash-path", b"User-agent: *\nDisallow: /a/b\n", "/a%2Fb", True),
    ("pct-slash-both", b"User-agent: *\nDisallow: /a%2fb\n", "/a%2Fb", False),
    ("utf8-rule", "User-agent: *\nDisallow: /foo/bar/ツ\n".encode(), "/foo/bar/%E3%83%84", False),
    ("utf8-path", b"User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "/foo/bar/ツ", False),
    (
        "utf8-lower-hex",
        b"User-agent: *\nDisallow: /foo/bar/%E3%83%84\n",
        "/foo/bar/%e3%83%84",
        False,
    ),
    ("non-utf8-octets", b"User-agent: *\nDisallow: /caf\xe9\n", "/caf%E9", False),
    ("space-in-path", b"User-agent: *\nDisallow: /a b\n", "/a%20b", False),
    # §2.1-§2.2 file format
    ("bom", b"\xef\xbb\xbfUser-agent: *\nDisallow: /a\n", "/a", False),
    ("bom-only-at-start", b"User-agent: *\n\xef\xbb\xbfDisallow: /a\n", "/a", True),
    ("no-colon-line", b"User-agent: *\nthis line is not a record\nDisallow: /a\n", "/a", False),
    # A missing colon, read as Google's reference parser (robots.cc) reads it:
    # exactly two words separated by spaces or tabs are a key and its value.
    ("no-colon-rule", b"User-agent: *\nDisallow /a\n", "/a", False),
    ("no-colon-rule-tab", b"User-agent: *\nDisallow\t \t/a\n", "/a", False),
    ("no-colon-allow", b"User-agent: *\nDisallow: /\nAllow /a\n", "/a", True),
    ("no-colon-user-agent", b"User-agent rypsok\nDisallow: /a\n", "/a", False),
    ("no-colon-comment", b"User-agent: *\nDisallow /a # old\n", "/a", False),
    ("no-colon-outer-blanks", b"User-agent: *\n  Disallow /a\t\n", "/a", False),
    ("no-colon-three-words", b"User-agent: *\nDisallow /a /b\n", "/a", True),
    ("no-colon-key-only", b"User-agent: *\nDisallow\nDisallow: /b\n", "/b", False),
    ("no-colon-unknown-key", b"User-agent: *\nNoindex /a\n", "/a", True),
    ("colon-later-in-line-wins", b"User-agent: *\nDisallow /a:b\n", "/a:b", True),
    (
        "no-colon-rule-ends-agents",
        b"User-agent: rypsok\nDisallow /a\nUser-agent: x\nDisallow: /b\n",
        "/b",
        True,
    ),
    ("ws-before-colon", b"User-agent : *\nDisallow : /a\n", "/a", False),
    ("ws-tabs", b"\tUser-agent:\t*\t\n\tDisallow:\t/a\t\n", "/a", False),
    ("keys-any-case", b"USER-AGENT: *\nDISALLOW: /a\n", "/a", False),
    ("unknown-key", b"User-agent: *\nNoindex: /a\n", "/a", True),
    ("empty-disallow", b"User-agent: *\nDisallow:\n", "/x", True),
    (
        "empty-disallow-specific",
        b"User-agent: rypsok\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
        "/x",
        True,
    ),
    (
        "empty-disallow-ends-agents",
        b"User-agent: rypsok\nDisallow:\nUser-agent: x\nDisallow: /\n",
        "/x",
        True,
    ),
    ("empty-allow", b"User-agent: *\nAllow:\nDisallow: /\n", "/x", False),
    ("robots-txt-allowed", b"User-agent: *\nDisallow: /\n", "/robots.txt", True),
    ("robots-txt-named", b"User-agent: *\nDisallow: /robots.txt\n", "/robots.txt", True),
    ("robots-txt-encoded", b"User-agent: *\nDisallow: /\n", "/%72obots.txt", True),
    ("eol-crlf", b"User-agent: *\r\nDisallow: /a\r\n", "/a", False),
    ("eol-cr", b"User-agent: *\rDisallow: /a\r", "/a", False),
    ("eol-lf", b"User-agent: *\nDisallow: /a\n", "/a", False),
    ("eol-mixed", b"User-agent: x\r\nDisallow: /\rUser-agent: *\nDisallow: /a", "/a", False),
    ("eol-vertical-tab-is-not", b"User-agent: *\x0bDisallow: /a\n", "/a", True),
    ("comment-trailing", b"User-agent: * # everyone\nDisallow: /a # secret\n", "/a", False),
    ("comment-in-value", b"User-agent: *\nDisallow: /a#x\n", "/ab", False),
    ("comment-line", b"User-agent: *\n# Disallow: /b\n", "/b", True),
    ("comment-only-value", b"User-agent: *\nDisallow: # nothing\n", "/x", True),
    ("empty-file", b"", "/x", True),
    ("no-trailing-newline", b"User-agent: *\nDisallow: /a", "/a", False),
]


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize(
    ("body", "path", "expected"),
    [case[1:] for case in CONFORMANCE],
    ids=[case[0] for case in CONFORMANCE],
)
def test_rfc9309_conformance(body: bytes, path: str, expected: bool) -> None:
    """REQ-CMP-005: each RFC 9309 rule of the conformance table gives the RFC's verdict."""
    assert allows(body, path) is expected


@pytest.mark.req("REQ-CMP-005")
def test_other_product_tokens_match_case_insensitively() -> None:
    """REQ-CMP-005: a token of letters, "_" and "-" matches its user-agent line in any case."""
    body = b"User-agent: foo_BAR-baz/3.1\nDisallow: /a\n"
    assert not allows(body, "/a", token="Foo_bar-BAZ")
    assert allows(body, "/a", token="foo_bar")


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize("token", ["", "rypsok/1.0", "ryp sok", "bot2", "*"])
def test_malformed_product_token_is_a_caller_error(token: str) -> None:
    """REQ-CMP-005: a product token outside letters, "_" and "-" is refused (RFC 9309 §2.2.1)."""
    with pytest.raises(ValueError, match="product token"):
        parse_robots(b"User-agent: *\nDisallow: /\n", token)


@pytest.mark.req("REQ-CMP-005")
def test_constants_behave_as_named() -> None:
    """REQ-CMP-005: ALLOW_ALL allows every path; DISALLOW_ALL refuses all but /robots.txt."""
    assert ALLOW_ALL.allows("/x?y=1")
    assert not DISALLOW_ALL.allows("/")
    assert not DISALLOW_ALL.allows("/x?y=1")
    assert DISALLOW_ALL.allows("/robots.txt")


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize("path", ["", "?q=1", "a/b"])
def test_path_without_leading_slash_is_read_from_the_root(path: str) -> None:
    """REQ-CMP-005: a path as sent without "/" (or empty) is matched as rooted at "/"."""
    assert not allows(b"User-agent: *\nDisallow: /\n", path)
    assert allows(b"User-agent: *\nDisallow: /z\n", path)


# --- status mapping (RFC 9309 §2.3.1) ------------------------------------------------

PERMISSIVE_BODY = b"User-agent: *\nAllow: /\n"
STRICT_BODY = b"User-agent: *\nDisallow: /private\n"


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize(
    ("status", "public", "private"),
    [
        (200, True, False),  # parsed
        (203, True, False),
        (401, True, True),  # 4xx, 401 and 403 included: "unavailable", no restriction
        (403, True, True),
        (404, True, True),
        (410, True, True),
        (429, True, True),
        (500, False, False),  # 5xx: unreachable, complete disallow
        (503, False, False),
        (599, False, False),
        (301, False, False),  # redirects exhausted: unreachable
        (308, False, False),
        (None, False, False),  # connection error or timeout
        (100, False, False),  # nothing definite
    ],
)
def test_status_mapping(status: int | None, public: bool, private: bool) -> None:
    """REQ-CMP-005: 2xx is parsed, 4xx allows all, 5xx/3xx/unreachable disallow all."""
    rules = rules_for(RobotsAnswer(status=status, body=STRICT_BODY))
    assert rules.allows("/public") is public
    assert rules.allows("/private") is private
    assert rules.allows("/robots.txt")


@pytest.mark.req("REQ-CMP-005")
def test_server_error_body_is_not_parsed() -> None:
    """REQ-CMP-005: a 5xx whose body would allow everything still disallows (RFC 9309 §2.3.1.4)."""
    assert not rules_for(RobotsAnswer(status=503, body=PERMISSIVE_BODY)).allows("/x")


@pytest.mark.req("REQ-CMP-005")
def test_empty_2xx_allows_all() -> None:
    """REQ-CMP-005: a 2xx with an empty body has no rules, so everything is allowed."""
    assert rules_for(RobotsAnswer(status=204, body=b"")).allows("/x")


# --- size limit (LIM-F13, RFC 9309 §2.5) -----------------------------------------------


@pytest.mark.req("REQ-CMP-005")
def test_rules_after_the_size_limit_are_ignored() -> None:
    """REQ-CMP-005: in a 2 MiB file only the first LIM-F13 bytes count."""
    assert limits.ROBOTS_MAX_BYTES == 500 * KIB
    body = (
        b"User-agent: *\nDisallow: /early\n"
        + PAD * 490
        + b"Disallow: /before-limit\n"
        + PAD * 20
        + b"Disallow: /late\n"
        + PAD * 1600
    )
    assert len(body) > 2 * KIB * KIB
    rules = parse_robots(body)
    assert not rules.allows("/early")
    assert not rules.allows("/before-limit")
    assert rules.allows("/late")


@pytest.mark.req("REQ-CMP-005")
def test_a_line_cut_by_the_size_limit_is_dropped() -> None:
    """REQ-CMP-005: a rule cut at LIM-F13 is not read as a shorter, wider rule."""
    head = b"User-agent: *\nDisallow: /\n"
    pad_len = limits.ROBOTS_MAX_BYTES - len(head) - len(b"Allow: /ab")
    body = head + b"#" * (pad_len - 1) + b"\n" + b"Allow: /abcdef\n"
    assert len(body[: limits.ROBOTS_MAX_BYTES]) == limits.ROBOTS_MAX_BYTES
    assert body[: limits.ROBOTS_MAX_BYTES].endswith(b"Allow: /ab")
    rules = parse_robots(body)
    assert not rules.allows("/abz")
    assert not rules.allows("/abcdef")


@pytest.mark.req("REQ-CMP-005")
def test_a_file_within_the_limit_keeps_its_last_line() -> None:
    """REQ-CMP-005: a file shorter than LIM-F13 is read whole, its unterminated last line too."""
    body = b"User-agent: *\n" + PAD * 400 + b"Disallow: /last"
    assert len(body) < limits.ROBOTS_MAX_BYTES
    assert not parse_robots(body).allows("/last")


# --- hostile input -------------------------------------------------------------------


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-013")
@pytest.mark.timeout(20)
@pytest.mark.parametrize("seed", range(5))
def test_binary_garbage_is_parsed_without_error(seed: int) -> None:
    """REQ-CMP-005, REQ-TEST-013: 600 KiB of random bytes parse to rules and never raise."""
    # Reproducible test data, not a secret.
    body = random.Random(seed).randbytes(600 * KIB)  # noqa: S311
    rules = parse_robots(body)
    assert rules.allows("/robots.txt")
    assert isinstance(rules.allows("/" + "x" * 1000), bool)


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.timeout(20)
def test_huge_lines_stay_bounded() -> None:
    """REQ-CMP-005: a 2 MiB line is cut and dropped; a 400 KiB rule still matches."""
    assert parse_robots(b"User-agent: *\nDisallow: /" + b"a" * (2 * KIB * KIB)).allows("/a")
    long_rule = b"User-agent: *\nDisallow: /" + b"a" * (400 * KIB) + b"\n"
    rules = parse_robots(long_rule)
    assert not rules.allows("/" + "a" * (400 * KIB) + "z")
    assert rules.allows("/" + "a" * (400 * KIB - 1))


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.timeout(20)
def test_a_hundred_thousand_rules_complete() -> None:
    """REQ-CMP-005: 100k rules parse and match quickly; only those within LIM-F13 count."""
    lines = [f"Disallow: /p{i}/\n" for i in range(100_000)]
    rules = parse_robots(("User-agent: *\n" + "".join(lines)).encode())
    assert 20_000 < len(rules.rules) < 100_000
    assert not rules.allows("/p0/x")
    assert rules.allows("/p99999/x")
    for _ in range(100):
        assert rules.allows("/elsewhere/" + "x" * 2000)


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.timeout(20)
def test_wildcard_heavy_patterns_do_not_backtrack() -> None:
    """REQ-CMP-005: patterns of thousands of "*" against long paths finish (no backtracking)."""
    body = (
        b"User-agent: *\nDisallow: /" + b"*a" * 100_000 + b"b\nAllow: /" + b"*a*" * 50_000 + b"$\n"
    )
    rules = parse_robots(body)
    for _ in range(20):
        assert rules.allows("/" + "a" * 50_000)
    assert not rules.allows("/" + "a" * 100_000 + "b")


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.timeout(20)
def test_many_groups_and_agents_complete() -> None:
    """REQ-CMP-005: 20k groups, ours merged from the middle, parse and match."""
    groups = [f"User-agent: bot{i}x\nDisallow: /g{i}\n" for i in range(20_000)]
    groups[10_000] = "User-agent: rypsok\nDisallow: /ours\n"
    rules = parse_robots("".join(groups).encode())
    assert not rules.allows("/ours")
    assert rules.allows("/g1")


# --- the cache (LIM-F12, decision 2) ----------------------------------------------------

URL = "https://example.com/private/page?x=1"
ORIGIN = "https://example.com"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeSite:
    """A `read` that records the origins asked and answers from a table."""

    def __init__(self, answer: RobotsAnswer, *, gate: anyio.Event | None = None) -> None:
        self.answer = answer
        self.gate = gate
        self.calls: list[str] = []

    async def __call__(self, origin: str) -> RobotsAnswer:
        self.calls.append(origin)
        if self.gate is not None:
            await self.gate.wait()
        return self.answer


def strict_site(gate: anyio.Event | None = None) -> FakeSite:
    return FakeSite(RobotsAnswer(status=200, body=STRICT_BODY), gate=gate)


@pytest.mark.req("REQ-CMP-005")
async def test_cache_honours_the_rules() -> None:
    """REQ-CMP-005: the cache answers from the origin's rules for path and query."""
    cache = RobotsCache(strict_site())
    assert not await cache.allowed(URL)
    assert await cache.allowed("https://example.com/public")
    assert await cache.allowed("https://example.com/robots.txt")


@pytest.mark.req("REQ-CMP-005")
async def test_concurrent_callers_share_one_read() -> None:
    """REQ-CMP-005: 20 concurrent checks on one origin cause exactly one robots.txt read."""
    gate = anyio.Event()
    site = strict_site(gate)
    cache = RobotsCache(site)
    results: list[bool] = []

    async def check(i: int) -> None:
        results.append(await cache.allowed(f"https://example.com/private/{i}"))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(check, i)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert site.calls == [ORIGIN]
    assert results == [False] * 20


@pytest.mark.req("REQ-CMP-005")
async def test_origins_are_read_separately_and_normalised() -> None:
    """REQ-CMP-005: one read per origin; scheme and host case and default ports do not split it."""
    site = strict_site()
    cache = RobotsCache(site)
    for url in [
        "https://example.com/a",
        "HTTPS://Example.COM:443/b",
        "https://user:pw@example.com/c",
        "http://example.com/d",
        "http://example.com:80/e",
        "https://example.com:8443/f",
        "https://other.example/g",
        "http://[::1]:8080/h",
        "http://[::1]:8080/i",
    ]:
        await cache.allowed(url)
    assert site.calls == [
        "https://example.com",
        "http://example.com",
        "https://example.com:8443",
        "https://other.example",
        "http://[::1]:8080",
    ]
    assert len(cache) == 5


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "/relative/path", "https:///nohost", "https://e.com:99999/"]
)
async def test_non_http_urls_are_refused(url: str) -> None:
    """REQ-CMP-005: a URL without an http(s) origin is a caller error, not a verdict."""
    site = strict_site()
    with pytest.raises(ValueError):
        await RobotsCache(site).allowed(url)
    assert site.calls == []


@pytest.mark.req("REQ-CMP-005")
async def test_verdict_expires_after_ttl() -> None:
    """REQ-CMP-005: a verdict is reused within ttl_s and read again once it has passed (LIM-F12)."""
    clock = FakeClock()
    site = strict_site()
    cache = RobotsCache(site, ttl_s=100.0, clock=clock)
    await cache.allowed(URL)
    clock.now += 99.9
    await cache.allowed(URL)
    assert len(site.calls) == 1
    clock.now += 0.1
    await cache.allowed(URL)
    assert len(site.calls) == 2


@pytest.mark.req("REQ-CMP-005")
async def test_default_ttl_is_lim_f12() -> None:
    """REQ-CMP-005: by default a verdict lives 24 h (LIM-F12) and no longer."""
    clock = FakeClock()
    site = strict_site()
    cache = RobotsCache(site, clock=clock)
    await cache.allowed(URL)
    clock.now += limits.ROBOTS_CACHE_S - 1
    await cache.allowed(URL)
    assert len(site.calls) == 1
    clock.now += 1
    await cache.allowed(URL)
    assert len(site.calls) == 2


@pytest.mark.req("REQ-CMP-005")
@pytest.mark.parametrize("ttl_s", [-1.0, limits.ROBOTS_CACHE_S + 1])
def test_ttl_beyond_lim_f12_is_refused(ttl_s: float) -> None:
    """REQ-CMP-005: a cache lifetime above LIM-F12 (or negative) cannot be configured."""
    with pytest.raises(ValueError, match="LIM-F12"):
        RobotsCache(strict_site(), ttl_s=ttl_s)


@pytest.mark.req("REQ-CMP-005")
async def test_unreachable_verdict_is_kept_briefly() -> None:
    """REQ-CMP-005: a 5xx disallows, and is read again after UNREACHABLE_TTL_S, not after 24 h."""
    clock = FakeClock()
    site = FakeSite(RobotsAnswer(status=503, body=b""))
    cache = RobotsCache(site, clock=clock)
    assert not await cache.allowed(URL)
    clock.now += UNREACHABLE_TTL_S - 1
    assert not await cache.allowed(URL)
    assert len(site.calls) == 1
    site.answer = RobotsAnswer(status=404, body=b"")
    clock.now += 1
    assert await cache.allowed(URL)
    assert len(site.calls) == 2


@pytest.mark.req("REQ-CMP-005")
async def test_cache_is_bounded_and_evicts_the_oldest() -> None:
    """REQ-CMP-005: beyond max_origins the oldest verdict is dropped and read again when needed."""
    site = strict_site()
    cache = RobotsCache(site, max_origins=2)
    for host in ["a.test", "b.test", "c.test"]:
        await cache.allowed(f"https://{host}/x")
    assert len(cache) == 2
    await cache.allowed("https://c.test/y")
    await cache.allowed("https://b.test/y")
    assert len(site.calls) == 3
    await cache.allowed("https://a.test/y")
    assert site.calls[-1] == "https://a.test"
    assert len(site.calls) == 4


@pytest.mark.req("REQ-CMP-005")
async def test_cancelled_reader_does_not_strand_waiters() -> None:
    """REQ-CMP-005: when the reading caller is cancelled, a waiter starts its own read."""
    answered = RobotsAnswer(status=200, body=STRICT_BODY)
    calls: list[str] = []

    async def read(origin: str) -> RobotsAnswer:
        calls.append(origin)
        if len(calls) == 1:
            await anyio.sleep_forever()
        return answered

    cache = RobotsCache(read)
    results: list[bool] = []
    leader = anyio.CancelScope()

    async def lead() -> None:
        with leader:
            await cache.allowed(URL)

    async def wait() -> None:
        results.append(await cache.allowed(URL))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lead)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(wait)
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert calls == [ORIGIN]
            leader.cancel()
    assert leader.cancelled_caught
    assert results == [False, False]
    assert calls == [ORIGIN, ORIGIN]


@pytest.mark.req("REQ-CMP-005")
async def test_cancelled_waiter_leaves_the_read_alone() -> None:
    """REQ-CMP-005: a waiter cancelled while waiting does not disturb the shared read."""
    gate = anyio.Event()
    site = strict_site(gate)
    cache = RobotsCache(site)
    results: list[bool] = []
    waiter = anyio.CancelScope()

    async def lead() -> None:
        results.append(await cache.allowed(URL))

    async def wait() -> None:
        with waiter:
            await cache.allowed(URL)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lead)
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            waiter.cancel()
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert results == [False]
    assert site.calls == [ORIGIN]


@pytest.mark.req("REQ-CMP-005")
async def test_raising_reader_means_disallow_logged_by_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-CMP-005: a read that raises counts as unreachable; only the exception class is logged."""
    caplog.set_level(logging.DEBUG, logger="rypsok")

    async def read(origin: str) -> RobotsAnswer:
        raise ConnectionResetError("secret-detail from 10.0.0.7")

    cache = RobotsCache(read)
    assert not await cache.allowed(URL)
    assert not await cache.allowed("https://example.com/public")
    failures = [r for r in caplog.records if r.getMessage() == "robots_read_failed"]
    assert len(failures) == 1
    assert getattr(failures[0], "fields", None) == {"error": "ConnectionResetError"}
    assert failures[0].exc_info is None
    assert "secret-detail" not in caplog.text


@pytest.mark.req("REQ-CMP-005")
async def test_waiters_share_a_raising_read() -> None:
    """REQ-CMP-005: concurrent callers all get the disallow of one failed read."""
    gate = anyio.Event()
    calls: list[str] = []

    async def read(origin: str) -> RobotsAnswer:
        calls.append(origin)
        await gate.wait()
        raise TimeoutError

    cache = RobotsCache(read)
    results: list[bool] = []

    async def check() -> None:
        results.append(await cache.allowed(URL))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(check)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert results == [False] * 5
    assert calls == [ORIGIN]


# --- properties (REQ-TEST-013) ----------------------------------------------------------

_KEYS = st.sampled_from(
    ["User-agent", "user-AGENT", "Allow", "disallow", "Disallow", "Sitemap", "Crawl-delay", "x"]
)
_VALUE_CHARS = "/*$%?#=&aAbB~ツ\t \x00\xff-_2FE7"
_VALUES = st.one_of(
    st.sampled_from(["*", "rypsok", "RYPSOK/1.0", "other", "/", ""]),
    st.text(alphabet=_VALUE_CHARS, max_size=12),
)
_SEPARATORS = st.sampled_from([":", " : ", "", ":\t"])
_EOLS = st.sampled_from(["\n", "\r\n", "\r"])
_LINES = st.builds(lambda k, s, v, e: k + s + v + e, _KEYS, _SEPARATORS, _VALUES, _EOLS)
_ROBOTS = st.builds(
    lambda bom, lines: (b"\xef\xbb\xbf" if bom else b"") + "".join(lines).encode("utf-8"),
    st.booleans(),
    st.lists(_LINES, max_size=25),
)
_BODIES = st.one_of(st.binary(max_size=2000), _ROBOTS)
# Any code point, lone surrogates included (a str can carry them; UTF-8 cannot).
_PATHS = st.lists(
    st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=40
).map("".join)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_BODIES, _PATHS)
def test_parse_and_allows_are_total(body: bytes, path: str) -> None:
    """REQ-TEST-013, REQ-CMP-005: any bytes parse and any path (surrogates too) gets a verdict."""
    rules = parse_robots(body)
    assert isinstance(rules.allows(path), bool)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_BODIES)
def test_robots_txt_is_always_allowed(body: bytes) -> None:
    """REQ-TEST-013, REQ-CMP-005: whatever the file says, /robots.txt itself stays allowed."""
    assert parse_robots(body).allows("/robots.txt")


def _reference_match(pattern: str, path: str) -> bool:
    """A regular-expression reading of one rule: "*" any run, final "$" the end."""
    anchored = pattern.endswith("$")
    core = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece) for piece in core.split("*"))
    return re.match(regex + ("$" if anchored else ""), path, re.DOTALL) is not None


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(
    st.text(alphabet="ab*", min_size=1, max_size=8).map(lambda p: "/" + p),
    st.booleans(),
    st.text(alphabet="ab/", max_size=12).map(lambda p: "/" + p),
)
def test_wildcard_matching_agrees_with_a_reference(pattern: str, anchored: bool, path: str) -> None:
    """REQ-TEST-013, REQ-CMP-005: "*" and "$" match exactly as a regular-expression reading."""
    pattern += "$" if anchored else ""
    body = f"User-agent: *\nDisallow: {pattern}\n".encode()
    assert parse_robots(body).allows(path) is not _reference_match(pattern, path)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.text(alphabet="ab*", max_size=5).map(lambda p: "/" + p)),
        min_size=1,
        max_size=6,
    ),
    st.text(alphabet="ab", max_size=8).map(lambda p: "/" + p),
)
def test_longest_match_agrees_with_a_reference(rules: list[tuple[bool, str]], path: str) -> None:
    """REQ-TEST-013, REQ-CMP-005: the longest matching rule decides, allow on a tie, any order."""
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules
    )
    matching = [(len(p), allow) for allow, p in rules if _reference_match(p, path)]
    expected = max(matching)[1] if matching else True
    assert parse_robots(body.encode()).allows(path) is expected
