"""Bounded HTML parsing: LIM-F10 and LIM-F11 enforced while the document is parsed.

REQ-PAGE-006: a deeply nested or very large page must not occupy a parse slot
longer than a shallow one. The document is fed to lxml's pull parser in
64 KiB slices; start and end events are counted after each slice, and once an
element crosses the node bound (elements and their attributes) or the depth
bound, feeding stops and that element and everything after it are removed:
the tree is partial, never unbounded. libxml2's own depth cap drops content
silently at depth 256, so `huge_tree` lifts it to 2,048 and our bound is
clamped below that, which makes the loss visible as `partial`.

A document that cannot cross the node bound, by its length or by the count of
the bytes a node can start at (every node owns a character of the input, but
for the three roots libxml2 may imply), is parsed without events: in one
libxml2 call up to ONE_CALL_CHARS, else fed slice by slice; a tree that
reaches the depth bound, a tag to cut or a parse error sends it to the
counted parse, which decides as above (docs/extraction.md, 6.1g and 6.1o).

Two libxml2 costs are bounded as each slice is fed: control characters are removed
(they raise), and the document is cut before a start tag with more than
MAX_TAG_ATTRIBUTES attributes, because libxml2 checks each attribute against
the ones before it (quadratic, holding the GIL). No Python recursion: pruning
walks iteratively.

Cancellation (REQ-PAGE-008, REQ-SEC-012): a parse runs in a worker thread,
which cannot be interrupted from outside. The pipeline gives each extraction
a `threading.Event` through `cancellable`; `parse_bounded` checks it before
every slice and raises `ParseCancelled` once it is set, so an extraction the
call abandoned at LIM-F5 stops within one slice (64 KiB of markup) instead
of holding its parse permit and fetch slot to the end of the document. The
flag travels in a context variable, so the extractor between the pipeline
and the parser needs no parameter for it. The extraction stages after the
parse call `check_cancelled` every CANCEL_CHECK_INTERVAL elements (or rules)
of their walks, so the whole extraction, not only the parse, stops promptly.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import functools
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from lxml import etree  # type: ignore[import-untyped]

# A fixed code, never page text (the pipeline maps it to extraction_failed).
UNPARSEABLE: Final = "unparseable"

Element = Any  # lxml has no type stubs


class Unparseable(Exception):
    """lxml produced no tree at all."""


class ParseCancelled(Exception):
    """The extraction was abandoned: its cancel flag was set between two slices."""


_CANCEL: Final[contextvars.ContextVar[threading.Event | None]] = contextvars.ContextVar(
    "rypsok_parse_cancel", default=None
)


@contextlib.contextmanager
def cancellable(flag: threading.Event) -> Iterator[None]:
    """Parses started inside this block stop at the next slice once `flag` is set."""
    token = _CANCEL.set(flag)
    try:
        yield
    finally:
        _CANCEL.reset(token)


# The stages after parsing (hidden text, noise, rendering) check the flag once per this
# many elements or rules: an abandoned extraction stops within that much work.
CANCEL_CHECK_INTERVAL: Final = 1_024


def check_cancelled() -> None:
    """Raise `ParseCancelled` if the current extraction was abandoned."""
    flag = _CANCEL.get()
    if flag is not None and flag.is_set():
        raise ParseCancelled


_CHUNK_CHARS: Final = 64 * 1024
_TAG_LOOKBACK: Final = 32  # a slice never ends inside the first characters of a tag
_LIBXML_DEPTH_CAP: Final = 2_048  # libxml2's own limit with huge_tree
# Documents up to this size whose length alone keeps them under LIM-F10 are parsed in
# one libxml2 call (about 1 ms a page, a few slices' worth of the counted parse).
ONE_CALL_CHARS: Final = 256 * 1024
_IMPLIED_ELEMENTS: Final = 3  # html, head and body, which libxml2 adds without a tag
# Longer documents are counted as they are fed, never cleaned to their end first: a
# long page of few tags (one text node of megabytes) gained nothing without the events.
OWNER_COUNT_CHARS: Final = 2 * 1024 * 1024
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
# A `>` followed by more than _LONG_TAG_CHARS characters without one: the only
# place where a long span can start after a `>`.
_LONG_RUN: Final = re.compile(f">[^>]{{{_LONG_TAG_CHARS + 1}}}")
_RUN_BLOCK: Final = (_LONG_TAG_CHARS + 2) // 2  # any run of 4,097 holds a whole such block
# Comments are matched too (an unclosed one runs to the end, as in HTML), so
# that `<!-- <script> -->` opens no raw text that would hide a real tag.
_RAW_TEXT_OPEN: Final = re.compile(
    r"<!--(?:[^-]|-(?!->))*(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)(?=[\s/>])[^>]*>",
    re.IGNORECASE,
)
_CONTROLS: Final = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ud800-\udfff]")
_CONTROL_BYTES: Final = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])
_CONTROL_BYTE_LIST: Final = tuple(bytes([control]) for control in _CONTROL_BYTES)
# What every match of _ROOT_END_TAGS starts with, in the UTF-8 bytes: no character
# outside ASCII matches a letter of "body" or "html" case-insensitively.
_ROOT_END_START: Final = re.compile(rb"</(?:[bB][oO][dD][yY]|[hH][tT][mM][lL])")
_ROOT_END_TAGS: Final = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
# The bytes a node can start after or at (`_pieces_within`): brackets, the HTML
# tokenizer's spaces (form feed too), the solidus and the quotes.
_OWNER_BYTES: Final = b"<> \t\n\r\x0c/\"'"


# Both parses use the same options. `collect_ids=False`: libxml2 otherwise enters every
# `id` attribute in a hash table of the document, which only XPath's id() and
# getElementById read; nothing here does (cssselect translates `#x` to `@id = 'x'`),
# and the table cost about 1 % of the parse (docs/extraction.md 6.1v).
_PARSER_OPTIONS: Final[dict[str, Any]] = {
    "remove_comments": True,
    "remove_pis": True,
    "huge_tree": True,
    "no_network": True,
    "encoding": "utf-8",
    "collect_ids": False,
}


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
    max_nodes = max(1, max_nodes)
    depth_bound = max(1, min(max_depth, _LIBXML_DEPTH_CAP))
    tags = _TagScanner(html)  # shared: a tag found by the first way is not counted again
    pieces, within = _pieces_within(html, max_nodes)
    if within:
        tree = _parse_uncounted(html, pieces, depth_bound, tags)
        if tree is not None:
            return tree
    return _parse_counted(html, max_nodes, depth_bound, tags, pieces)


def _pieces_within(html: str, max_nodes: int) -> tuple[list[tuple[bytes, int]], bool]:
    """The cleaned slices, and whether the document cannot cross the node bound.

    Every node of the tree owns a character of the input, except the
    `<html>`, `<head>` and `<body>` libxml2 may imply: an element its `<`, a
    `<p>` that libxml2 implies the first character of the text run that
    implied it, which follows a `>` or starts the document, and an attribute
    the first character of its name, which follows a space, a `/` or a quote
    (the HTML tokenizer starts a name nowhere else). So a document of at most
    LIM-F10 minus three characters, or one whose fed bytes hold at most
    LIM-F10 minus four such characters (the three roots and the text run at
    the start), cannot cross the node bound: its events need not be counted.
    The tests check the premise on random tag soup and on the fixtures. The
    count stops as soon as the bound is exceeded, or would be at the density
    of the slices read so far; the slices cleaned so far are the counted
    parse's first ones.
    """
    pieces: list[tuple[bytes, int]] = []
    short = len(html) <= max_nodes - _IMPLIED_ELEMENTS
    if not short and len(html) > OWNER_COUNT_CHARS:
        return pieces, False
    owners = _IMPLIED_ELEMENTS + 1
    for start, end in _slices(html):
        check_cancelled()
        data, count = _cleaned(html[start:end])
        pieces.append((data, count))
        if not short:
            owners += len(data) - len(data.translate(None, _OWNER_BYTES))
            # At this density the whole would cross: a nest or a flood the counted parse
            # cuts early is not cleaned to its end first (the way taken decides no output).
            if owners > max_nodes or owners * len(html) > max_nodes * end:
                return pieces, False
    return pieces, True


def _parse_uncounted(
    html: str, pieces: list[tuple[bytes, int]], depth_bound: int, tags: _TagScanner
) -> ParsedTree | None:
    """The tree of a document that cannot reach the node bound, or None: count it instead.

    Without the pull parser's events (their Python loop was a sixth of the
    parse). A document of at most ONE_CALL_CHARS is parsed by one libxml2
    call, about half the cost of feeding it; a longer one is fed slice by
    slice as the counted parse feeds it, so cancellation stays as prompt.
    Depth cannot be known before, so a tree that reaches the depth bound, a
    tag the attribute bound would cut, or any parse error is left to the
    counted parse, which then decides as it always did.
    """
    if tags.first_long_tag_before(len(html)) != -1:
        return None
    parser = etree.HTMLParser(**_PARSER_OPTIONS)
    try:
        if len(html) <= ONE_CALL_CHARS:
            root = etree.fromstring(b"".join(data for data, _ in pieces), parser)
        else:
            for data, _ in pieces:
                check_cancelled()
                parser.feed(data)
            root = parser.close()
    except etree.LxmlError:
        return None
    if root is None or root.xpath(_reaching_depth(depth_bound)):
        return None
    check_cancelled()  # an abandoned call extracts nothing from what was parsed
    controls_removed = sum(count for _, count in pieces)
    return ParsedTree(root=root, partial=False, controls_removed=controls_removed)


@functools.lru_cache(maxsize=8)
def _reaching_depth(depth: int) -> str:
    """XPath: whether an element sits `depth` levels deep (libxml2 walks it level by level)."""
    return "boolean(" + "/*" * depth + ")"


def _parse_counted(
    html: str,
    max_nodes: int,
    depth_bound: int,
    tags: _TagScanner | None = None,
    cleaned: list[tuple[bytes, int]] | None = None,
) -> ParsedTree:
    """Feed the pull parser slice by slice, counting its events, until a bound is crossed.

    `cleaned` holds the first slices already cleaned (`_pieces_within`).
    """
    # Fed as UTF-8 bytes, as lxml would encode a str itself: the cleaning below
    # works on those bytes at C speed.
    parser = etree.HTMLPullParser(events=("start", "end"), **_PARSER_OPTIONS)
    counter = _Counter(max_nodes, depth_bound)
    tags = _TagScanner(html) if tags is None else tags
    controls_removed = 0
    crossing: Element = None
    broken = tag_cut = False
    cleaned = [] if cleaned is None else cleaned
    for index, (start, slice_end) in enumerate(_slices(html)):
        check_cancelled()
        cut = tags.first_long_tag_before(slice_end)
        tag_cut = cut != -1
        if not tag_cut and index < len(cleaned):
            data, count = cleaned[index]
        else:
            data, count = _cleaned(html[start : cut if tag_cut else slice_end])
        controls_removed += count
        try:
            parser.feed(data)
        except etree.LxmlError:
            broken = True
        crossing = counter.consume(parser.read_events())
        if crossing is not None or broken or tag_cut:
            break
    check_cancelled()  # an abandoned call extracts nothing from what was parsed
    root = _finish(parser, counter)
    if crossing is not None:
        _prune_from(crossing)
    partial = crossing is not None or broken or tag_cut
    return ParsedTree(root=root, partial=partial, controls_removed=controls_removed)


class _TagScanner:
    """Finds the first tag with more than MAX_TAG_ATTRIBUTES attributes, slice by slice.

    It scans only as far as the parser has been fed, so a document cut at
    LIM-F10 or abandoned by its call is not scanned to its end first. A tag's
    span runs from a `<` to the next `>`; the spans walked are those of the
    first `<` after each `>` (and of the first `<` of the document). Only
    spans longer than _LONG_TAG_CHARS can hold that many attributes, and such
    a span lies in a run of at least that many characters without `>`, so
    the runs are found by one regular expression anchored at `>` (each
    character is looked at about twice, in C) instead of a Python step per
    tag. Long spans are then scanned for attributes (quote-aware, so a `>`
    inside a quoted value does not end the count early but the span is
    still bounded by it).
    """

    def __init__(self, html: str) -> None:
        self._html = html
        self._resume = 0  # where the walk goes on
        # True: the next span is that of the first `<` at or after `_resume`;
        # False: `_resume` is a `>` (the end of a span, or a `>` already looked past).
        self._at_tag = True
        self._done = False
        self._cut = -1  # the tag found, once found: asking again costs nothing
        self._raw_text: list[tuple[int, int]] | None = None

    def first_long_tag_before(self, end: int) -> int:
        """The start of such a tag among those starting before `end`, or -1."""
        if self._cut != -1:
            return self._cut if self._cut < end else -1
        html = self._html
        while (span := self._next_long_span(end)) is not None:
            position, close = span
            if _START_TAG.match(html, position):
                inside = self._raw_text_end(position)
                if inside is not None:
                    self._resume, self._at_tag = inside, True
                    continue
                stop = len(html) if close == -1 else close
                attributes = sum(1 for _ in _ATTRIBUTE.finditer(html, position + 1, stop))
                if attributes > MAX_TAG_ATTRIBUTES:
                    self._cut = position
                    return position
            self._past(close)
        return -1

    def _past(self, close: int) -> None:
        """Go on after the span that ends at `close` (-1: it ran to the end of the document)."""
        if close == -1:
            self._done = True
        else:
            self._resume, self._at_tag = close, False

    def _next_long_span(self, end: int) -> tuple[int, int] | None:
        """The next walked `<` before `end` whose span is long, with the `>` that ends it."""
        html = self._html
        while not self._done:
            if self._at_tag:
                position = html.find("<", self._resume)
                if position == -1:
                    self._done = True
                    return None
                if position >= end:
                    self._resume = position
                    return None
                close = html.find(">", position)
                if (len(html) if close == -1 else close) - position > _LONG_TAG_CHARS:
                    return position, close
                self._past(close)
                continue
            # A match needs _LONG_TAG_CHARS + 1 characters after its `>`, so with this end
            # every `>` before `end` is tried and none after it.
            gap = long_run_start(html, self._resume, end + _LONG_TAG_CHARS + 1)
            if gap == -1:
                # Every `>` before `end` was tried and is too short: go on from the last.
                self._resume = max(self._resume, html.rfind(">", self._resume, end))
                return None
            after = gap + 1
            close = html.find(">", after)
            stop = len(html) if close == -1 else close
            position = html.find("<", after, stop)
            if position == -1:
                self._past(close)
            elif position >= end:
                # Walked next, in a later slice: its `>` is not looked for again before then.
                self._resume, self._at_tag = position, True
                return None
            elif stop - position > _LONG_TAG_CHARS:
                return position, close
            else:
                self._past(close)
        return None

    def _raw_text_end(self, position: int) -> int | None:
        """The end of the raw-text span (script, style, ...) that holds `position`, or None.

        Only a start tag has attributes: a long span that starts `<!`, `</` or
        `<?`, or that lies in the raw text of script, style and the like (a
        JSON-LD block, a `<![CDATA[` section), is no tag, as the HTML tokenizer
        reads it. The spans are found by one regex scan, made only when a long
        span is met.
        """
        if self._raw_text is None:
            self._raw_text = _raw_text_spans(self._html)
        spans = self._raw_text
        index = bisect.bisect_right(spans, position, key=lambda span: span[0]) - 1
        if index >= 0 and spans[index][0] <= position < spans[index][1]:
            return spans[index][1]
        return None


def long_run_start(html: str, start: int, stop: int) -> int:
    """Where `_LONG_RUN.search(html, start, stop)` would match, or -1; found by memchr.

    The regular expression takes a step per character. A match is a `>` and
    _LONG_TAG_CHARS + 1 characters without one, so it holds a whole block of
    _RUN_BLOCK characters counted from `start` (a run of 4,097 holds a whole
    aligned block of 2,048) that has no `>`. Each block is searched once
    (`str.rfind`, in C, which also gives the last `>` before the next block);
    at a block without `>` the one candidate is the last `>` before it, and a
    run without `>` after that candidate is the match. The first block to
    give a match gives the first match: an earlier match would hold an
    earlier such block. A test compares the two on random documents.
    """
    stop = min(stop, len(html))
    last = -1  # the last `>` before `block` (from `start` on)
    block = start
    while block + _RUN_BLOCK <= stop:
        found = html.rfind(">", block, block + _RUN_BLOCK)
        if found != -1:
            last = found
        elif (
            last != -1
            and last + _LONG_TAG_CHARS + 2 <= stop
            and html.find(">", last + 1, last + _LONG_TAG_CHARS + 2) == -1
        ):
            return last
        block += _RUN_BLOCK
    return -1


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


def _cleaned(piece: str) -> tuple[bytes, int]:
    """`piece` as the parser is fed it, UTF-8, with the count of control characters removed.

    C0 controls and DEL are single bytes in UTF-8 (never part of a longer
    sequence), so deleting those bytes removes exactly what `_CONTROLS`
    removes from the text, at C speed; only a piece with a lone surrogate
    (which UTF-8 cannot encode) takes the regular expression. The text
    regular expression for `</body>` and `</html>` (Unicode spaces before the
    `>`) runs only on a piece whose bytes hold the start of a match, which
    nearly every piece but the last does not.
    """
    try:
        encoded = piece.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        text, count = _CONTROLS.subn("", piece)
        encoded = text.encode("utf-8")
    else:
        count = 0
        # One memchr per control byte is several times faster than one pass deleting them.
        if any(encoded.find(control) != -1 for control in _CONTROL_BYTE_LIST):
            kept = encoded.translate(None, _CONTROL_BYTES)
            count, encoded = len(encoded) - len(kept), kept
    if _ROOT_END_START.search(encoded):
        encoded = _ROOT_END_TAGS.sub("", encoded.decode("utf-8")).encode("utf-8")
    return encoded, count


def _finish(parser: Any, counter: _Counter) -> Element:
    try:
        root = parser.close()
    except etree.LxmlError:
        root = None
    # Events left queued (those close() emits, those after a crossing) hold elements, which
    # hold the document, which holds the parser and its queue: a cycle that kept the whole
    # libxml2 tree alive until a full collection. Read, it is freed with its last element.
    for _ in parser.read_events():
        pass
    if root is None and counter.first is not None:
        root = counter.first.getroottree().getroot()
    if root is None:
        raise Unparseable(UNPARSEABLE)
    return root


def _slices(html: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each slice fed to the parser."""
    start, size = 0, len(html)
    while start < size:
        end = min(start + _CHUNK_CHARS, size)
        if end < size:
            # Keep `</body>` whole so that the end-tag filter sees it.
            cut = html.rfind("<", end - _TAG_LOOKBACK, end)
            if cut > start:
                end = cut
        yield start, end
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
