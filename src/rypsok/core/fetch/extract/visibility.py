"""Visibility: what a browser would not render, removed before anything is measured.

Hidden text is how prompt injection hides (REQ-CTX-005, REQ-SEC-003), so an
element that a browser would not show is removed with its subtree before the
noise pass scores anything. The decision is made by the package
`core/fetch/css_visibility/`: the `hidden` attribute, `aria-hidden="true"`,
the `style` attribute and the page's own `<style>` sheets, parsed with
tinycss2 and matched with cssselect,
within the LIM-V bounds (docs/hidden-text.md). External style sheets are not
fetched, so one rule stays here: the utility classes that mean "not
rendered" or "for screen readers only" in every common framework (`hidden`,
`d-none`, `sr-only`, ...), whose definition usually lives in such a sheet.
The noise pass applies it and counts what it drops, so that the caller's
notice (CLR-11) covers both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rypsok.core.fetch.css_visibility import HiddenStats, drop_hidden
from rypsok.core.fetch.extract.model import HtmlElement

__all__ = ["HiddenStats", "hidden_by_class", "remove_hidden"]

# Utility classes that mean "not rendered" (or "for screen readers only") everywhere.
_UTILITY_HIDDEN: Final = frozenset(
    {"hidden", "d-none", "is-hidden", "hide", "invisible", "sr-only", "visually-hidden"}
    | {"visuallyhidden", "screen-reader-text", "screenreader-only"}
)


def remove_hidden(root: HtmlElement) -> HiddenStats:
    """Remove every element the page's own attributes and `<style>` sheets hide."""
    return drop_hidden(root)


def hidden_by_class(attributes: Mapping[str, str]) -> bool:
    """Whether a utility class of the element says it is not rendered."""
    classes = attributes.get("class")
    return classes is not None and not _UTILITY_HIDDEN.isdisjoint(classes.split())
