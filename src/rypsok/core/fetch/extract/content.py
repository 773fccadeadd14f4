"""Content choice: which elements hold the page's main content (REQ-FETCH-002, REQ-PAGE-002).

Decided from the measures of the noise pass, without a second walk of the
tree: the page's own landmarks first (`<main>`, then the dominant
`<article>`), because an author who marks the content knows best; else the
best readability-style candidate, promoted to the ancestor of a thread of
near-equal candidates, with its well-scoring siblings; and the page heading
is put first when the content lacks it.
"""

from __future__ import annotations

from typing import Final

from rypsok.core.fetch.extract.model import HtmlElement
from rypsok.core.fetch.extract.noise import (
    HAS_H1,
    MIN_PARAGRAPH_CHARS,
    TAG_SCORE,
    Analysis,
    Stat,
    name_weight,
)

_MIN_CONTENT_CHARS: Final = 50  # a landmark with less is taken as empty
_ARTICLE_SHARE_OF_MAIN: Final = 0.5
_ARTICLE_SHARE_OF_ARTICLES: Final = 0.6
_NEAR_TOP: Final = 0.75  # an alternative candidate scores this share of the top
_ALTERNATIVES: Final = 5
_ALTERNATIVES_TO_PROMOTE: Final = 3
_WIDEN_LEVELS: Final = 6
_WIDEN_MIN_PARAGRAPHS: Final = 3
_WIDEN_PARAGRAPH_FACTOR: Final = 1.5
_WIDEN_LINK_DENSITY: Final = 0.2
_WIDEN_PROSE_SHARE: Final = 0.8
_SIBLING_SHARE: Final = 0.2
_SIBLING_MIN_SCORE: Final = 10.0
_SIBLING_PARAGRAPH_CHARS: Final = 80
_SIBLING_PARAGRAPH_DENSITY: Final = 0.25


def choose(analysis: Analysis, body: HtmlElement) -> list[HtmlElement]:
    """The elements that hold the main content, in document order."""
    live = [stat for stat in analysis.mains if stat.element not in analysis.noise]
    main = next((stat for stat in live if stat.chars >= _MIN_CONTENT_CHARS), None)
    articles = [stat for stat in analysis.articles if stat.element not in analysis.noise]
    if main is not None:
        inside = [stat for stat in articles if is_inside(stat.element, main.element)]
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


def is_inside(element: HtmlElement, container: HtmlElement) -> bool:
    return any(ancestor is container for ancestor in element.iterancestors())


def _final_score(stat: Stat) -> float:
    element = stat.element
    base = TAG_SCORE.get(element.tag, 0) + name_weight(element)
    return (stat.score + base) * (1.0 - stat.link_density)


def _top_candidate(analysis: Analysis) -> Stat | None:
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
    return _widen(_promote(top, near, analysis), analysis)


def _widen(top: Stat, analysis: Analysis) -> Stat:
    """An ancestor that adds much more prose of the same kind: an article split in parts.

    Templates cut one article into sections, each in its own wrappers, and
    the best-scored part is then only one of them. An ancestor a few levels
    up is taken when it holds half again as many paragraphs and what it adds
    is prose (few links), not a list of teasers.
    """
    best = top
    for level, ancestor in enumerate(top.element.iterancestors()):
        if level >= _WIDEN_LEVELS or ancestor.tag in ("body", "html"):
            break
        stat = analysis.stats.get(ancestor)
        if stat is None or ancestor in analysis.noise:
            break
        added_chars = stat.chars - best.chars
        added_paragraphs = stat.paragraphs - best.paragraphs
        if added_paragraphs < _WIDEN_MIN_PARAGRAPHS or added_chars <= 0:
            continue
        added_density = (stat.link_chars - best.link_chars) / added_chars
        added_prose = (stat.paragraph_chars - best.paragraph_chars) / added_chars
        if (
            stat.paragraphs >= _WIDEN_PARAGRAPH_FACTOR * best.paragraphs
            and added_density <= _WIDEN_LINK_DENSITY
            and added_prose >= _WIDEN_PROSE_SHARE
        ):
            best = stat
    return best


def _promote(top: Stat, near: list[Stat], analysis: Analysis) -> Stat:
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


def _with_siblings(top: Stat, analysis: Analysis) -> list[HtmlElement]:
    parent = top.element.getparent()
    if parent is None or top.element.tag == "body":
        return [top.element]
    threshold = max(_SIBLING_MIN_SCORE, top.score * _SIBLING_SHARE)
    chosen: list[HtmlElement] = []
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


def _is_loose_paragraph(stat: Stat) -> bool:
    if stat.element.tag != "p":
        return False
    density = stat.link_density
    if stat.chars >= _SIBLING_PARAGRAPH_CHARS:
        return density < _SIBLING_PARAGRAPH_DENSITY
    return stat.chars >= MIN_PARAGRAPH_CHARS and density == 0


def with_heading(
    roots: list[HtmlElement], analysis: Analysis, title: str | None
) -> list[HtmlElement]:
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
        if any(root is heading or is_inside(heading, root) for root in roots):
            return roots
        text = " ".join("".join(heading.itertext()).split()).casefold()
        if len(text) >= _MIN_HEADING_CHARS and text in title.casefold():
            return [heading, *roots]
    return roots


def _has_h1(root: HtmlElement, analysis: Analysis) -> bool:
    stat = analysis.stats.get(root)
    return root.tag == "h1" or (stat is not None and bool(stat.flags & HAS_H1))


_MIN_HEADING_CHARS: Final = 4
