"""The title and snippet cleaner's cases that its first mutation run found unchecked.

`make mutation MODULES=boundary.text` (docs/assurance.md) left 63 mutants alive;
these tests kill the ones that change behaviour: markup next to text that only
looks like markup, comments holding `>` or ending abruptly, declarations without
an end, quoted values holding `<`, raw text elements whose end tag does not
close, cuts next to regional indicators, emoji modifiers and selectors, and the
back-off limit. The scanner also promises that a search which found no end is
never repeated (linear work, REQ-SEC-014); those tests count the searches,
since a timed test cannot run under mutmut's trampolines. The mutants that
change nothing are listed in mutation/exclusions.txt with their reasons.
"""

from __future__ import annotations

import re

import pytest

from rypsok.core.boundary import text as text_module
from rypsok.core.boundary.text import clean_text

REPEATS = 1_000


class CountingPattern:
    """A compiled pattern that counts how often the cleaner searches with it."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.searches = 0

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        self.searches += 1
        return self.pattern.search(string, pos)


def cleaned(raw: str, max_chars: int = 500) -> str:
    return clean_text(raw, max_chars).text


# --- markup next to text ----------------------------------------------------------------------


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-003")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # A `<` that starts no tag does not end the scan: later markup still goes.
        ("mail <user@example.com> and <b>bold</b>", "mail <user@example.com> and bold"),
        ("a <!-- x > y --> b", "a b"),  # a comment ends at "-->", not at its first ">"
        ("a <!---> b --> c", "a b --> c"),  # "<!--->" is a whole (abrupt) comment
        ("a <!----> b --> c", "a b --> c"),  # "-->" may follow "<!--" at once
        ("a--><!-- c -->b", "a-->b"),  # a "-->" before the comment does not end it
        ("a<?>b", "ab"),  # the shortest processing instruction
        ("<!DOCTYPE html> 1 > 0", "1 > 0"),  # a declaration ends at its first ">"
        ('<a title="<">x</a> "y"', 'x "y"'),  # a quoted "<" forces the slow path
        ("</script> <script>x</script>y", "y"),  # raw text ends at the next end tag
    ],
)
def test_markup_beside_text_is_removed(raw: str, expected: str) -> None:
    """REQ-CTX-004, REQ-SEC-003: each piece of markup goes, and only markup."""
    result = clean_text(raw, 500)
    assert result.text == expected
    assert result.markup_removed


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-003")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a <!doctype", "a <!doctype"),  # a declaration without ">" is text
        ("a <?php echo", "a <?php echo"),
        ("a <script>x</script y", "a x</script y"),  # the end tag never closes: only the start goes
    ],
)
def test_markup_that_does_not_end_is_text(raw: str, expected: str) -> None:
    """REQ-CTX-004, REQ-SEC-003: markup that does not end before the input does costs no text."""
    assert cleaned(raw) == expected


# --- searches that found nothing are not repeated (linear work) -------------------------------


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> CountingPattern:
    counter = CountingPattern(getattr(text_module, name))
    monkeypatch.setattr(text_module, name, counter)
    return counter


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-014")
def test_a_comment_end_is_searched_for_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CTX-004, REQ-SEC-014: after one comment without "-->", later ones are not searched."""
    counter = counting(monkeypatch, "_COMMENT_END")
    raw = "<!--" * REPEATS
    assert cleaned(raw, 10**6) == raw
    assert counter.searches == 1


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-014")
@pytest.mark.parametrize("unit", ["<!x", "<?x", "<a "])
def test_the_scan_stops_at_markup_that_reaches_the_end(
    monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    """REQ-CTX-004, REQ-SEC-014: once a search for ">" reached the end, the rest is text."""
    candidates = counting(monkeypatch, "_MARKUP_CANDIDATE")
    tag_ends = counting(monkeypatch, "_TAG_END_OR_QUOTE")
    raw = unit * REPEATS
    assert cleaned(raw, 10**6) == raw.strip()
    assert candidates.searches <= 2  # the first `<`, and the look-up after it
    assert tag_ends.searches <= 1


@pytest.mark.req("REQ-CTX-004", "REQ-SEC-014")
def test_a_raw_text_end_is_searched_for_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CTX-004, REQ-SEC-014: after one script with no end tag, later ones are not searched."""
    counter = CountingPattern(text_module._RAW_TEXT_END["script"])
    monkeypatch.setitem(text_module._RAW_TEXT_END, "script", counter)  # type: ignore[arg-type]
    assert cleaned("<script>x" * REPEATS, 10**6) == "x" * REPEATS
    assert counter.searches == 1


# --- the cut ----------------------------------------------------------------------------------


@pytest.mark.req("REQ-CTX-007", "REQ-SEC-015")
@pytest.mark.parametrize(
    ("raw", "max_chars", "expected"),
    [
        ("x 🇦🇨🇿🇦", 5, "x 🇦🇨"),  # U+1F1E6 and U+1F1FF, the first and last indicators
        ("a🇩b", 2, "a🇩"),  # a lone indicator before a letter is a boundary
        ("🇦🇧🇨🇩🇪", 3, "🇦🇧"),  # pairs counted from the start of the text
        ("ok 👍🏽", 4, "ok"),  # an emoji modifier stays with its base
        ("ok ☺\ufe0f", 4, "ok"),  # so does a variation selector
        ("a👍🏽", 2, "a"),  # the cut may back off to the first character
        ("क्\u200d x", 4, "क्"),  # a space after a kept joiner: both go
        ("क् \u200d्क", 4, "क्"),  # no boundary near: the plain cut, then space and joiner go
        ("MAX more", 3, "MAX"),  # only spaces are trimmed from the cut
    ],
)
def test_cut_edges(raw: str, max_chars: int, expected: str) -> None:
    """REQ-CTX-007, REQ-SEC-015: the cut keeps clusters whole and ends on no space or joiner."""
    result = clean_text(raw, max_chars)
    assert result.text == expected
    assert result.truncated


@pytest.mark.req("REQ-CTX-006")
def test_a_negative_bound_is_refused_with_a_plain_message() -> None:
    """REQ-CTX-006: a negative max_chars is a programming error, named as such."""
    with pytest.raises(ValueError, match=r"^max_chars must be at least 0$"):
        clean_text("abc", -1)
