"""Noise and measures: one pass that drops what is not content and measures the rest.

Decides, per element, whether it is noise (not rendered, or site chrome:
`nav`, roles like navigation and search, `header`/`footer`/`aside` outside an
article, main or section, blocks named for cookies, consent, newsletters,
share bars, related links, ads and the like unless they hold real content),
and measures what remains (characters, link characters, commas, paragraphs,
flags about ancestors and descendants) so that content choice and rendering
need no second walk. Paragraph scores (readability style) are given to three
ancestors in the same pass. Inside the chosen content, link lists, form
wrappers and chrome-named blocks without paragraphs are clutter.

Cost: each element is visited once and a plain inline element shares its
parent's measure, so the pass is linear in the parsed document.
"""

from __future__ import annotations

import enum
import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from lxml import etree  # type: ignore[import-untyped]

from rypsok.core.fetch.extract.model import HtmlElement
from rypsok.core.fetch.extract.visibility import hidden_by_class
from rypsok.core.fetch.parse import CANCEL_CHECK_INTERVAL, check_cancelled

_SKIPPED_TAGS: Final = frozenset(
    {"head", "title", "script", "style", "noscript", "template", "link", "meta", "base"}
    | {"nav", "button", "input", "select", "option", "optgroup", "textarea", "datalist"}
    | {"iframe", "frame", "frameset", "noframes", "object", "embed", "applet", "param"}
    | {"canvas", "svg", "video", "audio", "map"}
    | {"area", "rt", "rp", "annotation", "annotation-xml", "slot"}
)
_SECTION_CHROME: Final = frozenset({"header", "footer", "aside"})
_CHROME_ROLES: Final = frozenset(
    {"navigation", "search", "menu", "menubar", "toolbar", "dialog", "alertdialog", "tooltip"}
)
_SECTION_CHROME_ROLES: Final = frozenset({"banner", "contentinfo", "complementary"})

# Class/id words (substring match, readability style).
# Names are matched as whole words of the class and id, never as substrings:
# "share" is a word of "share-bar" and "social_share" but not of "sharepoint",
# and "related" is not in "unrelated" (REQ-FETCH-002: documentation generators
# derive ids from headings, so a name alone must not drop a section). Words
# are split at whitespace, "-", "_" and a lower-to-upper case change; a
# trailing "s" is ignored, so "comments" is "comment".
_NEGATIVE_WORDS: Final = frozenset(
    {"banner", "combx", "comment", "contact", "footer", "foot", "masthead", "meta", "outbrain"}
    | {"taboola", "promo", "related", "scroll", "share", "sharing", "shoutbox", "sidebar"}
    | {"skyscraper", "sponsor", "sponsored", "shopping", "tag", "tool", "toolbar", "widget"}
    | {"nav", "navbar", "navigation", "menu", "breadcrumb", "cookie", "consent", "newsletter"}
    | {"social", "subscribe", "subscription", "popup", "modal", "rail", "pagination", "pager"}
    | {"sidenav", "toc", "footnav", "byline", "author", "bio", "ad", "advert", "recommended"}
)
_POSITIVE_WORDS: Final = frozenset(
    {"article", "body", "content", "entry", "hentry", "main", "page", "post", "text", "blog"}
    | {"story", "prose", "markdown", "rst", "document", "documentation"}
)
# Chrome that is dropped unless it turns out to hold real content (paragraphs,
# an article, the page heading, or a heading with paragraphs of its own).
_CHROME_WORDS: Final = frozenset(
    {"cookie", "consent", "gdpr", "newsletter", "subscribe", "signup", "advert", "adsense"}
    | {"sponsor", "sponsored", "outbrain", "taboola", "popup", "modal", "breadcrumb"}
    | {"skiplink", "share", "sharing", "social", "related", "recommend", "recommended"}
    | {"promo", "banner", "donate", "donation", "fundraising", "sitenotice", "editsection"}
    | {"editlink", "ad", "ads", "advertisement", "comment", "disqus", "paywall", "subscription"}
    | {"bio", "authorbio", "biography", "avatar", "hovercard", "outstream", "taboola"}
)
# Names often written as one word with a common part: "relatedposts", "sharebar".
_COMPOUND_HEADS: Final = (
    "related",
    "share",
    "social",
    "comment",
    "newsletter",
    "subscribe",
    "cookie",
    "consent",
    "breadcrumb",
    "sidebar",
    "nav",
    "menu",
    "footer",
    "promo",
    "sponsor",
    "advert",
    "banner",
)
_COMPOUND_PARTS: Final = frozenset(
    {"post", "article", "link", "story", "storie", "item", "box", "bar", "button", "widget"}
    | {"container", "wrapper", "wrap", "section", "block", "list", "area", "module", "tool"}
    | {"icon", "panel", "content", "read", "news", "entry", "form", "signup", "notice"}
)
_COMPOUND_MODIFIERS: Final = frozenset(
    {"top", "bottom", "main", "site", "page", "post", "article", "side", "global", "sub"}
    | {"mobile", "primary", "secondary", "footer", "header", "social", "jp", "wp"}
)
_MIN_COMPOUND_CHARS: Final = 6
# One regex (in C) instead of a loop over the names for each word of each class.
_COMPOUND: Final = re.compile(
    "(?:({heads})(?:{parts})s?)|(?:(?:{modifiers})({heads}))".format(
        heads="|".join(_COMPOUND_HEADS),
        parts="|".join(sorted(_COMPOUND_PARTS, key=len, reverse=True)),
        modifiers="|".join(sorted(_COMPOUND_MODIFIERS, key=len, reverse=True)),
    )
)
_WORD: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_NAME_WEIGHT: Final = 25

BLOCK_TAGS: Final = frozenset(
    {"address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog"}
    | {"dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1"}
    | {"h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "li", "main", "menu", "nav"}
    | {"ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead"}
    | {"tr", "ul", "caption", "legend", "br"}
)
_PARAGRAPH_TAGS: Final = frozenset({"p", "pre", "td", "blockquote"})
TAG_SCORE: Final = {
    "div": 5,
    "pre": 3,
    "td": 3,
    "blockquote": 3,
    **dict.fromkeys(("address", "ol", "ul", "dl", "dd", "dt", "li", "form"), -3),
    **dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6", "th"), -5),
}
MIN_PARAGRAPH_CHARS: Final = 25
_SCORE_DIVIDERS: Final = (1.0, 2.0, 6.0)  # parent, grandparent, great-grandparent
_WIDE_COMMAS: Final = ("、", "，", "،")  # CJK and Arabic commas count too


class Flag(enum.IntFlag):
    """What one element's measure knows about its ancestors and its subtree."""

    # Inherited from ancestors.
    IN_CONTENT = 1  # inside article/main/section: header, footer, aside are its own
    IN_ARTICLE = 2
    IN_MAIN = 4
    # Gathered from descendants.
    HAS_BLOCK = 8
    HAS_TABLE = 16
    HAS_H1 = 32
    HAS_LANDMARK = 64  # an article or main inside
    HAS_FORM = 128  # a form inside, kept or not
    # The element's own: chrome by name, or a form; dropped at its end unless content-rich.
    CONDITIONAL = 256
    HAS_HEADING = 512  # an h2-h6 inside: with paragraphs, a section of its own
    HAS_MAIN = 1024  # a main landmark inside
    # The element's own: its class (not only its id) names chrome.
    CLASS_CHROME = 2048
    # Gathered: a list, code block, quote or heading inside (a table cell cannot hold it).
    HAS_STRUCTURE = 4096


# The pass combines flags several times per element, and an IntFlag operator
# costs about thirty times an int operator in CPython 3.11 (measured: 6 us
# against 0.2 us), so measures hold the plain int values named here.
IN_CONTENT: Final = int(Flag.IN_CONTENT)
IN_ARTICLE: Final = int(Flag.IN_ARTICLE)
IN_MAIN: Final = int(Flag.IN_MAIN)
INHERITED: Final = int(Flag.IN_CONTENT | Flag.IN_ARTICLE | Flag.IN_MAIN)
HAS_BLOCK: Final = int(Flag.HAS_BLOCK)
HAS_TABLE: Final = int(Flag.HAS_TABLE)
HAS_H1: Final = int(Flag.HAS_H1)
HAS_LANDMARK: Final = int(Flag.HAS_LANDMARK)
HAS_FORM: Final = int(Flag.HAS_FORM)
GATHERED: Final = int(
    Flag.HAS_BLOCK
    | Flag.HAS_TABLE
    | Flag.HAS_H1
    | Flag.HAS_LANDMARK
    | Flag.HAS_FORM
    | Flag.HAS_HEADING
    | Flag.HAS_MAIN
    | Flag.HAS_STRUCTURE
)
CONDITIONAL: Final = int(Flag.CONDITIONAL)
HAS_HEADING: Final = int(Flag.HAS_HEADING)
HAS_MAIN: Final = int(Flag.HAS_MAIN)
CLASS_CHROME: Final = int(Flag.CLASS_CHROME)
HAS_STRUCTURE: Final = int(Flag.HAS_STRUCTURE)
_CONTENT_RICH_PARAGRAPHS: Final = 3
_SECTION_LINK_DENSITY: Final = 0.3
_HEADING_TAGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_STRUCTURE_TAGS: Final = _HEADING_TAGS | {"ul", "ol", "dl", "pre", "blockquote"}
_NOISE_CANDIDATE_TAGS: Final = _SKIPPED_TAGS | _SECTION_CHROME | {"dialog"}
_NOTED_TAGS: Final = frozenset({"article", "h1", "h2"})
# Inline elements without attributes of interest share their parent's measure.
_INLINE_TAGS: Final = frozenset(
    {"a", "b", "strong", "i", "em", "span", "code", "small", "sup", "sub", "abbr", "cite"}
    | {"time", "font", "br", "wbr", "kbd", "samp", "var", "s", "u", "q", "mark", "tt"}
    | {"big", "strike", "del", "ins", "dfn", "bdi", "bdo", "data", "nobr", "ruby", "rb"}
    | {"img", "picture", "source", "track"}  # libxml2 may nest content in a void source
)


class Stat:
    """Measures of one element's rendered subtree."""

    __slots__ = (
        "chars",
        "commas",
        "element",
        "flags",
        "link_chars",
        "paragraph_chars",
        "paragraphs",
        "score",
        "tag",
    )

    def __init__(self, element: HtmlElement, tag: str, flags: int) -> None:
        self.element = element
        self.tag = tag
        self.flags = flags
        self.chars = 0
        self.link_chars = 0
        self.commas = 0
        self.paragraphs = 0
        self.paragraph_chars = 0  # text inside paragraphs of 25+ characters
        self.score = 0.0

    def add_text(self, text: str) -> None:
        if text.isspace():
            return
        self.chars += len(text.strip())
        self.commas += text.count(",")
        if not text.isascii():
            for comma in _WIDE_COMMAS:  # a loop, not sum() of a generator: no frame per text
                self.commas += text.count(comma)

    @property
    def link_density(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0


@dataclass(slots=True)
class Analysis:
    noise: set[HtmlElement] = field(default_factory=set)
    stats: dict[HtmlElement, Stat] = field(default_factory=dict)
    scored: list[Stat] = field(default_factory=list)
    mains: list[Stat] = field(default_factory=list)
    articles: list[Stat] = field(default_factory=list)
    headings: dict[str, HtmlElement] = field(default_factory=dict)  # first h1 and h2
    hidden_elements: int = 0  # dropped as not rendered (REQ-CTX-005), for the notice
    hidden_chars: int = 0  # their text


def analyse(body: HtmlElement) -> Analysis:
    """Noise verdicts, text measures and paragraph scores in one iterative pass.

    The stack holds one measure per open element; a plain inline element
    (a link, emphasis, a span) shares its parent's measure instead of having
    its own, which halves the cost of text-heavy pages. A link records how
    much text its parent had when it opened, to count link text.
    """
    analysis = Analysis()
    noise = analysis.noise
    stack: list[Stat] = []
    links: list[tuple[HtmlElement, Stat, int]] = []
    walker = etree.iterwalk(body, events=("start", "end"))
    opened = 0
    for event, element in walker:
        if event == "start":
            opened += 1
            if not opened % CANCEL_CHECK_INTERVAL:
                check_cancelled()  # an abandoned extraction stops here (REQ-PAGE-008)
            stat = _open(element, stack, analysis, links)
            if stat is None:
                noise.add(element)
                walker.skip_subtree()
                continue
            stack.append(stat)
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
    element: HtmlElement, stack: list[Stat], links: list[tuple[HtmlElement, Stat, int]]
) -> None:
    stat = stack.pop()
    if links and links[-1][0] is element:
        _, _, chars_before = links.pop()
        stat.link_chars += stat.chars - chars_before
    if tail := element.tail:
        stack[-1].add_text(tail)


def _open(
    element: HtmlElement,
    stack: list[Stat],
    analysis: Analysis,
    links: list[tuple[HtmlElement, Stat, int]],
) -> Stat | None:
    """The element's measure, or None when it is noise (the walk root never is).

    Only the attributes the rules read (class, role, id, href) are read, one
    `get` each: building the element's whole attribute list decoded every
    long value (styles, sources, data) that no rule reads.
    """
    tag = element.tag
    if not isinstance(tag, str):
        return None
    get = element.get
    if not stack:
        return _own_stat(element, tag, 0, classes=get("class"), role=get("role"), analysis=analysis)
    inherited = stack[-1].flags & INHERITED
    if tag in _NOISE_CANDIDATE_TAGS and _is_noise_tag(tag, element, inherited):
        return None
    classes = get("class")
    if classes is not None and _hidden_class(classes):
        analysis.hidden_elements += 1
        analysis.hidden_chars += _text_size(element)
        return None
    role = get("role")
    if role is not None and _chrome_role(role, inherited):
        return None
    if tag in _INLINE_TAGS:
        parent = stack[-1]
        return _inline(
            element, tag, parent, classes=classes, role=role, analysis=analysis, links=links
        )
    return _own_stat(element, tag, inherited, classes=classes, role=role, analysis=analysis)


def _inline(
    element: HtmlElement,
    tag: str,
    parent: Stat,
    *,
    classes: str | None,
    role: str | None,
    analysis: Analysis,
    links: list[tuple[HtmlElement, Stat, int]],
) -> Stat | None:
    """A plain inline element shares its parent's measure; one named as chrome has its own.

    A shared link is recorded in `links` with the characters its parent had
    when it opened, to count its text as link text.
    """
    if tag == "a" and _is_edit_link(element.get("href")):
        return None
    if tag == "img":
        return parent  # no text of its own; the alt text is the renderer's
    naming = _naming(element, classes)
    if naming:
        is_main = role is not None and _role_name(role) == "main"
        inherited = parent.flags & INHERITED
        return _new_stat(
            element, tag, inherited=inherited, naming=naming, is_main=is_main, analysis=analysis
        )
    if tag == "a":
        links.append((element, parent, parent.chars))
    return parent


def _own_stat(
    element: HtmlElement,
    tag: str,
    inherited: int,
    *,
    classes: str | None,
    role: str | None,
    analysis: Analysis,
) -> Stat | None:
    """The measure of a block (or of the walk root), None for an edit link."""
    if tag == "a" and _is_edit_link(element.get("href")):
        return None
    is_main = tag == "main" or (role is not None and _role_name(role) == "main")
    naming = 0 if tag in _HEADING_TAGS else _naming(element, classes)
    return _new_stat(
        element, tag, inherited=inherited, naming=naming, is_main=is_main, analysis=analysis
    )


def _new_stat(
    element: HtmlElement,
    tag: str,
    *,
    inherited: int,
    naming: int,
    is_main: bool,
    analysis: Analysis,
) -> Stat:
    flags = inherited | naming
    if is_main or tag in ("article", "section"):
        flags |= IN_CONTENT
    if tag == "form":
        flags |= CONDITIONAL
    stat = Stat(element, tag, flags)
    if is_main or tag in _NOTED_TAGS:
        _note(stat, is_main=is_main, inherited=inherited, analysis=analysis)
    analysis.stats[element] = stat
    return stat


def _note(stat: Stat, *, is_main: bool, inherited: int, analysis: Analysis) -> None:
    """Record the landmarks and headings that the choice of content looks at."""
    tag = stat.tag
    if is_main:
        stat.flags |= IN_MAIN
        analysis.mains.append(stat)
    elif tag == "article" and not inherited & IN_ARTICLE:
        stat.flags |= IN_ARTICLE
        analysis.articles.append(stat)
    elif tag in ("h1", "h2") and tag not in analysis.headings:
        analysis.headings[tag] = stat.element


def _close(element: HtmlElement, stack: list[Stat], analysis: Analysis) -> None:
    stat = stack.pop()
    tag = stat.tag
    if tag == "a":
        stat.link_chars = stat.chars
    if stat.chars >= MIN_PARAGRAPH_CHARS and (
        tag in _PARAGRAPH_TAGS or (tag == "div" and not stat.flags & HAS_BLOCK)
    ):
        stat.paragraphs += 1
        stat.paragraph_chars = stat.chars
        _score_ancestors(stat, stack, analysis)
    if not stack:
        return
    parent = stack[-1]
    if tag == "form":
        parent.flags |= HAS_FORM
    if stat.flags & CONDITIONAL and not _holds_content(stat):
        analysis.noise.add(element)
    else:
        _merge(parent, stat)
    if tail := element.tail:
        parent.add_text(tail)


def _holds_content(stat: Stat) -> bool:
    """Whether a block named or built like chrome turns out to be content.

    It holds the article or the page heading, or three paragraphs, or a
    heading with a paragraph of its own and few links: a section of a
    document whose id happens to contain "related" or "share".
    """
    flags = stat.flags
    if flags & CLASS_CHROME:
        return bool(flags & (HAS_MAIN | HAS_H1))
    if flags & (HAS_LANDMARK | HAS_H1) or stat.paragraphs >= _CONTENT_RICH_PARAGRAPHS:
        return True
    return _is_section(stat)


def _is_section(stat: Stat) -> bool:
    """A heading with a paragraph of its own and few links: a section of a document."""
    return (
        bool(stat.flags & HAS_HEADING)
        and stat.paragraphs >= 1
        and stat.link_density <= _SECTION_LINK_DENSITY
    )


def _merge(parent: Stat, child: Stat) -> None:
    parent.chars += child.chars
    parent.link_chars += child.link_chars
    parent.commas += child.commas
    parent.paragraphs += child.paragraphs
    parent.paragraph_chars += child.paragraph_chars
    parent.flags |= child.flags & GATHERED
    tag = child.tag
    if tag in BLOCK_TAGS:
        parent.flags |= HAS_BLOCK
        if tag in _STRUCTURE_TAGS:
            parent.flags |= HAS_STRUCTURE
    if tag == "table":
        parent.flags |= HAS_TABLE
    elif tag == "h1":
        parent.flags |= HAS_H1
    elif tag in _HEADING_TAGS:
        parent.flags |= HAS_HEADING
    if tag == "article":
        parent.flags |= HAS_LANDMARK
    elif child.flags & IN_MAIN and not parent.flags & IN_MAIN:
        parent.flags |= HAS_LANDMARK | HAS_MAIN


def _score_ancestors(paragraph: Stat, stack: list[Stat], analysis: Analysis) -> None:
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


def _is_noise_tag(tag: str, element: HtmlElement, inherited: int) -> bool:
    """Whether the tag alone makes the element noise: not rendered, or site chrome."""
    if tag in _SKIPPED_TAGS:
        return True
    if tag == "aside":
        # An aside in an article is its own (a pull quote, a note); elsewhere
        # in main it is a sidebar beside the article.
        return not inherited & (IN_ARTICLE if inherited & IN_MAIN else IN_CONTENT)
    if tag in _SECTION_CHROME:
        return not inherited & IN_CONTENT
    return tag == "dialog" and element.get("open") is None


def _text_size(element: HtmlElement) -> int:
    """Characters of text in a hidden subtree, for the notice (its own visit of the subtree)."""
    return sum(len(text.strip()) for text in element.itertext())


def _chrome_role(role: str, inherited: int) -> bool:
    """Whether the role makes the element site chrome (outside an article for some roles)."""
    name = _role_name(role)
    return name in _CHROME_ROLES or (name in _SECTION_CHROME_ROLES and not inherited & IN_CONTENT)


@functools.lru_cache(maxsize=1_024)
def _hidden_class(classes: str) -> bool:
    """`hidden_by_class` of an element whose class attribute is `classes`, cached per value.

    The utility-class rule reads the class attribute alone, so the verdict
    is one per class value (a page repeats a few hundred values).
    """
    return hidden_by_class({"class": classes})


def _is_edit_link(href: str | None) -> bool:
    """A link to the page's source editor ("Edit this page", "Edit on ...", a wiki's [edit])."""
    if not href:
        return False
    path, _, query = href.partition("?")
    return "/edit/" in path or "action=edit" in query or path.endswith("/edit")


def _role_name(role: str) -> str:
    return role.strip().lower() if role else ""


@functools.lru_cache(maxsize=8_192)
def _words(names: str) -> frozenset[str]:
    """The words of a class or id value, lower case, a trailing "s" dropped; cached per value.

    Two adjacent words also count joined ("sign-up" is "signup"), and a word
    written as a compound of a known name and a common part ("relatedposts",
    "sharebar", "topnav") counts as that name.
    """
    words = [word.lower() for word in _WORD.findall(names)]
    found = {_singular(word) for word in words}
    found.update(first + second for first, second in itertools.pairwise(words))
    for word in words:
        found.update(_compound_names(word))
    return frozenset(found)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _compound_names(word: str) -> Iterator[str]:
    if len(word) < _MIN_COMPOUND_CHARS:
        return
    if (match := _COMPOUND.fullmatch(word)) is not None:
        yield match.group(1) or match.group(2)


def _name_words(attributes: _HasGet) -> frozenset[str]:
    classes = attributes.get("class") or ""
    identifier = attributes.get("id") or ""
    if not classes and not identifier:
        return _NO_WORDS
    return _words(f"{classes} {identifier}")


_NO_WORDS: Final[frozenset[str]] = frozenset()


class _HasGet(Protocol):
    """An element or a mapping of its attributes: what `_naming` reads the id from."""

    def get(self, key: str, /) -> str | None: ...


def chrome_naming(attributes: Mapping[str, str]) -> int:
    """CONDITIONAL when a word of the id names chrome, with CLASS_CHROME when the class does.

    A class is chosen by the template's author for what the block is; an id
    is often the slug of a heading (Sphinx, MkDocs, GitHub), so it only makes
    the block conditional. A class that also says content ("post-content
    share-enabled") is conditional only.
    """
    return _naming(attributes, attributes.get("class"))


def _naming(element: _HasGet, classes: str | None) -> int:
    """`chrome_naming` of an element whose class is `classes`; its id is read only if needed."""
    if classes:
        naming = _class_naming(classes)
        if naming:
            return naming
    identifier = element.get("id")
    if identifier and not _CHROME_WORDS.isdisjoint(_words(identifier)):
        return CONDITIONAL
    return 0


@functools.lru_cache(maxsize=8_192)
def _class_naming(classes: str) -> int:
    """The flags a class value gives by its words, cached per value as the words are."""
    class_words = _words(classes)
    if _CHROME_WORDS.isdisjoint(class_words):
        return 0
    if _POSITIVE_WORDS.isdisjoint(class_words):
        return CONDITIONAL | CLASS_CHROME
    return CONDITIONAL


def name_weight(element: HtmlElement) -> int:
    words = _name_words(element)  # the element's own get: no attribute view to build
    if not words:
        return 0
    weight = 0
    if not _NEGATIVE_WORDS.isdisjoint(words):
        weight -= _NAME_WEIGHT
    if not _POSITIVE_WORDS.isdisjoint(words):
        weight += _NAME_WEIGHT
    return weight


# -- clutter inside the chosen content

CLEANABLE_TAGS: Final = frozenset(
    {"div", "section", "ul", "ol", "dl", "table", "form", "aside", "header", "footer", "figure"}
)
_LIST_TAGS: Final = frozenset({"ul", "ol", "dl"})
_MOSTLY_LINKS: Final = 0.5
_LINK_TEXT_LEFT: Final = 200  # ...with less unlinked text than this
_CHROME_LINK_DENSITY: Final = 0.2


def is_clutter(element: HtmlElement, stat: Stat, parent: Stat | None) -> bool:
    """Link lists, form wrappers and named chrome inside the chosen content.

    A list of links is clutter unless it belongs to a section with its own
    heading and prose (a "See also" list of a document).
    """
    if stat.flags & (HAS_LANDMARK | HAS_H1):
        return False  # never the block that holds the article or the page heading
    density = stat.link_density
    if density > _MOSTLY_LINKS and stat.chars - stat.link_chars < _LINK_TEXT_LEFT:
        return not (stat.tag in _LIST_TAGS and parent is not None and _is_section(parent))
    if stat.flags & HAS_FORM and stat.chars < _LINK_TEXT_LEFT and stat.paragraphs <= 1:
        return True  # the wrapper of a form: a heading and a line of small print
    if name_weight(element) < 0 and not _is_section(stat):
        return density > _CHROME_LINK_DENSITY or stat.paragraphs == 0
    return False
