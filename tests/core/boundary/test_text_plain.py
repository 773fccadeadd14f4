"""The plain-text fast path of `clean_text` gives what every step gives.

Most titles and snippets are printable ASCII without markup, entities or
stray spaces; `clean_text` answers those without running the steps
(performance §20.2). These tests hold the shortcut to the steps' answer and
check that it is taken where it should be, so it cannot silently go unused.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.boundary import text as cleaning
from rypsok.core.boundary.text import CleanText, clean_text

# Printable ASCII, the characters each condition of the shortcut is about, and
# characters just outside it that the later steps change or judge.
_ALPHABET = (
    "".join(map(chr, range(0x20, 0x7F)))
    + "  \t\n\x00\x1f\x7f\x85\xa0é\u034f\u115f\u200b\u200c\u200d\u2028\ufe0f\U0001f600"
)
_TEXTS = st.one_of(
    st.text(alphabet=_ALPHABET, max_size=40),
    st.text(alphabet="ab .-", max_size=40),
)


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-015", "REQ-TEST-013")
@settings(max_examples=400, deadline=None)
@given(_TEXTS, st.integers(min_value=0, max_value=45))
def test_the_plain_fast_path_gives_every_steps_answer(raw: str, max_chars: int) -> None:
    """REQ-CTX-004, REQ-SEC-015, REQ-TEST-013: same text and flags, shortcut or not."""
    assert clean_text(raw, max_chars) == cleaning._every_step(raw, max_chars)
    if cleaning._is_plain(raw):
        assert cleaning._every_step(raw, 10**9) == CleanText(raw, False, 0, False)


@pytest.mark.req("REQ-CTX-004")
@pytest.mark.parametrize(
    "raw",
    [
        "Quantum mechanics",
        "HTTPX is a fully featured HTTP client for Python 3, which provides sync and async APIs.",
        "a",
        "",
        "x = 1; y = (2 + 3) * 4 > 5 ? \"q\" : 'r' # ~`|\\^{}[]@$%!",
    ],
)
def test_plain_text_takes_the_fast_path(raw: str) -> None:
    """REQ-CTX-004: printable ASCII without markup, entities or stray spaces is plain."""
    assert cleaning._is_plain(raw)
    assert clean_text(raw, 500) == CleanText(raw, False, 0, False)


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-015")
@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        (" a b", "a b"),
        ("a b ", "a b"),
        ("a  b", "a b"),
        ("a\tb", "a b"),
        ("a\x7fb", "ab"),
        ("a\x00b", "ab"),
        ("a<b>c</b>", "ac"),
        ("a&amp;b", "a&b"),
        ("caf\u00e9", "caf\u00e9"),
        ("a\u200bb", "ab"),
        ("a\u115fb", "ab"),
        ("a\u034fb", "ab"),
    ],
)
def test_text_a_step_changes_or_judges_takes_every_step(raw: str, cleaned: str) -> None:
    """REQ-CTX-004, REQ-SEC-015: a space at an end or doubled, markup, entities, non-ASCII."""
    assert not cleaning._is_plain(raw)
    assert clean_text(raw, 500).text == cleaned


@pytest.mark.req("REQ-CTX-010")
def test_plain_text_is_still_bounded() -> None:
    """REQ-CTX-010: the fast path cuts at max_chars, without a trailing space."""
    assert clean_text("abc def", 4) == CleanText("abc", False, 0, True)
    assert clean_text("abcdefgh", 3) == CleanText("abc", False, 0, True)
    assert clean_text("abc", 3) == CleanText("abc", False, 0, False)
