"""robots.txt cases the first mutation run showed no test checked (REQ-CMP-005, REQ-TEST-019).

Each test names the checks of rypsok.core.fetch.robots it pins down: the
wildcard matcher's positions, the anchor's octet in a rule's priority, the cut
at LIM-F13 for every line-break style, comments, colons in values, the status
ranges of RFC 9309 §2.3.1 and how long each verdict is kept, and the cache's
bounds and its single read in flight.
"""

from __future__ import annotations

import logging

import anyio
import pytest

from rypsok.core import limits
from rypsok.core.fetch.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    RobotsAnswer,
    RobotsCache,
    origin_and_path,
    parse_robots,
    rules_for,
)

ALL = b"User-agent: *\n"
URL = "https://example.com/a"


def allows(body: bytes, path: str) -> bool:
    return parse_robots(body).allows(path)


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("rule", "path", "allowed"),
    [
        ("/x*x*y", "/xy", True),  # a middle piece is looked for after the first, not before
        ("/x*x*y", "/xxy", False),
        ("*/a*b", "/ab", False),  # a middle piece may sit at the path's first octet
        ("/a*a$", "/a", True),  # the anchored last piece may not overlap the first
        ("/a*a$", "/aa", False),
        ("/a*b", "/ab", False),
        ("/a*b", "/ac", True),
    ],
)
def test_wildcards_match_left_to_right_without_overlap(rule: str, path: str, allowed: bool) -> None:
    """REQ-CMP-005: each `*` piece is found after the one before it, from the path's start."""
    assert allows(ALL + f"Disallow: {rule}\n".encode(), path) is allowed


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_the_end_anchor_counts_as_an_octet_of_the_rule() -> None:
    """REQ-CMP-005: `Allow: /page$` (6 octets) is more specific than `Disallow: /page` (5)."""
    body = ALL + b"Disallow: /page\nAllow: /page$\n"
    assert allows(body, "/page") and not allows(body, "/pages")


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_comments_end_at_the_first_hash_and_values_keep_their_colons() -> None:
    """REQ-CMP-005: `#` starts a comment wherever it is; a value may hold `:`."""
    assert not allows(ALL + b"Disallow: /a # one # two\n", "/a")
    assert not allows(ALL + b"Disallow: /a:b\n", "/a:b")
    assert allows(ALL + b"Disallow: /a:b\n", "/a")


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_a_rule_before_any_group_is_skipped_and_the_file_goes_on() -> None:
    """REQ-CMP-005: a rule above every user-agent line belongs to no group; later ones count."""
    body = b"Disallow: /x\nUser-agent: *\nDisallow: /a\n"
    assert allows(body, "/x") and not allows(body, "/a")


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_a_star_followed_by_words_names_every_agent() -> None:
    """REQ-CMP-005: `User-agent: * anything` is the `*` group; `*bot` is a name, not a star."""
    assert not allows(b"User-agent: * x\nDisallow: /a\n", "/a")
    assert allows(b"User-agent: *x\nDisallow: /a\n", "/a")


def _padded_to_limit(tail: bytes, *, newline: bytes = b"\n") -> bytes:
    """Comment lines, then `tail`, so that the body is exactly LIM-F13 bytes long."""
    pad = b"#" + b"p" * 62 + newline
    head = ALL.replace(b"\n", newline)
    room = limits.ROBOTS_MAX_BYTES - len(head) - len(tail)
    lines, rest = divmod(room, len(pad))
    body = head + pad * lines + b"#" * (rest - len(newline)) + newline + tail
    assert len(body) == limits.ROBOTS_MAX_BYTES, len(body)
    return body


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_a_body_of_exactly_the_limit_loses_its_unterminated_last_line() -> None:
    """REQ-CMP-005: a body that reaches LIM-F13 may have been cut there: its last line, if it
    has no line break, is dropped rather than read as a shorter rule."""
    body = _padded_to_limit(b"Disallow: /cut")
    assert allows(body, "/cut")
    assert not allows(body[:-1] + b"\n", "/cu")  # the same line, ended, is a rule


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_the_cut_at_the_limit_keeps_every_complete_line_for_each_break(newline: bytes) -> None:
    """REQ-CMP-005: past LIM-F13 the body ends at its last line break, whichever the file
    uses (LF, CR, CRLF): the last complete rule is kept whole and the cut one is dropped."""
    body = _padded_to_limit(b"Disallow: /ab" + newline + b"Disallow: /cut", newline=newline)
    longer = body + b"more" + newline
    for text in (body, longer):
        assert not allows(text, "/ab")
        assert allows(text, "/ac") and allows(text, "/cut")


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_each_status_range_of_rfc_9309_gives_its_verdict() -> None:
    """REQ-CMP-005: 2xx is parsed, 3xx (redirects exhausted) and 5xx disallow all, 4xx
    (400 and 499 included) allows all."""
    body = ALL + b"Disallow: /a\n"
    assert rules_for(RobotsAnswer(299, body)).allows("/b")
    assert not rules_for(RobotsAnswer(299, body)).allows("/a")
    for status in (300, 399, 500, 599, None):
        assert rules_for(RobotsAnswer(status, body)) is DISALLOW_ALL, status
    for status in (400, 404, 499):
        assert rules_for(RobotsAnswer(status, body)) is ALLOW_ALL, status


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("status", "kept_s"),
    [(200, 100.0), (400, 100.0), (499, 100.0), (300, 10.0), (399, 10.0), (500, 10.0)],
)
async def test_a_definite_answer_is_kept_longer_than_an_unreachable_one(
    status: int, kept_s: float
) -> None:
    """REQ-CMP-005: 2xx and 4xx are kept for the cache's time, 3xx and 5xx for the shorter
    unreachable time, after which the site is asked again."""
    calls: list[str] = []

    async def read(origin: str) -> RobotsAnswer:
        calls.append(origin)
        return RobotsAnswer(status, b"")

    clock = Clock()
    cache = RobotsCache(read, ttl_s=100.0, unreachable_ttl_s=10.0, clock=clock)
    await cache.allowed(URL)
    clock.now += kept_s - 0.5
    await cache.allowed(URL)
    assert len(calls) == 1
    clock.now += 1.0
    await cache.allowed(URL)
    assert len(calls) == 2


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
async def test_a_zero_unreachable_time_asks_again_at_once_and_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-CMP-005: `unreachable_ttl_s = 0` keeps no failed read; each failure is a warning."""
    calls: list[str] = []

    async def read(origin: str) -> RobotsAnswer:
        calls.append(origin)
        raise ConnectionResetError

    cache = RobotsCache(read, unreachable_ttl_s=0.0, clock=Clock())
    with caplog.at_level(logging.INFO, logger="rypsok"):
        assert not await cache.allowed(URL)
        assert not await cache.allowed(URL)
    assert len(calls) == 2
    failures = [r for r in caplog.records if r.getMessage() == "robots_read_failed"]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.WARNING]


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
async def test_waiters_share_the_read_even_when_nothing_is_kept() -> None:
    """REQ-CMP-005: with `ttl_s = 0` nothing is cached, yet callers that wait for a read in
    flight take its verdict instead of reading again."""
    calls: list[str] = []
    gate = anyio.Event()

    async def read(origin: str) -> RobotsAnswer:
        calls.append(origin)
        await gate.wait()
        return RobotsAnswer(200, ALL + b"Disallow: /a\n")

    cache = RobotsCache(read, ttl_s=0.0, clock=Clock())
    results: list[bool] = []

    async def check() -> None:
        results.append(await cache.allowed(URL))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(check)
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert results == [False, False, False] and len(calls) == 1


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
async def test_the_cache_bounds_are_checked_and_named() -> None:
    """REQ-CMP-005: ttl_s from 0 to LIM-F12 and at least one origin are accepted; anything
    else is refused with a message that names the bound."""

    async def read(origin: str) -> RobotsAnswer:
        return RobotsAnswer(404, b"")

    RobotsCache(read, ttl_s=0.0)
    RobotsCache(read, ttl_s=float(limits.ROBOTS_CACHE_S))
    one = RobotsCache(read, max_origins=1)
    await one.allowed("https://a.example/")
    await one.allowed("https://b.example/")
    assert len(one) == 1
    for ttl_s in (-0.1, limits.ROBOTS_CACHE_S + 1):
        with pytest.raises(ValueError, match=r"^ttl_s must lie between 0 and LIM-F12$"):
            RobotsCache(read, ttl_s=ttl_s)
    with pytest.raises(ValueError, match=r"^max_origins must be at least 1$"):
        RobotsCache(read, max_origins=0)


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_origin_and_path_of_a_url() -> None:
    """REQ-CMP-005: the origin and the path as sent (`/` when empty, the query after `?`);
    anything but an http(s) URL with a host is refused in words."""
    assert origin_and_path("http://Example.com") == ("http://example.com", "/")
    assert origin_and_path("https://h:8443/p?q=1") == ("https://h:8443", "/p?q=1")
    assert origin_and_path("http://[::1]:80/x") == ("http://[::1]", "/x")
    for url in ("ftp://h/x", "http:///x"):
        with pytest.raises(
            ValueError, match=r"^robots\.txt applies to http and https URLs with a host$"
        ):
            origin_and_path(url)


@pytest.mark.req("REQ-CMP-005", "REQ-TEST-019")
def test_a_malformed_product_token_is_refused_citing_the_rfc() -> None:
    """REQ-CMP-005: the caller's product token is letters, `_` and `-`; the refusal says so."""
    with pytest.raises(ValueError) as refused:
        parse_robots(b"", "rypsok/1.0")
    assert str(refused.value) == "a product token is letters, '_' and '-' only (RFC 9309 §2.2.1)"
