"""Hidden text never reaches the caller: a small CSS visibility engine (REQ-CTX-005, REQ-SEC-003).

Text that a browser would not show is how prompt injection hides on a page.
`drop_hidden` removes from a parsed tree every element a desktop browser
would not render, as far as the page itself says so: the `hidden`
attribute, `aria-hidden="true"`, the `style` attribute, and the page's own
`<style>` sheets. External style sheets are never fetched (they would be a
second request the caller did not ask for); a page that links one is
treated as having unknown colours (see "Colour" below). `<style>` and
`<template>` elements are removed as well: neither is rendered.

Parsing. Style sheets and declarations are parsed by tinycss2, selectors by
cssselect (turned into XPath 1.0 that lxml compiles and evaluates in C); a
chain of plain compounds (`.promo .card span`) tested on given elements is
decided in Python with XPath's verdicts (`chains`), which is cheaper than
libxml2 walking the ancestors again at every compound. No
regular expression decides what hides: the few in `sheets` and `matching`
only find rule boundaries and names.
tinycss2 tokenises in pure Python at about 1 MB/s, several times slower than
the whole extraction of a page, so a sheet is first cut into its rules by a
small splitter that only tracks strings, comments, escapes and braces
(`_uncached_split`). Then the page's own names decide which rules are looked
at at all: a rule is kept only when some selector of its group needs no
class or id that the page lacks (`_SheetRules.viable`: one pass over the
sheet's joined selectors, the names looked up in C; a name inside brackets,
a string, an escape or a comment never counts against a rule), and most of
a site's sheet is for elements this page does not have. A kept rule is
handed to tinycss2 only when it could matter:

- in a first pass, when its text (lower case, comments and whitespace
  removed) contains a hiding form (`display:none`, `opacity:0`, `left:-`,
  `translate`, an escape, ...) or colours that could hide text, and its
  selector needs only classes and ids that some element carries;
- in a second pass, run only when the first hid something, when it sets a
  property that could re-show that (`display` for `display:none`, the
  inherited ones for hidden text) and its selector's subject is named like
  one of the hidden elements (their ancestors and descendants too, for
  inherited properties): `.d-none{display:none} .d-lg-block{display:block}`.

Inside a rule, only the declarations of the properties this module reads are
tokenised (a block without strings, escapes or comments is cut at its
semicolons first). Both passes are over-approximations: a rule they skip can
neither hide nor re-show an element the engine looks at (colour contrast
across rules included, through the page's palette: see "Colour").

Media. Rules inside `@media` apply when the query matches an assumed desktop
screen: media type `screen` or `all` (never `print` or `speech`), a
viewport of 1280 x 800 CSS pixels (`em`/`rem` as 16 px), landscape, light
colour scheme, a fine pointer that hovers. Unknown features do not match.
`@supports` blocks apply unless the condition starts with `not`; `@layer`
and `@container` blocks apply; `@keyframes`, `@font-face`, `@page` and
other at-rules are skipped. A `<style media=...>` attribute is evaluated the
same way. Rules nested inside rules (CSS nesting) are flattened first
(`nesting`). Custom
properties are, in the properties that hide (`variables`, `custom`): the
rules declaring a referenced name are matched on the elements that use it
and their ancestors, and the nearest declaration wins.

Cascade. For the elements a hiding rule matched (and only those, so the
cost stays small), each property is decided the way a browser does it:
`!important` first, then inline style over sheets, then specificity, then
the later rule. So `.a{display:none} .a.open{display:block}` keeps an
`<div class="a open">`. The root `html` and `body` are never removed (an
anti-flicker `body{opacity:0}` would otherwise empty the page).

What hides an element with everything inside it: `display:none`,
`opacity` at most 0.01, `clip:rect(...)` of zero width or height on an
absolutely positioned element, `clip-path: inset(50%)` or a zero
`circle()`/`ellipse()`, a `transform` that scales to zero or translates by
999 px or more, `left`/`top`/`right` at -999 px or less on a positioned
element, `margin-left`/`margin-top` at -999 px or less, a `text-indent` of
999 px or more either way, and a width or height of at most 1 px with
overflow hidden or clipped.

What hides text but lets a descendant show its own (inherited properties):
`visibility:hidden|collapse` (a descendant with `visibility:visible`
shows), a computed `font-size` of 0 (a descendant with an absolute size
shows; `em` and `%` of zero stay zero), and text whose colour matches its
background.

aria-hidden. `aria-hidden="true"` hides an element from assistive
technology, not from the eye, and pages use it for decoration and
duplicates, so its subtree is removed, with one exception: the "visually
hidden but accessible" pattern, where a visible rendering is aria-hidden
and its copy for screen readers, an adjacent sibling, is clipped, zero-sized
or off-screen (formula renderers, icon-and-label widgets). There the
rendering is kept and the copy removed, so the text appears once and as the
reader sees it. This lets no hidden text through: the rendering is kept only
as far as a browser shows it (every other rule here still applies to it), and
text a browser shows is read by the human too, so it is not hidden text in
the injection sense; the clipped copy, which no one sees, is always removed.
MathJax 3 draws its glyphs with CSS `content` on empty `mjx-c` elements, so
the text those rules draw is written into the tree first (`glyphs`), and the
formula is kept as drawn, within the same rules.

Modules, each importing only the ones before it: `colours` (any CSS colour
in sRGB, HTML's legacy colour values), `variables` (`var()` text),
`properties` (values that hide), `bounds` (LIM-V), `media`, `nesting`, `prechecks`
(could this text hide?), `contrast` (the page's palette), `sheets` (rules
cut from sheets, sketches, per-sheet caches), `relax` (selectors cssselect
cannot read, rewritten to still hide), `matching` (selectors), `custom`
(custom properties at elements), `glyphs`, `markup` (what attributes and
tags say, the class and id index), `tree` and `engine` (one page's check). Names with a
leading underscore are shared inside the package only.

Colour. The element's own or inherited `color` is compared with the nearest
ancestor-or-self `background`/`background-color` that is opaque; colours of
every CSS level are read by tinycss2 and brought to sRGB (`colours`), and
`<font color>` is a presentational hint below every author rule. The two
may come from different rules or attributes: every rule whose text colour
is near a background the page declares, or whose background is near a text
colour it declares, is matched in the first pass (`contrast`), on a page
whose sheets are all read. Colours within 8/255 on every channel count as equal, and text with
alpha 0 (`color: transparent`) is hidden. A background image or a
translucent background makes the background unknown. Without any declared
colour a page is black on white, unless it links an external style sheet:
then an undeclared colour is unknown and nothing is judged against it.

Matching. A selector whose subject needs a class or id is tested on the
elements that carry it (an index built once per page); any other is
evaluated once over the whole tree, as XPath that starts from the subject.

Caches. What is read from CSS text alone is a pure function of that text
and is remembered per process in bounded LRU caches: a sheet's rules and
their pre-checks (512 sheets, at most 16 Mi characters of them), parsed
blocks, selector sketches and words, compiled selectors with their XPath
(8,192 texts each of at most 1 KiB; longer texts in caches of their own,
bounded to 512 Ki characters each by `textcache`; at most about 100 MiB in
all, a fixed base). A site serves
the same sheets on every page, so its second page costs a fraction of its
first; nothing that depends on the document is cached, and the LIM-V
budgets are spent per page as if nothing were.
`clear_caches` forgets everything (the benchmark's first-visit figure).

Cancellation. The matching loops call `parse.check_cancelled` (per rule
matched, per 1,024 rules or candidates), so an abandoned extraction stops.

Bounds. Style sheet text read per page (LIM-V1), distinct style attribute
text parsed (LIM-V2), rules parsed (LIM-V3), elements matched by hiding and
re-showing rules (LIM-V4), and element visits (LIM-V5: elements visited by
an evaluation over the tree, elements tested one by one, elements whose
inherited state is computed). When a bound is hit, reading or matching
stops, what was found so far is still removed, and
`HiddenStats.sheets_truncated` is set so that the caller can say the check
was partial. Every loop over the tree is iterative, and the work is linear
in the document: LIM-V5 caps selector work at a fixed number of element
visits whatever the sheets hold. Measured figures: docs/hidden-text.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rypsok.core.fetch.css_visibility.engine import _Engine
from rypsok.core.fetch.css_visibility.matching import (
    _cached_selectors,
    _compiled_xpath,
    _without_comments,
)
from rypsok.core.fetch.css_visibility.media import _cached_media_matches, media_matches
from rypsok.core.fetch.css_visibility.prechecks import (
    _cached_background,
    _cached_colour,
    _cached_could_hide,
    _long_could_hide,
)
from rypsok.core.fetch.css_visibility.properties import (
    _cached_block,
    _long_block,
    _piece_declarations,
)
from rypsok.core.fetch.css_visibility.sheets import (
    _cached_sketch,
    _cached_split,
    _long_sketch,
    _selector_words,
)
from rypsok.core.fetch.css_visibility.variables import _value_tokens
from rypsok.core.fetch.parse import Element

__all__ = ["HiddenStats", "clear_caches", "drop_hidden", "media_matches"]


@dataclass(frozen=True, slots=True)
class HiddenStats:
    """What `drop_hidden` removed, and whether a bound cut the check short."""

    elements_removed: int  # elements removed, plus elements whose own text was cleared
    chars_removed: int  # text characters inside them, whitespace not counted
    sheets_truncated: bool  # a LIM-V bound was hit: some CSS was not read or matched


def drop_hidden(root: Element) -> HiddenStats:
    """Remove from `root`'s tree every element hidden by its attributes or the page's CSS.

    Mutates the tree: hidden elements are removed (their `.tail` text, which
    belongs to the parent, is kept), text hidden by an inherited property is
    cleared, and `<style>`/`<template>` elements are removed. Never raises on
    malformed CSS; raises `parse.ParseCancelled` when the extraction's cancel
    flag is set (checked per rule matched and per 1,024 rules or candidates).
    """
    engine = _Engine(root)
    engine.run()
    return HiddenStats(
        elements_removed=engine.elements_removed,
        chars_removed=engine.chars_removed,
        sheets_truncated=engine.budget.truncated,
    )


def clear_caches() -> None:
    """Forget what was read from CSS text so far (for a benchmark of a first visit)."""
    caches: tuple[_Clearable, ...] = (
        _cached_split,
        _cached_could_hide,
        _cached_sketch,
        _cached_block,
        _piece_declarations,
        _cached_selectors,
        _selector_words,
        _cached_media_matches,
        _cached_colour,
        _cached_background,
        _long_sketch,
        _long_block,
        _compiled_xpath,
        _without_comments,
        _value_tokens,
        *_long_could_hide.values(),
    )
    for cached in caches:
        cached.cache_clear()


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...
