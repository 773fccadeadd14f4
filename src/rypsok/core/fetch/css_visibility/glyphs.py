"""Text the page's own CSS draws: the glyphs of MathJax 3 formulas (issue 10 item 3).

MathJax 3's CHTML output draws each character of a formula with generated
content on an empty element, `<mjx-c class="mjx-c1D44E TEX-I"></mjx-c>`,
styled by a rule of the page's sheet,
`mjx-c.mjx-c1D44E.TEX-I::before { padding: ...; content: "a" }`. The
rendering is `aria-hidden`, and the formula's only text in the document is
its MathML copy for screen readers, visually clipped and so removed. Without
this module every formula was lost.

`draw_glyphs` writes into each empty `mjx-c` element the text that the
page's own `<style>` rules draw there, so the formula reaches the caller as
the reader sees it ("a≠0"), and the existing exception for an aria-hidden
rendering beside its clipped copy keeps it once. What is written is only
what the page's CSS draws on the screen, so it is not hidden text:

- only a rule whose whole selector is one compound `mjx-c.<classes>::before`
  (or `:before`) with a `mjx-c<hex>` class is read, and only its `content`
  when that is one string of at most `_MAX_GLYPH_CHARS` characters; a
  sentence cannot be one glyph;
- the most specific such rule whose classes the element carries wins, the
  later one on a tie, as in the cascade;
- when any rule on a `mjx-c` pseudo-element hides what it draws
  (`display:none`, opacity 0, clipped, off-screen, zero-sized with overflow
  hidden, `visibility:hidden`, a zero font size, transparent text, or white
  text on a page whose colours are known; read by tinycss2 as every rule
  is), no glyph is drawn on the page at all: the cascade of generated
  content is not computed, so any doubt draws nothing;
- the text written is then subject to every other rule of the engine: a
  formula inside hidden content is removed with it.

The work is bounded by the sheets read under LIM-V1: each candidate rule's
block is tokenised once, and the elements are visited once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import tinycss2  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.colours import _INVISIBLE_ALPHA, _Rgba
from rypsok.core.fetch.css_visibility.properties import (
    _WHITE,
    Value,
    _close,
    _hides_subtree,
    _parse_block,
)
from rypsok.core.fetch.css_visibility.sheets import _NAME_CHARS, _Chunk
from rypsok.core.fetch.parse import Element

_GLYPH_TAG: Final = "mjx-c"
_GLYPH_CLASS_PREFIX: Final = "mjx-c"
_MAX_GLYPH_CHARS: Final = 4  # MathJax draws one character, two for a surrogate pair
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_PSEUDO_SUFFIXES: Final = ("::before", ":before")
_SHARED: Final = ("position", "overflow-x", "overflow-y")
_COMBINATORS: Final = str.maketrans(dict.fromkeys(">+~", " "))

# A glyph rule: the classes an element needs, the rule's order, and what it draws.
_Glyph = tuple[frozenset[str], int, str]


def draw_glyphs(root: Element, chunks: Sequence[_Chunk], *, external: bool) -> int:
    """Write into each empty `mjx-c` element the text the page's rules draw there.

    Returns the number of elements given text. Cheap on pages without
    MathJax: one C-speed search of the tree for the tag.
    """
    holders = [e for e in root.iter(_GLYPH_TAG) if not e.text and not len(e)]
    if not holders:
        return 0
    glyphs = _glyph_rules(chunks, external)
    drawn = 0
    for element in holders:
        text = _drawn(glyphs, frozenset((element.get("class") or "").split()))
        if text:
            element.text = text
            drawn += 1
    return drawn


def _glyph_rules(chunks: Sequence[_Chunk], external: bool) -> dict[str, list[_Glyph]]:
    """The glyph rules of the page by their `mjx-c<hex>` class; empty when one could hide."""
    glyphs: dict[str, list[_Glyph]] = {}
    declared: list[dict[str, Value]] = []  # each pseudo-element rule's values
    for chunk in chunks:
        selectors = chunk.selector_text()
        if _GLYPH_TAG not in selectors or not any(
            _on_glyph_pseudo(selector) for selector in selectors.split(",")
        ):
            continue
        try:
            declared.append({d.prop: d.value for d in _parse_block(chunk.block_text())})
        except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
            return {}
        content = _content(chunk.block_text())
        if content is None:
            continue
        for selector in selectors.split(","):
            classes = _glyph_classes(selector.strip())
            if classes is None:
                continue
            key = next(name for name in classes if _is_glyph_class(name))
            glyphs.setdefault(key, []).append((classes, chunk.order, content))
    if _any_hides(declared, external):
        return {}  # generated content on glyphs may be hidden: draw none
    return glyphs


def _any_hides(declared: list[dict[str, Value]], external: bool) -> bool:
    """Whether one of the pseudo-element rules hides what it draws.

    Each rule is judged alone, with the position and overflow any of them sets
    (so `overflow:hidden` in one rule and `width:0` in another count together).
    """
    shared = {
        prop: values[prop]
        for values in declared
        for prop in _SHARED
        if values.get(prop) is not None
    }
    for values in declared:
        if _hides_subtree({**shared, **values}):
            return True
        if values.get("visibility") in ("hidden", "collapse") or values.get("font-size") == "zero":
            return True
        colour = values.get("color")
        if isinstance(colour, _Rgba) and (
            colour.alpha <= _INVISIBLE_ALPHA or (not external and _close(colour, _WHITE))
        ):
            return True
    return False


def _on_glyph_pseudo(selector: str) -> bool:
    """Whether the selector's subject is a pseudo-element of a `mjx-c` element."""
    subject = selector.translate(_COMBINATORS).split()[-1:] or [""]
    tag = subject[0].split(".")[0].split(":")[0].split("[")[0].lower()
    return tag == _GLYPH_TAG and ("before" in subject[0] or "after" in subject[0])


def _glyph_classes(selector: str) -> frozenset[str] | None:
    """The classes of `mjx-c.<classes>::before` with one `mjx-c<hex>` among them, else None."""
    suffix = next((s for s in _PSEUDO_SUFFIXES if selector.endswith(s)), None)
    if suffix is None:
        return None
    tag, *classes = selector[: -len(suffix)].split(".")
    if tag != _GLYPH_TAG or not classes:
        return None
    if any(not name or not set(name) <= _NAME_CHARS for name in classes):
        return None
    if sum(_is_glyph_class(name) for name in classes) != 1:
        return None
    return frozenset(classes)


def _is_glyph_class(name: str) -> bool:
    digits = name.removeprefix(_GLYPH_CLASS_PREFIX)
    return digits != name and bool(digits) and set(digits) <= _HEX_DIGITS


def _content(block: str) -> str | None:
    """The rule's `content` when it is one short string (the last declaration wins)."""
    if "content" not in block.lower():
        return None
    found: str | None = None
    try:
        items = tinycss2.parse_declaration_list(block, skip_comments=True, skip_whitespace=True)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None
    for item in items:
        if item.type != "declaration" or item.lower_name != "content":
            continue
        tokens = [t for t in item.value if t.type not in ("whitespace", "comment")]
        found = None
        if len(tokens) == 1 and tokens[0].type == "string":
            text = str(tokens[0].value)
            if 0 < len(text) <= _MAX_GLYPH_CHARS and text.isprintable():
                found = text
    return found


def _drawn(glyphs: dict[str, list[_Glyph]], classes: frozenset[str]) -> str | None:
    """What the most specific matching glyph rule draws on an element with `classes`."""
    best: _Glyph | None = None
    for name in classes:
        for glyph in glyphs.get(name, ()):
            required, order, _ = glyph
            if required <= classes and (
                best is None or (len(required), order) > (len(best[0]), best[1])
            ):
                best = glyph
    return None if best is None else best[2]
