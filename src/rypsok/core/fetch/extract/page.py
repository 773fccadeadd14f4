"""Page-level facts read once: the body, the title, the base URL and link resolution.

Links are kept only as absolute http(s) URLs of at most LIM-F9 characters,
resolved against an http(s) `<base href>` and then the page URL, because the
caller reads them without the page and may follow them; anything else keeps
its text only.
"""

from __future__ import annotations

import functools
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
    fast = _resolve_simple(base, href)
    if fast is not None:
        return fast.translate(_URL_ESCAPES) if len(fast) <= limits.URL_MAX_CHARS else None
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


# The shapes of nearly every link on real pages, resolved without urljoin and
# urlsplit (which took half of the rendering time of a link-heavy 5 MiB page):
# an absolute http(s) URL with a plain host, a root-relative path and a
# relative path without dot segments, against a base of the same plain shape.
# Anything else takes the general path, so the result is urljoin's.
_SIMPLE_ABSOLUTE: Final = re.compile(
    r"(https?://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?)([/?#][^\s]*)?\Z",
    re.IGNORECASE,
)
_RELATIVE_PATH: Final = re.compile(r"[A-Za-z0-9_~%-][^:/?#]*(?:[/?#]|\Z)")


def _resolve_simple(base: str, href: str) -> str | None:
    """`href` made absolute when its shape and the base's are plain, else None."""
    if _SIMPLE_ABSOLUTE.match(href):
        return href
    if "\\" in href or "./" in href or href.endswith(("/.", "/..")) or href in (".", ".."):
        return None
    parts = _base_parts(base)
    if parts is None:
        return None
    origin, directory = parts
    if href.startswith("/"):
        return None if href.startswith("//") else origin + href
    return directory + href if _RELATIVE_PATH.match(href) else None


@functools.lru_cache(maxsize=64)
def _base_parts(base: str) -> tuple[str, str] | None:
    """The origin and the directory of a plain absolute base URL."""
    match = _SIMPLE_ABSOLUTE.match(base)
    if match is None or "./" in base:
        return None
    origin, rest = match.group(1), match.group(2) or ""
    path = rest.split("?", 1)[0].split("#", 1)[0]
    return origin, origin + path[: path.rfind("/") + 1] if path else origin + "/"


# Characters that would end or break a Markdown link destination.
_URL_ESCAPES: Final = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"})
