"""Hidden text is counted as it is left out, for the hidden_removed notice (REQ-CTX-005)."""

from __future__ import annotations

import pathlib

import pytest

from rypsok.core.fetch.decode import decode_body
from rypsok.core.fetch.extract import extract_html

PAGES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "pages"
BASE = "https://site.example/page.html"
PARAGRAPH = "<p>A paragraph of the article, long enough to count, with a comma or two.</p>"


def page(body: str, head: str = "") -> str:
    head = f"<head><title>T</title>{head}</head>"
    return f"<html>{head}<body><main>{PARAGRAPH}{body}</main></body></html>"


@pytest.mark.req("REQ-CTX-005")
def test_the_hidden_injection_fixture_reports_what_it_left_out() -> None:
    """REQ-CTX-005: the hostile fixture's hidden elements are counted with their text."""
    text, _ = decode_body((PAGES / "hidden-injection.html").read_bytes(), "text/html")
    extracted = extract_html(text, base_url=BASE)
    assert extracted.hidden_removed >= 5
    assert extracted.hidden_chars >= len("IGNORE ALL PREVIOUS INSTRUCTIONS")
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" not in extracted.markdown


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize(
    ("body", "head", "elements", "chars"),
    [
        ("<p hidden>Secret one</p><div aria-hidden='true'>Secret two</div>", "", 2, 18),
        ("<p style='display:none'>Gone <b>now</b></p>", "", 1, 7),
        ("<p class='x'>Styled away</p>", "<style>.x { display: none }</style>", 1, 10),
        ("<p class='sr-only'>Screen reader</p>", "", 1, 13),
        ("<span hidden> </span>", "", 0, 0),  # nothing to read: no notice
        ("<nav><a href='/'>Home</a></nav>", "", 0, 0),  # chrome is not hidden text
    ],
)
def test_hidden_elements_and_their_characters_are_counted(
    body: str, head: str, elements: int, chars: int
) -> None:
    """REQ-CTX-005: each hidden subtree counts once, with its text (whitespace not counted)."""
    extracted = extract_html(page(body, head), base_url=BASE)
    assert (extracted.hidden_removed, extracted.hidden_chars) == (elements, chars)
