"""Main-content extraction: HTML, plain text and Markdown to clean Markdown.

The pure stages of the page pipeline after decoding (REQ-PAGE-001). This
module is the package's face: `extract_html`, `extract_text`, `Extracted` and
`ExtractionFailed`; each function holds no state and can run in any thread
(REQ-PAGE-008 runs them off the event loop). An HTML page goes through:

1. `rypsok.core.fetch.parse`: bounded parsing (LIM-F10 nodes, LIM-F11 depth,
   enforced while lxml parses, REQ-PAGE-006, REQ-SEC-014);
2. `visibility`: what a browser would not render, removed by the CSS engine
   of `rypsok.core.fetch.css_visibility` (REQ-CTX-005);
3. `noise`: one pass that drops chrome and measures the rest;
4. `content`: which elements hold the main content (REQ-FETCH-002,
   REQ-PAGE-002);
5. `markdown`: rendering (REQ-FETCH-004), bounded in output size;
6. `cleaning`: invisible characters out (REQ-SEC-015).

`passthrough` handles text/plain and text/markdown bodies. The reasons
behind each rule, the measured quality against trafilatura and the speed
figures are in docs/extraction.md.
"""

from __future__ import annotations

from rypsok.core import limits
from rypsok.core.fetch.extract.cleaning import clean
from rypsok.core.fetch.extract.content import choose, with_heading
from rypsok.core.fetch.extract.markdown import OUTPUT_SLACK, Markdown
from rypsok.core.fetch.extract.model import (
    NO_CONTENT,
    UNPARSEABLE,
    Extracted,
    ExtractionFailed,
    HtmlElement,
)
from rypsok.core.fetch.extract.noise import analyse
from rypsok.core.fetch.extract.page import base_url_of, body_of, title_of
from rypsok.core.fetch.extract.passthrough import extract_text
from rypsok.core.fetch.extract.visibility import remove_hidden
from rypsok.core.fetch.parse import Unparseable, parse_bounded

__all__ = [
    "NO_CONTENT",
    "UNPARSEABLE",
    "Extracted",
    "ExtractionFailed",
    "HtmlElement",
    "extract_html",
    "extract_text",
]


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
    hidden = remove_hidden(tree.root)  # before anything is measured or scored
    body = body_of(tree.root)
    analysis = analyse(body)
    title, title_removed = title_of(tree.root)
    base = base_url_of(tree.root, base_url)
    budget = 2 * len(html) + OUTPUT_SLACK
    renderer = Markdown(analysis, base, budget)
    markdown = renderer.render(with_heading(choose(analysis, body), analysis, title))
    if not markdown.strip() and body not in analysis.noise:
        renderer = Markdown(analysis, base, budget)
        markdown = renderer.render([body])
    markdown, removed = clean(markdown)
    markdown = markdown.strip()
    if not markdown:
        raise ExtractionFailed(NO_CONTENT)
    chars = hidden.chars_removed + analysis.hidden_chars
    return Extracted(
        markdown=markdown,
        title=title,
        partial=tree.partial or renderer.partial,
        invisible_removed=tree.controls_removed + renderer.removed + removed + title_removed,
        # No notice for hidden elements without text (an empty hidden span).
        hidden_removed=hidden.elements_removed + analysis.hidden_elements if chars else 0,
        hidden_chars=chars,
        hidden_check_partial=hidden.sheets_truncated,
    )
