"""Properties of robots.txt parsing (issue 15, item 2): the contract on generated files.

Each property holds for any file, not only for the cases written down in
test_robots.py: the verdict is total, bounded by LIM-F13, blind to layout that
carries no meaning, monotone in what a site forbids, and reads a colon-less line
the way an independent model of Google's reference parser does. The budget is
fixed and small (derandomized, no example database) so `make test` stays fast.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.robots import (
    DISALLOW_ALL,
    RobotsAnswer,
    RobotsRules,
    origin_and_path,
    parse_robots,
    rules_for,
)

BUDGET = settings(max_examples=150, deadline=None, derandomize=True, database=None)

_RULE_PATHS = st.text(alphabet="abc/*", max_size=8).map(lambda p: "/" + p)
_REQUEST_PATHS = st.text(alphabet="abc/", max_size=10).map(lambda p: "/" + p)
_AGENTS = st.sampled_from(["*", "rypsok", "RypSok/2.0", "otherbot"])
_RULES = st.lists(st.tuples(st.booleans(), _RULE_PATHS), max_size=6)
_GROUPS = st.lists(st.tuples(_AGENTS, _RULES), min_size=1, max_size=4)


def render(groups: list[tuple[str, list[tuple[bool, str]]]], *, eol: str = "\n") -> str:
    """A robots.txt of user-agent groups, one `Key: value` line per record."""
    lines: list[str] = []
    for agent, rules in groups:
        lines.append(f"User-agent: {agent}")
        lines.extend(f"{'Allow' if allow else 'Disallow'}: {path}" for allow, path in rules)
        lines.append("")
    return eol.join(lines) + eol


def verdicts(body: bytes, paths: list[str]) -> list[bool]:
    rules = parse_robots(body)
    return [rules.allows(path) for path in paths]


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(_GROUPS, st.lists(_REQUEST_PATHS, min_size=1, max_size=5), st.sampled_from(["\r\n", "\r"]))
def test_line_endings_do_not_change_a_verdict(
    groups: list[tuple[str, list[tuple[bool, str]]]], paths: list[str], eol: str
) -> None:
    """REQ-TEST-013, REQ-CMP-005: CR, LF and CRLF files give the same verdict (RFC 9309 §2.2)."""
    unix = render(groups).encode()
    other = render(groups, eol=eol).encode()
    assert verdicts(other, paths) == verdicts(unix, paths)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(_GROUPS, st.lists(_REQUEST_PATHS, min_size=1, max_size=5), st.text("ab #:", max_size=8))
def test_comments_keys_case_and_bom_do_not_change_a_verdict(
    groups: list[tuple[str, list[tuple[bool, str]]]], paths: list[str], comment: str
) -> None:
    """REQ-TEST-013, REQ-CMP-005: comments, key case and a leading BOM carry no meaning."""
    plain = render(groups)
    decorated = "\ufeff" + "".join(
        line.replace("User-agent:", "USER-AGENT:").replace("Disallow:", "disallow:")
        + (f" #{comment}" if line.strip() else "")
        + "\n"
        for line in plain.split("\n")[:-1]
    )
    assert verdicts(decorated.encode(), paths) == verdicts(plain.encode(), paths)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(_GROUPS, _RULE_PATHS, st.lists(_REQUEST_PATHS, min_size=1, max_size=5))
def test_another_disallow_never_allows_more(
    groups: list[tuple[str, list[tuple[bool, str]]]], extra: str, paths: list[str]
) -> None:
    """REQ-TEST-013, REQ-CMP-005: one more Disallow never turns a refusal into a fetch."""
    agent, rules = groups[0]
    # A group with no rule merges with the next one (RFC 9309 2.1: consecutive
    # user-agent lines form one group); adding a rule would split them.
    assume(rules)
    before = verdicts(render(groups).encode(), paths)
    widened = [(agent, [*rules, (False, extra)]), *groups[1:]]
    after = verdicts(render(widened).encode(), paths)
    assert all(
        allowed_after <= allowed for allowed_after, allowed in zip(after, before, strict=True)
    )


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(
    _GROUPS,
    st.lists(_REQUEST_PATHS, min_size=1, max_size=5),
    st.binary(min_size=1, max_size=64),
)
def test_bytes_beyond_lim_f13_are_never_read(
    groups: list[tuple[str, list[tuple[bool, str]]]], paths: list[str], tail: bytes
) -> None:
    """REQ-TEST-013, REQ-CMP-005: LIM-F13 holds: what follows the first 500 KiB has no effect."""
    head = render(groups).encode()
    padding = b"#" * (limits.ROBOTS_MAX_BYTES - len(head) - 1) + b"\n"
    body = head + padding
    assert len(body) == limits.ROBOTS_MAX_BYTES
    assert verdicts(body + tail, paths) == verdicts(body, paths)
    assert verdicts(body + b"\nUser-agent: *\nDisallow: /\n", paths) == verdicts(body, paths)


_UNRESERVED = "abcXYZ019-._~"


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(_GROUPS, st.text(alphabet=_UNRESERVED + "/", max_size=10), st.data())
def test_escaped_unreserved_characters_match_as_themselves(
    groups: list[tuple[str, list[tuple[bool, str]]]], tail: str, data: st.DataObject
) -> None:
    """REQ-TEST-013, REQ-CMP-005: `%61` and `a` are one path to every rule (RFC 9309 §2.2.2)."""
    path = "/" + tail
    escaped = "".join(
        f"%{ord(c):02X}" if c in _UNRESERVED and data.draw(st.booleans()) else c for c in path
    )
    rules = parse_robots(render(groups).encode())
    assert rules.allows(escaped) is rules.allows(path)


def reference_record(line: str) -> tuple[str, str] | None:
    """An independent model of robots.cc GetKeyAndValueFrom (google/robotstxt).

    Cut the comment, trim; split at the first colon; without one, accept exactly
    two runs of non-blank characters separated by spaces or tabs; the key must
    not be empty.
    """
    content = line.split("#", 1)[0].strip()
    if ":" in content:
        key, _, value = content.partition(":")
    else:
        words = content.replace("\t", " ").split(" ")
        words = [word for word in words if word]
        if len(words) != 2:
            return None
        key, value = words
    key = key.strip()
    return (key.lower(), value.strip()) if key else None


_LINE_WORDS = st.sampled_from(["Disallow", "Allow", "User-agent", "disallow", "Sitemap", "x"])
_COLONLESS_LINES = st.builds(
    lambda key, gap, value, more: key + gap + value + more,
    _LINE_WORDS,
    st.sampled_from([" ", "\t", "  \t ", ""]),
    st.text(alphabet="/abc*$", max_size=6),
    st.sampled_from(["", " /z", "\t/y", " # note", "   "]),
)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(_COLONLESS_LINES, max_size=6), st.lists(_REQUEST_PATHS, min_size=1, max_size=4))
def test_colonless_lines_are_read_as_the_reference_parser_reads_them(
    lines: list[str], paths: list[str]
) -> None:
    """REQ-TEST-013, REQ-CMP-005: a file of colon-less lines gets the verdict of the same file
    rewritten with colons wherever the reference parser's rule finds a record."""
    raw = "User-agent: *\n" + "".join(line + "\n" for line in lines)
    records = [reference_record(line) for line in raw.split("\n")]
    normalized = "".join(f"{key}: {value}\n" for key, value in filter(None, records))
    assert verdicts(raw.encode(), paths) == verdicts(normalized.encode(), paths)


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(st.one_of(st.none(), st.integers(-1_000, 1_000)), st.binary(max_size=200))
def test_every_status_has_one_verdict(status: int | None, body: bytes) -> None:
    """REQ-TEST-013, REQ-CMP-005: any status gives rules; 4xx allow all, non-2xx/4xx refuse."""
    rules = rules_for(RobotsAnswer(status=status, body=body))
    assert isinstance(rules, RobotsRules)
    if status is not None and 400 <= status < 500:
        assert rules.allows("/anything")
    elif status is None or not 200 <= status < 300:
        assert rules == DISALLOW_ALL


@pytest.mark.req("REQ-TEST-013", "REQ-CMP-005")
@BUDGET
@given(st.text(max_size=60))
def test_origin_and_path_raise_only_value_error(url: str) -> None:
    """REQ-TEST-013, REQ-CMP-005: any string gives an origin and a rooted path, or ValueError."""
    try:
        origin, path = origin_and_path(url)
    except ValueError:
        return
    assert origin.startswith(("http://", "https://"))
    assert path.startswith("/")
