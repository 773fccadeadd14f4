"""Small operations on the parsed tree shared by the engine: text counts and removal.

`_remove_keeping_tail` removes an element with its subtree but keeps its tail
text, which belongs to the parent; `_chars` counts what would show.
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


def _remove_keeping_tail(element: Element) -> None:
    """Remove `element` with its subtree; its tail text belongs to the parent and stays."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
