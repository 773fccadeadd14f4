"""Plain text and Markdown bodies, passed through with cleaning.

A text/plain or text/markdown body is already what the caller wants; the only
decisions are line endings (normalised to LF), HTML comments in Markdown
(removed outside fenced code, because a Markdown reader never sees them and
an injection hides in them as in HTML), and the title (the first ATX heading).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final, Literal

from rypsok.core.fetch.extract.cleaning import clean
from rypsok.core.fetch.extract.model import NO_CONTENT, Extracted, ExtractionFailed

# Line separators other than LF; Unicode whitespace controls become line breaks.
_LINE_BREAKS: Final = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_TRAILING_SPACE: Final = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUN: Final = re.compile(r"\n{3,}")
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_HTML_COMMENT: Final = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_ATX_HEADING: Final = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def extract_text(text: str, *, kind: Literal["text", "markdown"]) -> Extracted:
    """Plain text or Markdown passed through with cleaning; Markdown loses its HTML comments."""
    cleaned = _LINE_BREAKS.sub("\n", text).replace("\x1f", " ")
    if kind == "markdown":
        cleaned = strip_markdown_comments(cleaned)
    cleaned, removed = clean(cleaned)
    cleaned = _BLANK_RUN.sub("\n\n", _TRAILING_SPACE.sub("", cleaned)).strip("\n")
    if not cleaned.strip():
        raise ExtractionFailed(NO_CONTENT)
    title = _markdown_title(cleaned) if kind == "markdown" else None
    return Extracted(markdown=cleaned, title=title, partial=False, invisible_removed=removed)


def strip_markdown_comments(text: str) -> str:
    """Remove HTML comments outside fenced code blocks: a Markdown reader never sees them."""
    pieces: list[str] = []
    position = 0
    for start, end in _fenced_blocks(text):
        pieces.append(_HTML_COMMENT.sub("", text[position:start]))
        pieces.append(text[start:end])
        position = end
    pieces.append(_HTML_COMMENT.sub("", text[position:]))
    return "".join(pieces)


def _fenced_blocks(text: str) -> Iterator[tuple[int, int]]:
    """Spans of fenced code blocks; an unclosed fence runs to the end (CommonMark)."""
    search_from = 0
    while (opening := _FENCE.search(text, search_from)) is not None:
        fence = opening.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        line_end = text.find("\n", opening.end())
        if line_end < 0:
            yield opening.start(), len(text)
            return
        found = closing.search(text, line_end + 1)
        end = len(text) if found is None else found.end()
        yield opening.start(), end
        search_from = end


def _markdown_title(text: str) -> str | None:
    match = _ATX_HEADING.search(text)
    return match.group(1).strip() if match else None
