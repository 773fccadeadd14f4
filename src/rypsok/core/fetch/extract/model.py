"""What extraction returns, how it fails, and the element type it works on.

Shared by every part of the package, so that the face (`__init__`) and the
parts agree on one result type and one failure type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

from lxml import etree  # type: ignore[import-untyped]

from rypsok.core.fetch.parse import UNPARSEABLE

# lxml ships no type stubs, so the checker sees this alias as Any; the name
# still says what flows through the functions: an element of an lxml HTML tree.
HtmlElement: TypeAlias = etree._Element

NO_CONTENT: Final = "no_content"

__all__ = ["NO_CONTENT", "UNPARSEABLE", "Extracted", "ExtractionFailed", "HtmlElement"]


@dataclass(frozen=True, slots=True)
class Extracted:
    """What extraction made of a page."""

    markdown: str  # main content as Markdown, invisible characters removed
    title: str | None
    partial: bool  # a parse bound (LIM-F10, LIM-F11) or the output bound was hit
    invisible_removed: int
    # Elements a browser would not render, dropped with their text (REQ-CTX-005, CLR-11).
    hidden_removed: int = 0
    hidden_chars: int = 0
    hidden_check_partial: bool = False  # a LIM-V bound cut the style-sheet check short


class ExtractionFailed(Exception):
    """Nothing could be extracted (unsupported_content, reason extraction_failed).

    The argument is a fixed code, never page text (REQ-SEC-016).
    """
