"""The literal index behind the instruction-like check (REQ-SEC-003, REQ-TEST-019).

The check runs a pattern only where one of its required literals occurs
(`instructions._literal_index`). That is sound only if every match of a
pattern contains one of the literals chosen for it, and it is fast only if
the choice is selective and a pattern without literals is the exception.
These cases pin the parse walk on small patterns whose answer follows from
the rules in `_required_literals`' docstring, and check the index of the
shipped patterns against a plain search of every pattern.
"""

from __future__ import annotations

import re

import pytest

from rypsok.core.boundary import instructions

REQ = pytest.mark.req("REQ-SEC-003", "REQ-TEST-019")


def _literals(pattern: str) -> frozenset[str] | None:
    return instructions._required_literals(instructions._parse(pattern))


@REQ
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", {"abc"}),  # one run of literal characters is one string
        ("a.bcd", {"bcd"}),  # the longest required run
        ("x(?:hello)+", {"hello"}),  # a repeat of at least one is required
        ("x(?:hello){2,3}", {"hello"}),
        ("x(?:hello)*", {"x"}),  # a repeat of zero is not
        ("x(?:hello)?", {"x"}),
        ("(abc)", {"abc"}),  # a group is its own sequence
        ("x(abcdef)", {"abcdef"}),
        ("x(?i:abcdef)", {"x"}),  # a group with its own flags may match in any case
        ("xy(?-i:abcdef)", {"xy"}),
        ("(?:foo|quxx)", {"foo", "quxx"}),  # an alternation is the union of its branches
        ("a(?:foo|quxx)", {"foo", "quxx"}),
        ("(?:foo|.)", None),  # a branch without literals: the pattern always runs
        (".*", None),
        ("[ab]c*", None),
    ],
)
def test_required_literals_follow_the_parse(pattern: str, expected: set[str] | None) -> None:
    """REQ-SEC-003: the literals every match of the pattern must contain, the most selective."""
    found = _literals(pattern)
    assert found == (None if expected is None else frozenset(expected))
    if found is not None:  # sound: a match of the pattern holds one of them
        for sample in ("abc", "a-bcd", "xhello", "xhellohello", "abcdef", "foo", "quxx", "x"):
            match = re.search(pattern, sample)
            if match is not None:
                assert any(literal in match.group(0) for literal in found), (pattern, sample)


@REQ
def test_the_index_runs_case_insensitive_and_literal_free_patterns_always() -> None:
    """REQ-SEC-003: an inline (?i) pattern and one without literals are never filtered."""
    by_literal, always = instructions._literal_index(["abc", "(?i)abcd", "a*", "(?:xy|zw)q"])
    assert by_literal == {"abc": (0,), "xy": (3,), "zw": (3,)}
    assert always == (1, 2)


@REQ
def test_every_shipped_pattern_is_indexed_soundly() -> None:
    """REQ-SEC-003: each shipped pattern is in the index or always runs, and its literals
    occur in every match of it on texts built from its own literals."""
    by_literal = instructions._BY_LITERAL
    indexed = {number for numbers in by_literal.values() for number in numbers}
    always = set(instructions._ALWAYS_RUN)
    assert indexed | always == set(range(len(instructions._PATTERNS)))
    assert not indexed & always
    assert len(always) < len(instructions._PATTERNS) // 4  # the filter does its work
    for literal, numbers in by_literal.items():
        assert literal and all(isinstance(number, int) for number in numbers)
        for number in numbers:  # the literal is one the pattern's own parse requires
            required = _literals(instructions._PATTERNS[number])
            assert required is not None and literal in required
