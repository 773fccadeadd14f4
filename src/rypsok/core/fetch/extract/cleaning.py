"""Invisible characters out of every text run and of the whole result (REQ-SEC-015).

Decides nothing about layout: it only removes what `remove_invisible` removes,
with a fast pre-check so that clean text (nearly all of it) costs a regex scan
and not the full removal.
"""

from __future__ import annotations

import re
from typing import Final

from rypsok.core.boundary.invisible import remove_invisible

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


def may_hold_invisible(text: str) -> bool:
    """False only when remove_invisible would remove nothing from `text`."""
    if _BMP_CANDIDATES.search(text):
        return True
    return _ASTRAL.search(text) is not None and _ASTRAL_CANDIDATES.search(text) is not None


def clean(text: str) -> tuple[str, int]:
    if not may_hold_invisible(text):
        return text, 0
    return remove_invisible(text)
