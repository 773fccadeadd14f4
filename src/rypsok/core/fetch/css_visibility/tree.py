"""Small operations on the parsed tree shared by the engine: text counts.

Removal keeping an element's tail is `core/trees.py`, shared with the scraping
drivers; `_chars` counts what would show.
"""

from __future__ import annotations

from collections.abc import Iterable

from rypsok.core.fetch.parse import Element


def _chars(text: str) -> int:
    """Characters of text that would show, whitespace aside."""
    return len("".join(text.split()))


def _names_of(elements: Iterable[Element]) -> set[str]:
    """The ids and classes of `elements`: the names a selector's subject may use."""
    keys: set[str] = set()
    for element in elements:
        identifier = element.get("id")
        if identifier:
            keys.add(identifier.strip())
        classes = element.get("class")
        if classes:
            keys.update(classes.split())
    return keys


def _holds_text(element: Element) -> bool:
    return any(not text.isspace() for text in element.itertext())


def _aria_hidden(element: Element) -> bool:
    return (element.get("aria-hidden") or "").strip().lower() == "true"


def _inside(element: Element, tag: str) -> bool:
    return any(ancestor.tag == tag for ancestor in element.iterancestors())


def _has_own_text(element: Element) -> bool:
    if element.text and element.text.strip():
        return True
    return any(child.tail and child.tail.strip() for child in element)
