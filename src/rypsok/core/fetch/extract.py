"""Main-content extraction: HTML, plain text and Markdown to clean Markdown.

The pure stages of the page pipeline after decoding (REQ-PAGE-001): parsing
under node and depth limits, noise removal, main-content extraction,
rendering, cleaning. `extract_html` and `extract_text` hold no state and
can run in any thread.

Parsing (REQ-PAGE-006, REQ-SEC-014). lxml's `HTMLPullParser` is fed the
document in 64 KiB slices; after each slice its start/end events are counted,
and once the document opens more than `max_nodes` elements (LIM-F10) or one
deeper than `max_depth` (LIM-F11) feeding stops. The element that crossed the
bound and everything after it in document order are removed, so the tree
holds exactly what was parsed within the bounds and `partial` is set. A page
of 10 MB of nested `<div>` therefore costs one slice, not a full parse.
Elements are counted (text runs are bounded by the byte limit LIM-F3).
Measured in this container (CPython 3.11, lxml 6.1.3 / libxml2 2.14.6,
selectolax 1.0.2) for a 34 KB / 268 KB / 1 MB page: lxml tree parse 0.29 /
0.95 / 3.2 ms, the counted pull parse 0.39 / 1.6 / 5.8 ms, selectolax (Lexbor)
0.35 / 0.91 / 1.9 ms. Lexbor is faster on large pages but builds the whole
tree before any bound can apply and is quadratic in depth (10k / 20k / 40k
nested divs: 0.11 / 0.46 / 1.85 s), so a hostile page would need a
pre-scanner that re-implements HTML tree construction to bound it; lxml is
already a dependency and bounds itself. `huge_tree` lifts libxml2's own depth
cap from 256 to 2048, because at 256 libxml2 silently drops the rest of the
document before our own bound (default 256) could see it; our bound is
clamped below 2048. Before parsing, C0 controls (except HTML whitespace) and
lone surrogates are removed and counted (libxml2 would turn them into a
visible U+FFFD), and `</body>`/`</html>` end tags are dropped: libxml2 2.14
discards everything after `</html>`, where HTML parsing keeps it in the body.
The HTML parser reads no DTD and expands no entity beyond the HTML ones, so
entity bombs stay literal text; no script runs and meta refresh is not
followed (REQ-FETCH-009).

Noise removal (REQ-CTX-005). Skipped with their subtrees: `head` (the title
is read separately), script, style, noscript, template, embedded and form
controls, `nav`, `rt`/`rp` (ruby annotations), a `dialog` that is not open;
`header`, `footer` and `aside` (and roles banner, contentinfo,
complementary) outside an article, main or section, where they are site
chrome rather than the section's own; roles navigation, search, menu,
menubar, toolbar, dialog; and anything a browser would not render: the
`hidden` attribute, `aria-hidden="true"`, an inline style with
`display:none`, `visibility:hidden`, zero font size or opacity, a clip to
nothing, zero size with hidden overflow, or an offset of -1000 units or more
(off-screen text), classes and ids hidden by a simple top-level rule of the
page's own `<style>` (`.x{display:none}`), and the usual utility classes
(`hidden`, `d-none`, `sr-only`, ...). Comments and processing instructions
never enter the tree. Blocks whose class or id names a cookie banner,
consent, newsletter, share bar, related links, advertising, popup or
breadcrumb, and forms, are dropped unless they hold three or more paragraphs
or an article (so a page wrapped in one `<form>` survives).

Main content (REQ-FETCH-002, REQ-PAGE-002), rule-based (REQ-ARCH-006): a
`<main>` (or `role="main"`) with at least 50 characters of text, narrowed to
its single article when that article holds at least half of it; else the
article holding 60 % of all article text; else a readability-style score
computed in the same bottom-up pass that measures text: every
paragraph-like block of 25+ characters gives 1 + commas + length/100 (at
most 3) to its parent, half to its grandparent, a sixth to the next; a
candidate's score adds tag and class/id weights and is scaled by 1 - link
density. Three near-equal candidates under one ancestor promote that
ancestor (a thread of posts), and siblings of the winner that score well, or
are plain paragraphs, join it. Inside the chosen content, containers that
are mostly links, that wrap a form and little else, or that carry a chrome
class without paragraphs are dropped; a container holding the page heading
or an article never is. When the content lacks the page's first `<h1>` (or,
in older templates, `<h2>`) and that heading is part of the title, the
heading is put first. When the chosen content renders empty, the whole body
is rendered instead; when that is empty too, ExtractionFailed (a script-only
shell, a page of pure chrome).

Cost. The analysis visits each element once (a plain inline element shares
its parent's measure), paragraph scores reach three ancestors, and the
rendering visits each element of the content at most twice, so the work is
linear in the parsed document; every loop over the tree is iterative. At
the default bounds the worst cases measured here (200,000 nodes of
paragraphs, links, table cells, classed and styled divs) take 1.1-4.2 s.
Quality and speed against trafilatura: docs/extraction.md.

Rendering (REQ-FETCH-004): ATX headings, paragraphs, `-`/`1.` lists (nested
by indentation), `>` quotes, fenced code blocks with the language of a
`language-x`/`lang-x` class, inline code, `**strong**`, `*emphasis*`, links
as `[text](absolute URL)` (http and https only, resolved against `<base
href>` and then the page URL, at most LIM-F9 characters; other links keep
their text), tables as pipe tables when they have two rows and two columns,
else as paragraphs. Images are dropped. Text is not escaped for Markdown:
the output is read, not re-rendered (REQ-CTX-008). Nesting of quotes and
lists is shown to eight levels, so output lines stay short and the cost stays
linear. The output may not exceed twice the input plus 64 KiB (resolving
links against a long base URL could otherwise multiply it); past that the
rendering stops and the result is partial.

Cleaning (REQ-SEC-015): invisible characters are removed from each text run
as it is rendered (so a link or emphasis whose text is only invisible
characters vanishes) and from the whole result once more, with
`remove_invisible`; a fast pre-check, proven by a test to flag every
character that function removes, skips it on clean text. The count, with
the controls removed before parsing, is `invisible_removed`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import urljoin, urlsplit

from lxml import etree  # type: ignore[import-untyped]

from rypsok.core import limits
from rypsok.core.boundary.invisible import remove_invisible
from rypsok.core.fetch.parse import UNPARSEABLE, Element, Unparseable, parse_bounded

# lxml has no type stubs; an element is opaque to the type checker.
_Element = Element


@dataclass(frozen=True, slots=True)
class Extracted:
    """What extraction made of a page."""

    markdown: str  # main content as Markdown, invisible characters removed
    title: str | None
    partial: bool  # a parse bound (LIM-F10, LIM-F11) or the output bound was hit
    invisible_removed: int


class ExtractionFailed(Exception):
    """Nothing could be extracted (unsupported_content, reason extraction_failed).

    The argument is a fixed code, never page text (REQ-SEC-016).
    """


NO_CONTENT: Final = "no_content"


# -- public entry points -------------------------------------------------------------------


def extract_html(
    html: str,
    *,
    base_url: str,
    max_nodes: int = limits.PARSED_NODES,
    max_depth: int = limits.NESTING_DEPTH,
) -> Extracted:
    """The main content of an HTML document as Markdown, parsed within the bounds."""
    try:
        tree = parse_bounded(html, max_nodes=max_nodes, max_depth=max_depth)
    except Unparseable:
        raise ExtractionFailed(UNPARSEABLE) from None
    body = _body(tree.root)
    analysis = _analyse(body, _hidden_rules(tree.root))
    title, title_removed = _title(tree.root)
    base = _base_url(tree.root, base_url)
    budget = 2 * len(html) + _OUTPUT_SLACK
    renderer = _Markdown(analysis, base, budget)
    markdown = renderer.render(_with_heading(_choose(analysis, body), analysis, title))
    if not markdown.strip() and body not in analysis.noise:
        renderer = _Markdown(analysis, base, budget)
        markdown = renderer.render([body])
    markdown, removed = _clean(markdown)
    markdown = markdown.strip()
    if not markdown:
        raise ExtractionFailed(NO_CONTENT)
    return Extracted(
        markdown=markdown,
        title=title,
        partial=tree.partial or renderer.partial,
        invisible_removed=tree.controls_removed + renderer.removed + removed + title_removed,
    )


def extract_text(text: str, *, kind: Literal["text", "markdown"]) -> Extracted:
    """Plain text or Markdown passed through with cleaning; Markdown loses its HTML comments."""
    cleaned = _LINE_BREAKS.sub("\n", text).replace("\x1f", " ")
    if kind == "markdown":
        cleaned = _strip_markdown_comments(cleaned)
    cleaned, removed = _clean(cleaned)
    cleaned = _BLANK_RUN.sub("\n\n", _TRAILING_SPACE.sub("", cleaned)).strip("\n")
    if not cleaned.strip():
        raise ExtractionFailed(NO_CONTENT)
    title = _markdown_title(cleaned) if kind == "markdown" else None
    return Extracted(markdown=cleaned, title=title, partial=False, invisible_removed=removed)


# -- cleaning (REQ-SEC-015) ----------------------------------------------------------------

# A superset of what remove_invisible removes, as patterns fast enough for the
# whole output (remove_invisible's own pattern costs ~75 ns per character; these
# ~7): the BMP class apart from the astral one, because `re` tests a class with
# astral ranges several times slower. A test checks the superset against
# remove_invisible for the running Unicode version.
_BMP_CANDIDATES: Final = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ud800-\udfff\ufdd0-\ufdef"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\ufffe\uffff]"
)
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_ASTRAL_CANDIDATES: Final = re.compile(
    "[\U00013430-\U0001345f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
    + "".join(chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(1, 17))
    + "]"
)


def _may_hold_invisible(text: str) -> bool:
    """False only when remove_invisible would remove nothing from `text`."""
    if _BMP_CANDIDATES.search(text):
        return True
    return _ASTRAL.search(text) is not None and _ASTRAL_CANDIDATES.search(text) is not None


def _clean(text: str) -> tuple[str, int]:
    if not _may_hold_invisible(text):
        return text, 0
    return remove_invisible(text)


# -- plain text and Markdown ---------------------------------------------------------------

# Line separators other than LF; Unicode whitespace controls become line breaks.
_LINE_BREAKS: Final = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_TRAILING_SPACE: Final = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUN: Final = re.compile(r"\n{3,}")
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_HTML_COMMENT: Final = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_ATX_HEADING: Final = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _strip_markdown_comments(text: str) -> str:
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


# -- page-level facts ----------------------------------------------------------------------


def _body(root: _Element) -> _Element:
    body = root.find("body")
    return root if body is None else body


def _title(root: _Element) -> tuple[str | None, int]:
    """The document title, whitespace collapsed and cleaned, with the removal count."""
    for element in root.iter("title"):
        text = " ".join((element.text or "").split())
        cleaned, removed = remove_invisible(text)
        cleaned = " ".join(cleaned.split())
        return (cleaned or None), removed
    return None, 0


def _base_url(root: _Element, page_url: str) -> str:
    base = root.find("head/base[@href]")
    if base is None:
        return page_url
    resolved = _resolve(page_url, base.get("href"))
    return page_url if resolved is None else resolved


def _resolve(base: str, href: str | None) -> str | None:
    """An absolute http(s) URL of at most LIM-F9 characters, or None."""
    if href is None:
        return None
    href = href.strip()
    if "\t" in href or "\n" in href or "\r" in href:
        href = re.sub("[\t\n\r]", "", href)  # as browsers do
    if not href or href.startswith("#") or len(href) > limits.URL_MAX_CHARS:
        return None
    try:
        if not href[:8].lower().startswith(("http://", "https://")):
            href = urljoin(base, href)
        parts = urlsplit(href)
        valid = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a malformed authority, such as an unclosed IPv6 bracket
        return None
    if not valid or len(href) > limits.URL_MAX_CHARS:
        return None
    return href.translate(_URL_ESCAPES)


# Characters that would end or break a Markdown link destination.
_URL_ESCAPES: Final = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"})


# -- hidden by the page's own style sheet --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _HiddenRules:
    classes: frozenset[str]
    ids: frozenset[str]


# Utility classes that mean "not rendered" (or "for screen readers only") everywhere.
_UTILITY_HIDDEN: Final = frozenset(
    {"hidden", "d-none", "is-hidden", "hide", "invisible", "sr-only", "visually-hidden"}
    | {"visuallyhidden", "screen-reader-text", "screenreader-only"}
)
_CSS_COMMENT: Final = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_CSS_HIDING: Final = re.compile(r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)", re.I)
_SIMPLE_SELECTOR: Final = re.compile(r"\s*[a-zA-Z0-9]*([.#])(-?[_a-zA-Z][\w-]*)\s*")
_RULE_WINDOW: Final = 4_096  # how far back a rule's braces are looked for
_RULES_READ: Final = 512  # hiding declarations read per page


def _hidden_rules(root: _Element) -> _HiddenRules:
    """Classes and ids hidden by a top-level rule like `.x, #y { display: none }`."""
    classes: set[str] = set(_UTILITY_HIDDEN)
    ids: set[str] = set()
    for style in root.iter("style"):
        css = style.text
        if not css or _CSS_HIDING.search(css) is None:
            continue
        if "/*" in css:
            css = _CSS_COMMENT.sub("", css)
        _collect_hidden(css, classes, ids)
    return _HiddenRules(frozenset(classes), frozenset(ids))


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


# -- analysis: noise, measures and scores in one pass --------------------------------------

_SKIPPED_TAGS: Final = frozenset(
    {"head", "title", "script", "style", "noscript", "template", "link", "meta", "base"}
    | {"nav", "button", "input", "select", "option", "optgroup", "textarea", "datalist"}
    | {"iframe", "frame", "frameset", "noframes", "object", "embed", "applet", "param"}
    | {"canvas", "svg", "video", "audio", "source", "track", "picture", "img", "map"}
    | {"area", "rt", "rp", "annotation", "annotation-xml", "slot"}
)
_SECTION_CHROME: Final = frozenset({"header", "footer", "aside"})
_CHROME_ROLES: Final = frozenset(
    {"navigation", "search", "menu", "menubar", "toolbar", "dialog", "alertdialog", "tooltip"}
)
_SECTION_CHROME_ROLES: Final = frozenset({"banner", "contentinfo", "complementary"})
_HIDDEN_STYLE: Final = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)"
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

# Class/id words (substring match, readability style).
_NEGATIVE_NAMES: Final = re.compile(
    r"banner|combx|comment|contact|foot|masthead|media|meta|outbrain|taboola|promo|related"
    r"|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|tags|tool|widget|nav|menu"
    r"|breadcrumb|cookie|consent|newsletter|social|subscribe|popup|modal|rail|pagination|pager"
)
_POSITIVE_NAMES: Final = re.compile(
    r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|prose|markdown"
)
# Chrome that is dropped unless it turns out to hold real content (paragraphs,
# an article, the page heading).
_CHROME_NAMES: Final = re.compile(
    r"cookie|consent|gdpr|newsletter|subscribe|signup|sign-up|advert|adsense|sponsor|outbrain"
    r"|taboola|popup|modal|breadcrumb|skip-?link|share|sharing|social|related|recommend|promo"
    r"|banner|donat|fundrais|sitenotice|editsection|edit-?link|(?:^|[\s_-])ads?(?:[\s_-]|$)"
)
_NAME_WEIGHT: Final = 25

_BLOCK_TAGS: Final = frozenset(
    {"address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog"}
    | {"dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1"}
    | {"h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "li", "main", "menu", "nav"}
    | {"ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead"}
    | {"tr", "ul", "caption", "legend", "br"}
)
_PARAGRAPH_TAGS: Final = frozenset({"p", "pre", "td", "blockquote"})
_TAG_SCORE: Final = {
    "div": 5,
    "pre": 3,
    "td": 3,
    "blockquote": 3,
    **dict.fromkeys(("address", "ol", "ul", "dl", "dd", "dt", "li", "form"), -3),
    **dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6", "th"), -5),
}
_MIN_PARAGRAPH_CHARS: Final = 25
_SCORE_DIVIDERS: Final = (1.0, 2.0, 6.0)  # parent, grandparent, great-grandparent
_WIDE_COMMAS: Final = ("、", "，", "،")  # CJK and Arabic commas count too

# Flags inherited from ancestors.
_IN_CONTENT: Final = 1  # inside article/main/section: header, footer, aside are its own
_IN_ARTICLE: Final = 2
_IN_MAIN: Final = 4
_INHERITED: Final = _IN_CONTENT | _IN_ARTICLE | _IN_MAIN
# Flags gathered from descendants.
_HAS_BLOCK: Final = 8
_HAS_TABLE: Final = 16
_HAS_H1: Final = 32
_HAS_LANDMARK: Final = 64  # an article or main inside
_HAS_FORM: Final = 128  # a form inside, kept or not
_GATHERED: Final = _HAS_BLOCK | _HAS_TABLE | _HAS_H1 | _HAS_LANDMARK | _HAS_FORM
# Own flag: chrome by name, or a form; dropped at its end unless content-rich.
_CONDITIONAL: Final = 256
_CONTENT_RICH_PARAGRAPHS: Final = 3
_NOISE_CANDIDATE_TAGS: Final = _SKIPPED_TAGS | _SECTION_CHROME | {"dialog"}
_NOTED_TAGS: Final = frozenset({"article", "h1", "h2"})
# Inline elements without attributes of interest share their parent's measure.
_INLINE_TAGS: Final = frozenset(
    {"a", "b", "strong", "i", "em", "span", "code", "small", "sup", "sub", "abbr", "cite"}
    | {"time", "font", "br", "wbr", "kbd", "samp", "var", "s", "u", "q", "mark", "tt"}
    | {"big", "strike", "del", "ins", "dfn", "bdi", "bdo", "data", "nobr", "ruby", "rb"}
)


class _Stat:
    """Measures of one element's rendered subtree."""

    __slots__ = ("chars", "commas", "element", "flags", "link_chars", "paragraphs", "score", "tag")

    def __init__(self, element: _Element, tag: str, flags: int) -> None:
        self.element = element
        self.tag = tag
        self.flags = flags
        self.chars = 0
        self.link_chars = 0
        self.commas = 0
        self.paragraphs = 0
        self.score = 0.0

    def add_text(self, text: str) -> None:
        if text.isspace():
            return
        self.chars += len(text.strip())
        self.commas += text.count(",")
        if not text.isascii():
            self.commas += sum(text.count(comma) for comma in _WIDE_COMMAS)

    @property
    def link_density(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0


@dataclass(slots=True)
class _Analysis:
    noise: set[_Element] = field(default_factory=set)
    stats: dict[_Element, _Stat] = field(default_factory=dict)
    scored: list[_Stat] = field(default_factory=list)
    mains: list[_Stat] = field(default_factory=list)
    articles: list[_Stat] = field(default_factory=list)
    headings: dict[str, _Element] = field(default_factory=dict)  # first h1 and h2


def _analyse(body: _Element, hidden: _HiddenRules) -> _Analysis:
    """Noise verdicts, text measures and paragraph scores in one iterative pass.

    The stack holds one measure per open element; a plain inline element
    (a link, emphasis, a span) shares its parent's measure instead of having
    its own, which halves the cost of text-heavy pages. A link records how
    much text its parent had when it opened, to count link text.
    """
    analysis = _Analysis()
    noise = analysis.noise
    stack: list[_Stat] = []
    links: list[tuple[_Element, _Stat, int]] = []
    walker = etree.iterwalk(body, events=("start", "end"))
    for event, element in walker:
        if event == "start":
            stat = _open(element, stack, hidden, analysis)
            if stat is None:
                noise.add(element)
                walker.skip_subtree()
                continue
            stack.append(stat)
            if stat.element is not element and element.tag == "a":
                links.append((element, stat, stat.chars))
            if text := element.text:
                stat.add_text(text)
        elif element in noise:
            if stack and (tail := element.tail):
                stack[-1].add_text(tail)
        elif stack[-1].element is not element:
            _close_inline(element, stack, links)
        else:
            _close(element, stack, analysis)
    return analysis


def _close_inline(
    element: _Element, stack: list[_Stat], links: list[tuple[_Element, _Stat, int]]
) -> None:
    stat = stack.pop()
    if links and links[-1][0] is element:
        _, _, chars_before = links.pop()
        stat.link_chars += stat.chars - chars_before
    if tail := element.tail:
        stack[-1].add_text(tail)


def _open(
    element: _Element, stack: list[_Stat], hidden: _HiddenRules, analysis: _Analysis
) -> _Stat | None:
    """The element's measure, or None when it is noise (the walk root never is)."""
    tag = element.tag
    if not isinstance(tag, str):
        return None
    inherited = stack[-1].flags & _INHERITED if stack else 0
    if stack and tag in _NOISE_CANDIDATE_TAGS and _is_noise_tag(tag, element, inherited):
        return None
    flags = inherited
    is_main = tag == "main"
    items = element.items()  # one call: attribute reads are the costly part of the pass
    if stack and tag in _INLINE_TAGS and not items:
        return stack[-1]  # shared with the parent
    if items:
        attributes = dict(items)
        if stack and _hidden_by_attributes(attributes, inherited, hidden):
            return None
        is_main = is_main or _role(attributes) == "main"
        if _CHROME_NAMES.search(_names(attributes)):
            flags |= _CONDITIONAL
        elif stack and tag in _INLINE_TAGS:
            return stack[-1]
    if is_main or tag in ("article", "section"):
        flags |= _IN_CONTENT
    if tag == "form":
        flags |= _CONDITIONAL
    stat = _Stat(element, tag, flags)
    if is_main or tag in _NOTED_TAGS:
        _note(stat, is_main=is_main, inherited=inherited, analysis=analysis)
    analysis.stats[element] = stat
    return stat


def _note(stat: _Stat, *, is_main: bool, inherited: int, analysis: _Analysis) -> None:
    """Record the landmarks and headings that the choice of content looks at."""
    tag = stat.tag
    if is_main:
        stat.flags |= _IN_MAIN
        analysis.mains.append(stat)
    elif tag == "article" and not inherited & _IN_ARTICLE:
        stat.flags |= _IN_ARTICLE
        analysis.articles.append(stat)
    elif tag in ("h1", "h2") and tag not in analysis.headings:
        analysis.headings[tag] = stat.element


def _close(element: _Element, stack: list[_Stat], analysis: _Analysis) -> None:
    stat = stack.pop()
    tag = stat.tag
    if tag == "a":
        stat.link_chars = stat.chars
    if stat.chars >= _MIN_PARAGRAPH_CHARS and (
        tag in _PARAGRAPH_TAGS or (tag == "div" and not stat.flags & _HAS_BLOCK)
    ):
        stat.paragraphs += 1
        _score_ancestors(stat, stack, analysis)
    if not stack:
        return
    parent = stack[-1]
    if tag == "form":
        parent.flags |= _HAS_FORM
    if (
        stat.flags & _CONDITIONAL
        and not stat.flags & (_HAS_LANDMARK | _HAS_H1)
        and stat.paragraphs < _CONTENT_RICH_PARAGRAPHS
    ):
        analysis.noise.add(element)
    else:
        _merge(parent, stat)
    if tail := element.tail:
        parent.add_text(tail)


def _merge(parent: _Stat, child: _Stat) -> None:
    parent.chars += child.chars
    parent.link_chars += child.link_chars
    parent.commas += child.commas
    parent.paragraphs += child.paragraphs
    parent.flags |= child.flags & _GATHERED
    tag = child.tag
    if tag in _BLOCK_TAGS:
        parent.flags |= _HAS_BLOCK
    if tag == "table":
        parent.flags |= _HAS_TABLE
    elif tag == "h1":
        parent.flags |= _HAS_H1
    if tag == "article" or (child.flags & _IN_MAIN and not parent.flags & _IN_MAIN):
        parent.flags |= _HAS_LANDMARK


def _score_ancestors(paragraph: _Stat, stack: list[_Stat], analysis: _Analysis) -> None:
    """Give the paragraph's points to its parent, half to the grandparent, a sixth above."""
    points = 1 + paragraph.commas + min(paragraph.chars // 100, 3)
    level = 0
    previous = None
    for ancestor in reversed(stack):
        if ancestor is previous:
            continue  # an inline element's shared entry
        previous = ancestor
        if not ancestor.score:
            analysis.scored.append(ancestor)
        ancestor.score += points / _SCORE_DIVIDERS[level]
        level += 1
        if level == len(_SCORE_DIVIDERS):
            return


def _is_noise_tag(tag: str, element: _Element, inherited: int) -> bool:
    """Whether the tag alone makes the element noise: not rendered, or site chrome."""
    if tag in _SKIPPED_TAGS:
        return True
    if tag in _SECTION_CHROME:
        return not inherited & _IN_CONTENT
    return tag == "dialog" and element.get("open") is None


def _hidden_by_attributes(
    attributes: Mapping[str, str], inherited: int, hidden: _HiddenRules
) -> bool:
    """Whether the attributes hide the element (REQ-CTX-005) or make it site chrome."""
    if "hidden" in attributes:
        return True
    if attributes.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = attributes.get("style")
    if style and _hidden_style(style):
        return True
    role = _role(attributes)
    if role in _CHROME_ROLES or (role in _SECTION_CHROME_ROLES and not inherited & _IN_CONTENT):
        return True
    classes = attributes.get("class")
    if classes and not hidden.classes.isdisjoint(classes.split()):
        return True
    identifier = attributes.get("id")
    return identifier is not None and identifier.strip() in hidden.ids


def _role(attributes: Mapping[str, str]) -> str:
    role = attributes.get("role")
    return role.strip().lower() if role else ""


def _hidden_style(style: str) -> bool:
    if "/*" in style:
        style = _CSS_COMMENT.sub("", style)
    if _HIDDEN_STYLE.search(style):
        return True
    return bool(_ZERO_SIZE.search(style)) and bool(_OVERFLOW_HIDDEN.search(style))


def _names(attributes: Mapping[str, str]) -> str:
    """Class and id, lower case, for the name patterns; "" when there are none."""
    classes = attributes.get("class", "")
    identifier = attributes.get("id", "")
    if not classes and not identifier:
        return ""
    return f"{classes} {identifier}".lower()


def _name_weight(element: _Element) -> int:
    names = _names(element.attrib)
    if not names:
        return 0
    weight = 0
    if _NEGATIVE_NAMES.search(names):
        weight -= _NAME_WEIGHT
    if _POSITIVE_NAMES.search(names):
        weight += _NAME_WEIGHT
    return weight


# -- choosing the main content -------------------------------------------------------------

_MIN_CONTENT_CHARS: Final = 50  # a landmark with less is taken as empty
_ARTICLE_SHARE_OF_MAIN: Final = 0.5
_ARTICLE_SHARE_OF_ARTICLES: Final = 0.6
_NEAR_TOP: Final = 0.75  # an alternative candidate scores this share of the top
_ALTERNATIVES: Final = 5
_ALTERNATIVES_TO_PROMOTE: Final = 3
_SIBLING_SHARE: Final = 0.2
_SIBLING_MIN_SCORE: Final = 10.0
_SIBLING_PARAGRAPH_CHARS: Final = 80
_SIBLING_PARAGRAPH_DENSITY: Final = 0.25


def _choose(analysis: _Analysis, body: _Element) -> list[_Element]:
    """The elements that hold the main content, in document order."""
    live = [stat for stat in analysis.mains if stat.element not in analysis.noise]
    main = next((stat for stat in live if stat.chars >= _MIN_CONTENT_CHARS), None)
    articles = [stat for stat in analysis.articles if stat.element not in analysis.noise]
    if main is not None:
        inside = [stat for stat in articles if _is_inside(stat.element, main.element)]
        if len(inside) == 1 and inside[0].chars >= _ARTICLE_SHARE_OF_MAIN * main.chars:
            return [inside[0].element]
        return [main.element]
    if articles:
        best = max(articles, key=lambda stat: stat.chars)
        total = sum(stat.chars for stat in articles)
        if best.chars >= _MIN_CONTENT_CHARS and best.chars >= _ARTICLE_SHARE_OF_ARTICLES * total:
            return [best.element]
    top = _top_candidate(analysis)
    if top is None:
        return [body]
    return _with_siblings(top, analysis)


def _is_inside(element: _Element, container: _Element) -> bool:
    return any(ancestor is container for ancestor in element.iterancestors())


def _final_score(stat: _Stat) -> float:
    element = stat.element
    base = _TAG_SCORE.get(element.tag, 0) + _name_weight(element)
    return (stat.score + base) * (1.0 - stat.link_density)


def _top_candidate(analysis: _Analysis) -> _Stat | None:
    ranked = sorted(
        (
            (_final_score(stat), stat)
            for stat in analysis.scored
            if stat.element not in analysis.noise
        ),
        key=lambda pair: pair[0],
        reverse=True,
    )
    if not ranked or ranked[0][0] <= 0:
        return None
    for score, stat in ranked:
        stat.score = score  # from here on, the final score
    top = ranked[0][1]
    near = [stat for score, stat in ranked[1 : 1 + _ALTERNATIVES] if score >= _NEAR_TOP * top.score]
    return _promote(top, near, analysis)


def _promote(top: _Stat, near: list[_Stat], analysis: _Analysis) -> _Stat:
    """The closest ancestor of `top` that also holds three near-equal candidates."""
    if len(near) < _ALTERNATIVES_TO_PROMOTE:
        return top
    # Sets of the elements themselves: lxml keeps one proxy per node while it lives.
    ancestry = [set(stat.element.iterancestors()) for stat in near]
    for ancestor in top.element.iterancestors():
        holding = sum(ancestor in ancestors for ancestors in ancestry)
        if holding >= _ALTERNATIVES_TO_PROMOTE:
            stat = analysis.stats.get(ancestor)
            return top if stat is None else stat
    return top


def _with_siblings(top: _Stat, analysis: _Analysis) -> list[_Element]:
    parent = top.element.getparent()
    if parent is None or top.element.tag == "body":
        return [top.element]
    threshold = max(_SIBLING_MIN_SCORE, top.score * _SIBLING_SHARE)
    chosen: list[_Element] = []
    for sibling in parent:
        if sibling is top.element:
            chosen.append(sibling)
            continue
        stat = analysis.stats.get(sibling)
        if stat is None or sibling in analysis.noise:
            continue
        if stat.score >= threshold or _is_loose_paragraph(stat):
            chosen.append(sibling)
    return chosen


def _is_loose_paragraph(stat: _Stat) -> bool:
    if stat.element.tag != "p":
        return False
    density = stat.link_density
    if stat.chars >= _SIBLING_PARAGRAPH_CHARS:
        return density < _SIBLING_PARAGRAPH_DENSITY
    return stat.chars >= _MIN_PARAGRAPH_CHARS and density == 0


def _with_heading(roots: list[_Element], analysis: _Analysis, title: str | None) -> list[_Element]:
    """Put the page's heading first when the content lacks it and it names the page.

    The heading is the first `<h1>`, else the first `<h2>` (older templates),
    and it must be part of the title, so a logo in an `<h1>` is not taken.
    """
    if not title or any(_has_h1(root, analysis) for root in roots):
        return roots
    for tag in ("h1", "h2"):
        heading = analysis.headings.get(tag)
        if heading is None or heading in analysis.noise:
            continue
        if any(root is heading or _is_inside(heading, root) for root in roots):
            return roots
        text = " ".join("".join(heading.itertext()).split()).casefold()
        if len(text) >= _MIN_HEADING_CHARS and text in title.casefold():
            return [heading, *roots]
    return roots


def _has_h1(root: _Element, analysis: _Analysis) -> bool:
    stat = analysis.stats.get(root)
    return root.tag == "h1" or (stat is not None and bool(stat.flags & _HAS_H1))


_MIN_HEADING_CHARS: Final = 4


# -- rendering -----------------------------------------------------------------------------

_OUTPUT_SLACK: Final = 64 * 1024
_MAX_NESTING: Final = 8  # quote and list levels shown
_HEADING_LEVELS: Final = {f"h{level}": level for level in range(1, 7)}
_STRONG_TAGS: Final = frozenset({"strong", "b"})
_EMPHASIS_TAGS: Final = frozenset({"em", "i"})
_CODE_TAGS: Final = frozenset({"code", "kbd", "samp", "tt"})
_LIST_TAGS: Final = frozenset({"ul", "ol", "menu", "dir"})
_SPECIAL_BLOCKS: Final = frozenset(
    {*_HEADING_LEVELS, "pre", "li", "blockquote", "hr", "table", "tr", "td", "th", "caption"}
    | _LIST_TAGS
)
_PLAIN_BLOCKS: Final = _BLOCK_TAGS - _SPECIAL_BLOCKS - {"br"}
_HANDLED_TAGS: Final = _SPECIAL_BLOCKS | _STRONG_TAGS | _EMPHASIS_TAGS | _CODE_TAGS | {"a", "br"}
_CLEANABLE_TAGS: Final = frozenset(
    {"div", "section", "ul", "ol", "dl", "table", "form", "aside", "header", "footer", "figure"}
)
_MAX_EMPHASIS: Final = 2  # nested emphasis beyond this is plain text
_MAX_COLUMNS: Final = 32
_MOSTLY_LINKS: Final = 0.5
_LINK_TEXT_LEFT: Final = 200  # ...with less unlinked text than this
_CHROME_LINK_DENSITY: Final = 0.2
_LANGUAGE: Final = re.compile(
    r"(?:^|\s)(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]{1,32})"
)
_NO_LANGUAGE: Final = frozenset({"default", "none", "text", "plaintext", "nohighlight"})
_BACKTICKS: Final = re.compile(r"`+")
_SPACES: Final = re.compile(r" {2,}")
_SPACES_AT_BREAK: Final = re.compile(r" *\n *")
_PRE_BREAKS: Final = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_NUMBER: Final = re.compile(r"\s*(-?\d{1,9})\s*")


_Closer = Callable[[], None]


@dataclass(slots=True)
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""


class _Markdown:
    """Renders chosen elements as Markdown in one iterative walk each."""

    def __init__(self, analysis: _Analysis, base: str, budget: int) -> None:
        self._analysis = analysis
        self._base = base
        self._budget = budget
        self._urls: dict[str, str | None] = {}
        self._lines: list[str] = []
        self._inline: list[str] = []
        self._generation = 0  # counts flushes: a wrapper spanning one is not applied
        self._inline_only = 0  # inside a heading, link or table cell: blocks become spaces
        self._raw = 0  # inside inline code: no Markdown inside
        self._pre = 0
        self._links = 0
        self._emphasis = 0
        self._prefix: list[str] = []
        self._marker: tuple[int, str] | None = None  # list marker for the next line
        self._lists: list[list[int]] = []  # [ordered, next number]
        self._last_was_item = False
        self._last_prefix = ""
        self._table: _Table | None = None
        self._size = 0
        self.partial = False
        self.removed = 0

    # walk

    def render(self, roots: list[_Element]) -> str:
        for root in roots:
            if not self._render_one(root):
                self.partial = True
                break
        self._flush()
        return "\n".join(self._lines)

    def _render_one(self, root: _Element) -> bool:
        closers: list[_Closer | None] = []
        walker = etree.iterwalk(root, events=("start", "end"))
        for event, element in walker:
            if event == "start":
                if self._size > self._budget:
                    return False
                tag = element.tag
                if element is not root and self._skipped(element, tag):
                    walker.skip_subtree()
                    closers.append(None)
                    continue
                closers.append(self._enter(element, tag))
                if text := element.text:
                    self._text(text)
                continue
            closer = closers.pop()
            if closer is not None:
                closer()
            if element is not root and (tail := element.tail):
                self._text(tail)
        return True

    def _skipped(self, element: _Element, tag: str) -> bool:
        analysis = self._analysis
        if element in analysis.noise:
            return True
        if tag not in _CLEANABLE_TAGS:
            return False
        stat = analysis.stats.get(element)
        return stat is None or _is_clutter(element, stat)

    # text

    def _text(self, text: str) -> None:
        if self._pre:
            piece = _PRE_BREAKS.sub("\n", text)
        elif text.isspace():
            if not self._inline:
                return  # indentation at the start of a block: nothing to keep
            piece = " "
        else:
            if not text.isascii() and _may_hold_invisible(text):
                text, removed = remove_invisible(text)
                self.removed += removed
                if not text.strip():
                    return
            piece = " ".join(text.split())
            if text[0].isspace():
                piece = " " + piece
            if text[-1].isspace():
                piece += " "
        self._inline.append(piece)
        self._size += len(piece)

    def _append(self, piece: str) -> None:
        self._inline.append(piece)
        self._size += len(piece)

    def _take(self, start: int) -> tuple[str, str, str]:
        """Remove the inline pieces from `start`; return leading space, text, trailing space."""
        joined = "".join(self._inline[start:])
        del self._inline[start:]
        core = _SPACES.sub(" ", joined.strip())
        lead = " " if joined[:1].isspace() else ""
        trail = " " if joined[-1:].isspace() and core else ""
        return lead, core, trail

    # blocks

    def _boundary(self) -> None:
        if self._inline_only:
            self._append(" ")
        elif self._inline:
            self._flush()
        else:
            self._generation += 1

    def _flush(self) -> None:
        self._generation += 1
        if not self._inline:
            return
        text = "".join(self._inline)
        self._inline.clear()
        if "  " in text:
            text = _SPACES.sub(" ", text)
        if "\n" in text:
            text = _SPACES_AT_BREAK.sub("\n", text).strip()
            if text:
                self._emit(text.split("\n"))
        elif text := text.strip():
            self._emit([text])

    def _emit(self, lines: list[str]) -> None:
        prefix = "".join(self._prefix)
        first = prefix
        is_item = self._marker is not None
        if self._marker is not None:
            index, marker = self._marker
            first = "".join(self._prefix[:index]) + marker + "".join(self._prefix[index + 1 :])
            self._marker = None
        if self._lines and not (is_item and self._last_was_item):
            # The blank line belongs to the containers both blocks share.
            shared = (
                prefix if prefix == self._last_prefix else _common_prefix(prefix, self._last_prefix)
            )
            self._lines.append(shared.rstrip())
        self._lines.append(first + lines[0])
        self._lines.extend(prefix + line if line else prefix.rstrip() for line in lines[1:])
        self._last_was_item = is_item
        self._last_prefix = prefix
        self._size += len(prefix) * len(lines)

    def _push_prefix(self, piece: str) -> bool:
        if len(self._prefix) >= _MAX_NESTING:
            return False
        self._prefix.append(piece)
        return True

    # elements

    def _enter(self, element: _Element, tag: str) -> _Closer | None:
        if self._pre:
            if tag == "br":
                self._append("\n")
            return None
        if tag in _PLAIN_BLOCKS:  # the common cases first: p, div, section, ...
            self._boundary()
            return self._boundary
        if tag not in _HANDLED_TAGS:
            return None  # span, font, sup and the like: their text only
        if tag in _HEADING_LEVELS:
            return self._heading(_HEADING_LEVELS[tag])
        if tag == "a":
            return self._link(element.get("href"))
        if tag in _STRONG_TAGS:
            return self._wrap("**")
        if tag in _EMPHASIS_TAGS:
            return self._wrap("*")
        if tag in _CODE_TAGS:
            return self._code()
        if tag == "br":
            self._append(" " if self._inline_only else "\n")
            return None
        return self._enter_block(element, tag)

    def _enter_block(self, element: _Element, tag: str) -> _Closer | None:
        if tag == "pre":
            return self._code() if self._inline_only else self._preformatted(element)
        if tag in _LIST_TAGS:
            return self._list(element, ordered=tag == "ol")
        if tag == "li":
            return self._item()
        if tag == "blockquote":
            return self._quote()
        if tag == "hr":
            self._boundary()
            if not self._inline_only:
                self._emit(["---"])
            return None
        if tag == "table" or (self._table is not None and tag in ("tr", "td", "th", "caption")):
            return self._table_part(element, tag)
        if tag in _BLOCK_TAGS:
            self._boundary()
            return self._boundary
        return None

    def _heading(self, level: int) -> _Closer | None:
        self._boundary()
        if self._inline_only:
            return self._boundary
        self._inline_only += 1

        def close() -> None:
            self._inline_only -= 1
            _, text, _ = self._take(0)
            if text:
                self._emit(["#" * level + " " + text])
            self._generation += 1

        return close

    def _link(self, href: str | None) -> _Closer | None:
        if self._links or self._raw:
            return None
        url = self._url(href)
        if url is None:
            return None
        start = len(self._inline)
        self._links += 1
        self._inline_only += 1

        def close() -> None:
            self._links -= 1
            self._inline_only -= 1
            lead, text, trail = self._take(start)
            if text:
                label = text.replace("[", "\\[").replace("]", "\\]")
                self._append(f"{lead}[{label}]({url}){trail}")
            elif lead:
                self._append(" ")

        return close

    def _url(self, href: str | None) -> str | None:
        if href is None:
            return None
        if href not in self._urls:
            self._urls[href] = _resolve(self._base, href)
        return self._urls[href]

    def _wrap(self, marker: str) -> _Closer | None:
        if self._raw or self._emphasis >= _MAX_EMPHASIS:
            return None
        start, generation = len(self._inline), self._generation
        self._emphasis += 1

        def close() -> None:
            self._emphasis -= 1
            if generation != self._generation or start > len(self._inline):
                return  # a block boundary came in between
            lead, text, trail = self._take(start)
            if text:
                self._append(f"{lead}{marker}{text}{marker}{trail}")
            elif lead:
                self._append(" ")

        return close

    def _code(self) -> _Closer | None:
        if self._raw:
            return None
        start = len(self._inline)
        self._raw += 1
        self._inline_only += 1  # a block inside inline code becomes a space

        def close() -> None:
            self._raw -= 1
            self._inline_only -= 1
            lead, text, trail = self._take(start)
            if text:
                fence = "`" * (_longest_run(text) + 1)
                pad = " " if text.startswith("`") or text.endswith("`") else ""
                self._append(f"{lead}{fence}{pad}{text}{pad}{fence}{trail}")

        return close

    def _preformatted(self, element: _Element) -> _Closer:
        self._flush()
        self._pre += 1
        language = _language(element)

        def close() -> None:
            self._pre -= 1
            text = "".join(self._inline)
            self._inline.clear()
            text = "\n".join(line.rstrip() for line in text.split("\n"))
            text = text.removeprefix("\n").rstrip("\n")  # HTML drops the first newline
            if text.strip():
                fence = "`" * max(3, _longest_run(text) + 1)
                self._emit([fence + language, *text.split("\n"), fence])
            self._generation += 1

        return close

    def _list(self, element: _Element, *, ordered: bool) -> _Closer:
        self._boundary()
        start = _NUMBER.fullmatch(element.get("start") or "")
        self._lists.append([int(ordered), int(start.group(1)) if start else 1])

        def close() -> None:
            self._lists.pop()
            self._boundary()
            if not self._lists:
                self._last_was_item = False  # the next list is a new list

        return close

    def _item(self) -> _Closer:
        self._boundary()
        if self._inline_only:
            return self._boundary
        marker = "- "
        if self._lists and self._lists[-1][0]:
            marker = f"{self._lists[-1][1]}. "
            self._lists[-1][1] += 1
        pushed = self._push_prefix(" " * len(marker))
        if pushed:
            self._marker = (len(self._prefix) - 1, marker)

        def close() -> None:
            self._flush()
            if pushed:
                self._prefix.pop()
                self._marker = None

        return close

    def _quote(self) -> _Closer:
        self._boundary()
        if self._inline_only:
            return self._boundary
        pushed = self._push_prefix("> ")

        def close() -> None:
            self._flush()
            if pushed:
                self._prefix.pop()

        return close

    # tables

    def _table_part(self, element: _Element, tag: str) -> _Closer | None:
        table = self._table
        if tag == "table":
            stat = self._analysis.stats.get(element)
            nested = stat is None or bool(stat.flags & _HAS_TABLE)
            self._boundary()
            if table is not None or self._inline_only or nested:
                return self._boundary  # a layout table: its cells are blocks
            self._table = _Table()
            return self._close_table
        if table is None:  # pragma: no cover - guarded by _enter_block
            return None
        if tag == "tr":
            table.rows.append([])
            return None
        return self._cell(table, caption=tag == "caption")

    def _cell(self, table: _Table, *, caption: bool) -> _Closer:
        start = len(self._inline)
        self._inline_only += 1

        def close() -> None:
            self._inline_only -= 1
            _, text, _ = self._take(start)
            text = text.replace("\n", " ").replace("|", "\\|")
            if caption:
                table.caption = text
                return
            if not table.rows:
                table.rows.append([])
            table.rows[-1].append(text)

        return close

    def _close_table(self) -> None:
        table = self._table
        self._table = None
        self._flush()  # text that stood between the cells
        if table is None:  # pragma: no cover - set by _table_part
            return
        rows = [row[:_MAX_COLUMNS] for row in table.rows if any(row)]
        if table.caption:
            self._emit([table.caption])
        columns = max((len(row) for row in rows), default=0)
        if len(rows) >= 2 and columns >= 2:
            self._emit(_pipe_table(rows, columns))
        else:
            for row in rows:
                for cell in row:
                    if cell:
                        self._emit([cell])
        self._generation += 1


def _common_prefix(first: str, second: str) -> str:
    size = 0
    for left, right in zip(first, second, strict=False):
        if left != right:
            break
        size += 1
    return first[:size]


def _pipe_table(rows: list[list[str]], columns: int) -> list[str]:
    padded = [row + [""] * (columns - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * columns]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return lines


def _is_clutter(element: _Element, stat: _Stat) -> bool:
    """Link lists, form wrappers and named chrome inside the chosen content."""
    if stat.flags & (_HAS_LANDMARK | _HAS_H1):
        return False  # never the block that holds the article or the page heading
    density = stat.link_density
    if density > _MOSTLY_LINKS and stat.chars - stat.link_chars < _LINK_TEXT_LEFT:
        return True
    if stat.flags & _HAS_FORM and stat.chars < _LINK_TEXT_LEFT and stat.paragraphs <= 1:
        return True  # the wrapper of a form: a heading and a line of small print
    if _name_weight(element) < 0:
        return density > _CHROME_LINK_DENSITY or stat.paragraphs == 0
    return False


def _language(element: _Element) -> str:
    """The language named by a `language-x` class on the `pre`, its `code` or two wrappers."""
    parent = element.getparent()
    wrappers = (parent, None if parent is None else parent.getparent())
    for candidate in (element, element.find("code"), *wrappers):
        if candidate is None:
            continue
        match = _LANGUAGE.search(candidate.get("class") or "")
        if match and match.group(1).lower() not in _NO_LANGUAGE:
            return match.group(1)
    return ""


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
