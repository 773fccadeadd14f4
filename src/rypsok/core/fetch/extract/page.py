"""Page-level facts read once: the body, the title, the base URL and link resolution.

Links are kept only as absolute http(s) URLs of at most LIM-F9 characters,
resolved against an http(s) `<base href>` and then the page URL, because the
caller reads them without the page and may follow them; anything else keeps
its text only.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urljoin, urlsplit

from rypsok.core import limits
from rypsok.core.boundary.invisible import remove_invisible
from rypsok.core.fetch.extract.model import HtmlElement


def body_of(root: HtmlElement) -> HtmlElement:
    body = root.find("body")
    return root if body is None else body


def title_of(root: HtmlElement) -> tuple[str | None, int]:
    """The document title, whitespace collapsed and cleaned, with the removal count."""
    for element in root.iter("title"):
        text = " ".join((element.text or "").split())
        cleaned, removed = remove_invisible(text)
        cleaned = " ".join(cleaned.split())
        return (cleaned or None), removed
    return None, 0


def base_url_of(root: HtmlElement, page_url: str) -> str:
    base = root.find("head/base[@href]")
    if base is None:
        return page_url
    resolved = resolve(page_url, base.get("href"))
    return page_url if resolved is None else resolved


def resolve(base: str, href: str | None) -> str | None:
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
