"""Visibility: what a browser would not render, decided from the page's own markup.

Hidden text is how prompt injection hides (REQ-CTX-005), so an element that
a browser would not show is dropped with its subtree: the `hidden`
attribute, `aria-hidden="true"`, an inline style that hides (display:none,
visibility:hidden|collapse, zero font size or opacity, a clip to nothing,
zero size with hidden overflow, scale(0), an offset of -1000 units or more),
the classes and ids that a simple top-level rule of the page's own `<style>`
hides, and the usual utility classes (`hidden`, `sr-only`, ...). External
style sheets are not fetched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rypsok.core.fetch.extract.model import HtmlElement


@dataclass(frozen=True, slots=True)
class HiddenRules:
    classes: frozenset[str]
    ids: frozenset[str]


# Utility classes that mean "not rendered" (or "for screen readers only") everywhere.
_UTILITY_HIDDEN: Final = frozenset(
    {"hidden", "d-none", "is-hidden", "hide", "invisible", "sr-only", "visually-hidden"}
    | {"visuallyhidden", "screen-reader-text", "screenreader-only"}
)
CSS_COMMENT: Final = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
# A property name starts after a boundary: "backface-visibility: hidden" hides nothing.
_CSS_HIDING: Final = re.compile(
    r"(?<![\w-])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))", re.I
)
_SIMPLE_SELECTOR: Final = re.compile(r"\s*[a-zA-Z0-9]*([.#])(-?[_a-zA-Z][\w-]*)\s*")
_RULE_WINDOW: Final = 4_096  # how far back a rule's braces are looked for
_RULES_READ: Final = 512  # hiding declarations read per page


def hidden_rules(root: HtmlElement) -> HiddenRules:
    """Classes and ids hidden by a top-level rule like `.x, #y { display: none }`."""
    classes: set[str] = set(_UTILITY_HIDDEN)
    ids: set[str] = set()
    for style in root.iter("style"):
        css = style.text
        if not css or _CSS_HIDING.search(css) is None:
            continue
        if "/*" in css:
            css = CSS_COMMENT.sub("", css)
        _collect_hidden(css, classes, ids)
    return HiddenRules(frozenset(classes), frozenset(ids))


def _collect_hidden(css: str, classes: set[str], ids: set[str]) -> None:
    depth = 0  # brace depth at `position`, so rules inside @media are told apart
    position = 0
    for index, match in enumerate(_CSS_HIDING.finditer(css)):
        if index >= _RULES_READ:
            return
        opening = css.rfind("{", max(0, match.start() - _RULE_WINDOW), match.start())
        if opening < position or "}" in css[opening : match.start()]:
            continue  # not inside a declaration block seen from here
        depth += css.count("{", position, opening) - css.count("}", position, opening)
        position = opening
        if depth != 0:
            continue
        selector_start = max(
            css.rfind("}", max(0, opening - _RULE_WINDOW), opening),
            css.rfind(";", max(0, opening - _RULE_WINDOW), opening),
        )
        for selector in css[selector_start + 1 : opening].split(","):
            simple = _SIMPLE_SELECTOR.fullmatch(selector)
            if simple is not None:
                (classes if simple.group(1) == "." else ids).add(simple.group(2))


_HIDDEN_STYLE: Final = re.compile(
    r"(?<![\w-])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))"
    r"|font-size\s*:\s*0(?:\.0*)?(?:px|em|rem|pt|%)?\s*(?:;|!|$)"
    r"|opacity\s*:\s*0(?:\.0*)?\s*(?:;|!|$)"
    r"|(?:left|top|right|text-indent|margin-left|margin-top)\s*:\s*-\s*\d{4,}"
    r"|clip\s*:\s*rect\(\s*0[a-z]*\s*,?\s*0|clip-path\s*:\s*inset\(\s*50\s*%"
    r"|transform\s*:\s*scale\(\s*0\s*\)",
    re.IGNORECASE,
)
_ZERO_SIZE: Final = re.compile(
    r"(?:^|[;\s])(?:max-)?(?:width|height)\s*:\s*0(?:px)?\s*(?:;|!|$)", re.I
)
_OVERFLOW_HIDDEN: Final = re.compile(r"overflow\s*:\s*hidden", re.IGNORECASE)


def hidden_by_attributes(attributes: Mapping[str, str], hidden: HiddenRules) -> bool:
    """Whether a browser would not render the element, from its own attributes."""
    if "hidden" in attributes:
        return True
    if attributes.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = attributes.get("style")
    if style and hidden_style(style):
        return True
    classes = attributes.get("class")
    if classes and not hidden.classes.isdisjoint(classes.split()):
        return True
    identifier = attributes.get("id")
    return identifier is not None and identifier.strip() in hidden.ids


def hidden_style(style: str) -> bool:
    if "/*" in style:
        style = CSS_COMMENT.sub("", style)
    if _HIDDEN_STYLE.search(style):
        return True
    return bool(_ZERO_SIZE.search(style)) and bool(_OVERFLOW_HIDDEN.search(style))
