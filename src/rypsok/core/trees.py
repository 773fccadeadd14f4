"""An edit of a parsed HTML tree that two readers of markup share.

The hidden-text engine of web_fetch (`fetch/css_visibility`) and the scraping
drivers (`engines/bing.py`) both remove an element from an lxml tree. lxml's
`remove` drops the element's tail with it, and the tail is the parent's text
that follows the element, so both keep it. No lxml import here: the callers
hold the tree already.
"""

from __future__ import annotations

from typing import Any

Element = Any  # lxml has no type stubs


def remove_keeping_tail(element: Element) -> None:
    """Remove `element` with its subtree; its tail text belongs to the parent and stays."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
