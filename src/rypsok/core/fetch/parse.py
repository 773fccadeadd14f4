"""Bounded HTML parsing: LIM-F10 and LIM-F11 enforced while the document is parsed.

REQ-PAGE-006: a deeply nested or very large page must not occupy a parse slot
longer than a shallow one. The document is fed to lxml's pull parser in
64 KiB slices; start and end events are counted after each slice, and once an
element crosses the node bound (elements and their attributes) or the depth
bound, feeding stops and that element and everything after it are removed:
the tree is partial, never unbounded. libxml2's own depth cap drops content
silently at depth 256, so `huge_tree` lifts it to 2,048 and our bound is
clamped below that, which makes the loss visible as `partial`.

Two libxml2 costs are bounded before parsing: control characters are removed
(they raise), and the document is cut before a start tag with more than
MAX_TAG_ATTRIBUTES attributes, because libxml2 checks each attribute against
the ones before it (quadratic, holding the GIL). No Python recursion: pruning
walks iteratively.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from lxml import etree  # type: ignore[import-untyped]

# A fixed code, never page text (the pipeline maps it to extraction_failed).
UNPARSEABLE: Final = "unparseable"

Element = Any  # lxml has no type stubs


class Unparseable(Exception):
    """lxml produced no tree at all."""


_CHUNK_CHARS: Final = 64 * 1024
_TAG_LOOKBACK: Final = 32  # a slice never ends inside the first characters of a tag
_LIBXML_DEPTH_CAP: Final = 2_048  # libxml2's own limit with huge_tree
# libxml2 checks each attribute of a start tag against the ones before it, so
# one tag with many attributes costs quadratic time while holding the GIL
# (160,000 attributes: ~29 s). The document is cut before a tag with more
# attributes than this; at this bound one tag costs about a millisecond. Only
# tags longer than _LONG_TAG_CHARS are counted, so ordinary pages pay nothing,
# and one long attribute value (a data: URI) is a single attribute.
MAX_TAG_ATTRIBUTES: Final = 1_000
_LONG_TAG_CHARS: Final = 4_096
_ATTRIBUTE: Final = re.compile(r"""[\s/]+[^\s=/>"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>"']*))?""")
_START_TAG: Final = re.compile(r"<[A-Za-z]")
# Elements whose content the HTML tokenizer reads as text up to their end tag.
# Comments are matched too (an unclosed one runs to the end, as in HTML), so
# that `<!-- <script> -->` opens no raw text that would hide a real tag.
_RAW_TEXT_OPEN: Final = re.compile(
    r"<!--(?:[^-]|-(?!->))*(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)(?=[\s/>])[^>]*>",
    re.IGNORECASE,
)
_CONTROLS: Final = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ud800-\udfff]")
_ROOT_END_TAGS: Final = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)


@dataclass(slots=True)
class ParsedTree:
    root: Element
    partial: bool
    controls_removed: int


@dataclass(slots=True)
class _Counter:
    """Counts elements and depth from parse events; reports the element that crosses a bound."""

    max_nodes: int
    max_depth: int
    nodes: int = 0
    depth: int = 0
    first: Element = None

    def consume(self, events: Any) -> Element:
        for event, element in events:
            if event == "end":
                self.depth -= 1
                continue
            if self.first is None:
                self.first = element
            # Attributes count as nodes: they cost tree memory as elements do.
            self.nodes += 1 + len(element.attrib)
            self.depth += 1
            if self.nodes > self.max_nodes or self.depth > self.max_depth:
                return element
        return None


def parse_bounded(html: str, *, max_nodes: int, max_depth: int) -> ParsedTree:
    """Parse `html`, stopping as soon as a bound is crossed (REQ-PAGE-006)."""
    parser = etree.HTMLPullParser(
        events=("start", "end"),
        remove_comments=True,
        remove_pis=True,
        huge_tree=True,
        no_network=True,
    )
    counter = _Counter(max(1, max_nodes), max(1, min(max_depth, _LIBXML_DEPTH_CAP)))
    html, tag_cut = _cut_before_long_tag(html)
    controls_removed = 0
    crossing: Element = None
    broken = False
    for chunk in _slices(html):
        clean, count = _CONTROLS.subn("", chunk)
        controls_removed += count
        try:
            parser.feed(_ROOT_END_TAGS.sub("", clean))
        except etree.LxmlError:
            broken = True
        crossing = counter.consume(parser.read_events())
        if crossing is not None or broken:
            break
    root = _finish(parser, counter)
    if crossing is not None:
        _prune_from(crossing)
    partial = crossing is not None or broken or tag_cut
    return ParsedTree(root=root, partial=partial, controls_removed=controls_removed)


def _cut_before_long_tag(html: str) -> tuple[str, bool]:
    """`html` up to its first start tag with more than MAX_TAG_ATTRIBUTES attributes.

    One pass over the text: each tag's span is found with `find`, and only long
    spans are scanned for attributes (quote-aware, so a `>` inside a quoted
    value does not end the count early but the span is still bounded by it).
    Only a start tag has attributes: a long span that starts `<!`, `</` or
    `<?`, or that lies in the raw text of script, style and the like (a
    JSON-LD block, a `<![CDATA[` section), is not counted, as the HTML
    tokenizer reads them. The raw-text spans are found once, by one regex
    scan, and only when a long span is met.
    """
    raw_text: list[tuple[int, int]] | None = None
    position = html.find("<")
    while position != -1:
        close = html.find(">", position)
        end = len(html) if close == -1 else close
        if end - position > _LONG_TAG_CHARS and _START_TAG.match(html, position):
            if raw_text is None:
                raw_text = _raw_text_spans(html)
            inside = _enclosing_span(raw_text, position)
            if inside is not None:
                position = html.find("<", inside)
                continue
            attributes = sum(1 for _ in _ATTRIBUTE.finditer(html, position + 1, end))
            if attributes > MAX_TAG_ATTRIBUTES:
                return html[:position], True
        if close == -1:
            break
        position = html.find("<", close)
    return html, False


def _raw_text_spans(html: str) -> list[tuple[int, int]]:
    """(start, end) of the content of each raw-text element, in order, linear in `html`."""
    spans: list[tuple[int, int]] = []
    position = 0
    while (opening := _RAW_TEXT_OPEN.search(html, position)) is not None:
        if opening.group(1) is None:  # a comment: a start tag inside it is no tag
            position = opening.end()
            continue
        name = opening.group(1).lower()
        ending = re.compile(rf"</{name}[\s/>]", re.IGNORECASE).search(html, opening.end())
        end = len(html) if ending is None else ending.start()
        spans.append((opening.end(), end))
        position = end
    return spans


def _enclosing_span(spans: list[tuple[int, int]], position: int) -> int | None:
    """The end of the raw-text span that holds `position`, or None."""
    index = bisect.bisect_right(spans, position, key=lambda span: span[0]) - 1
    if index >= 0 and spans[index][0] <= position < spans[index][1]:
        return spans[index][1]
    return None


def _finish(parser: Any, counter: _Counter) -> Element:
    try:
        root = parser.close()
    except etree.LxmlError:
        root = None
    if root is None and counter.first is not None:
        root = counter.first.getroottree().getroot()
    if root is None:
        raise Unparseable(UNPARSEABLE)
    return root


def _slices(html: str) -> Iterator[str]:
    start, size = 0, len(html)
    while start < size:
        end = min(start + _CHUNK_CHARS, size)
        if end < size:
            # Keep `</body>` whole so that the end-tag filter sees it.
            cut = html.rfind("<", end - _TAG_LOOKBACK, end)
            if cut > start:
                end = cut
        yield html[start:end]
        start = end


def _prune_from(element: Element) -> None:
    """Remove `element` and everything after it in document order, iteratively."""
    parent = element.getparent()
    if parent is None:
        return
    for sibling in list(element.itersiblings()):
        parent.remove(sibling)
    parent.remove(element)  # with its tail
    node = parent
    while (container := node.getparent()) is not None:
        for sibling in list(node.itersiblings()):
            container.remove(sibling)  # each with its tail
        node.tail = None
        node = container
