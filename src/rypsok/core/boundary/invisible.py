"""Removal of invisible characters from external text (REQ-SEC-015).

`remove_invisible(text)` returns the text without the characters a reader
cannot see, and how many it removed, so that the caller can report the
removal in a notice (CLR-11). It never removes a visible character, and it
never touches whitespace: collapsing whitespace is the step before it in
`clean_text` (REQ-CTX-004), and deleting a line break here would glue two
words together. The result is idempotent: `remove_invisible` of its own
output removes nothing.

Always removed, wherever they stand:

* control characters (Cc) that are not whitespace: C0 except TAB, LF, VT,
  FF, CR and FS..US, DEL, and C1 except NEL. The whitespace controls are left
  to the whitespace step, which turns them into a space;
* format characters (Cf): zero-width space U+200B, word joiner U+2060,
  U+FEFF, Mongolian vowel separator U+180E, soft hyphen U+00AD, bidirectional
  controls (U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069), the
  deprecated U+206A..U+206F, invisible operators U+2061..U+2064, interlinear
  annotation, shorthand and musical format controls, Egyptian hieroglyph
  format controls, and the Unicode tag characters U+E0000..U+E007F. Emoji tag
  sequences therefore lose their tags: a subdivision flag becomes the black
  flag it is built on. Two kinds of Cf are not removed here: the joiners
  (below) and the prepended concatenation marks (U+0600..U+0605, U+06DD,
  U+070F, U+0890, U+0891, U+08E2, U+110BD, U+110CD), which are visible signs
  that span the digits after them;
* lone surrogates (Cs), which are not Unicode scalar values (LIM-U1), and the
  66 noncharacters (U+FDD0..U+FDEF and the last two code points of each
  plane);
* default-ignorable characters outside Cf that only hide text: combining
  grapheme joiner U+034F, Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
  Khmer inherent vowels U+17B4, U+17B5, and the unassigned default-ignorable
  code points U+2065, U+FFF0..U+FFF8 and U+E0080..U+E0FFF (minus the
  variation selectors).

Variation selectors (Mn, invisible) are kept only where they select a glyph
of the character just before them, at most one per character; elsewhere they
are removed, so that they cannot carry hidden data in bulk. Kept:

* U+FE0E, U+FE0F after an emoji-capable character: Extended_Pictographic, or
  one of the keycap bases `0-9 # *`;
* U+FE00..U+FE0D after a CJK ideograph or a mathematical symbol (Sm), the two
  kinds of standardized variation sequence a title or snippet carries;
* U+E0100..U+E01EF (ideographic variation sequences) after a CJK ideograph;
* Mongolian free variation selectors U+180B..U+180D, U+180F after a Mongolian
  letter.
Glyph variants of other scripts (Myanmar, Phags-pa, ...) lose the selector
and keep their base character.

The two joiners follow REQ-SEC-015 exactly:

* U+200C ZWNJ is kept only between two characters of Arabic script, or two
  characters of the same Indic script;
* U+200D ZWJ is kept only next to an Indic virama (either side, so both the
  half-form `KA VIRAMA ZWJ SSA` and the eyelash `RA ZWJ VIRAMA` survive), or
  between two emoji: after an Extended_Pictographic character, an emoji
  modifier U+1F3FB..U+1F3FF or VS16 U+FE0F, and before an
  Extended_Pictographic character;
* of a run of joiners, at most the first one that qualifies between the
  run's neighbours is kept; a joiner at the start or the end of the text has
  a missing neighbour and never qualifies.
The neighbours are judged after every other removal, so `A ZWSP ZWJ B` is
judged as `A ZWJ B`, and the decision holds again on the output.

Scripts are recognised by code point ranges (the `_SCRIPT_RANGES` table),
Arabic and Indic blocks, not by the Unicode Script property, which the
standard library does not expose. A virama is a character of canonical
combining class 9 inside an Indic range. Extended_Pictographic comes from the
ranges of emoji-data.txt, which are stable: new emoji are allocated inside
them. The removal table comes from `unicodedata` over planes 0, 1 and 14, the only
planes with Cc or Cf characters (a test checks this for the running Unicode
version). Scanning them takes about 30 ms, so the table is kept as a constant
for Python 3.11's Unicode 14.0.0, checked by a test against the scan; under
any other Unicode version it is scanned at import.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Final

ZWNJ: Final = "\u200c"
ZWJ: Final = "\u200d"
JOINERS: Final = ZWNJ + ZWJ

_VS15: Final = "\ufe0e"
_VS16: Final = "\ufe0f"

# Visible Cf characters: they draw a sign over the digits that follow them.
_PREPENDED_CONCATENATION_MARKS: Final = frozenset(
    [*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD]
)

# Default-ignorable code points that are not Cc/Cf but hide text.
_EXTRA_INVISIBLE_RANGES: Final = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels, "not to be used"
    (0x2065, 0x2065),  # unassigned, reserved among the bidi controls
    (0x3164, 0x3164),  # Hangul filler
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned, default ignorable
    (0xE0000, 0xE00FF),  # tag characters and reserved
    (0xE01F0, 0xE0FFF),  # reserved after the variation selectors supplement
)

# Planes that hold every Cc and Cf character (plane 0, 1 and 14).
_PLANES_WITH_CONTROLS: Final = (0x00000, 0x10000, 0xE0000)

_BMP_SELECTORS: Final = "\u180b-\u180d\u180f\ufe00-\ufe0f"
_ASTRAL_SELECTORS: Final = "\U000e0100-\U000e01ef"
_SELECTORS: Final = _BMP_SELECTORS + _ASTRAL_SELECTORS

ARABIC: Final = "Arabic"

# Code point ranges of the scripts the joiner rule names. Blocks, not the
# Script property: a block also holds its script's marks and punctuation,
# which is what "a character of Arabic script" means for the joiner rule.
_SCRIPT_RANGES: Final = (
    (0x0600, 0x06FF, ARABIC),
    (0x0750, 0x077F, ARABIC),  # Arabic Supplement
    (0x0870, 0x089F, ARABIC),  # Arabic Extended-B
    (0x08A0, 0x08FF, ARABIC),  # Arabic Extended-A
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"),
    (0x0B00, 0x0B7F, "Oriya"),
    (0x0B80, 0x0BFF, "Tamil"),
    (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"),
    (0x0D00, 0x0D7F, "Malayalam"),
    (0x0D80, 0x0DFF, "Sinhala"),
    (0xA800, 0xA82F, "Syloti Nagri"),
    (0xA8E0, 0xA8FF, "Devanagari"),  # Devanagari Extended
    (0xAAE0, 0xAAFF, "Meetei Mayek"),  # Meetei Mayek Extensions
    (0xABC0, 0xABFF, "Meetei Mayek"),
    (0xFB50, 0xFDFF, ARABIC),  # Presentation Forms-A
    (0xFE70, 0xFEFE, ARABIC),  # Presentation Forms-B, without U+FEFF
    (0x11000, 0x1107F, "Brahmi"),
    (0x11080, 0x110CF, "Kaithi"),
    (0x11180, 0x111DF, "Sharada"),
    (0x111E0, 0x111FF, "Sinhala"),  # Sinhala Archaic Numbers
    (0x11300, 0x1137F, "Grantha"),
    (0x11400, 0x1147F, "Newa"),
    (0x11480, 0x114DF, "Tirhuta"),
    (0x11600, 0x1165F, "Modi"),
    (0x11680, 0x116CF, "Takri"),
    (0x11B00, 0x11B5F, "Devanagari"),  # Devanagari Extended-A
    (0x11FC0, 0x11FFF, "Tamil"),  # Tamil Supplement
)
_SCRIPT_STARTS: Final = tuple(start for start, _, _ in _SCRIPT_RANGES)

# Extended_Pictographic, from emoji-data.txt (UTS #51).
_PICTOGRAPHIC_RANGES: Final = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D), (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip
_PICTOGRAPHIC_STARTS: Final = tuple(start for start, _ in _PICTOGRAPHIC_RANGES)

_EMOJI_MODIFIERS: Final = (0x1F3FB, 0x1F3FF)
_KEYCAP_BASES: Final = frozenset("0123456789#*")

_CJK_IDEOGRAPH_RANGES: Final = (
    (0x3400, 0x4DBF),  # Extension A
    (0x4E00, 0x9FFF),  # Unified Ideographs
    (0xF900, 0xFAFF),  # Compatibility Ideographs
    (0x20000, 0x3FFFF),  # planes 2 and 3: Extensions B..H and compatibility supplement
)
_MONGOLIAN_LETTERS: Final = (0x1820, 0x18AA)


def _in_ranges(code_point: int, ranges: Iterable[tuple[int, int]]) -> bool:
    return any(low <= code_point <= high for low, high in ranges)


def _ranges_of(code_points: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """A set of code points as sorted, disjoint, non-adjacent inclusive ranges."""
    ranges: list[tuple[int, int]] = []
    for code_point in sorted(code_points):
        if ranges and ranges[-1][1] == code_point - 1:
            ranges[-1] = (ranges[-1][0], code_point)
        else:
            ranges.append((code_point, code_point))
    return tuple(ranges)


def _range_class(ranges: Iterable[tuple[int, int]]) -> str:
    """A regex character class body for inclusive code point ranges."""
    return "".join(
        f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges
    )


def _always_removed_code_points() -> set[int]:
    category = unicodedata.category
    removed: set[int] = set()
    for plane_start in _PLANES_WITH_CONTROLS:
        code_points = range(plane_start, plane_start + 0x10000)
        removed.update(cp for cp in code_points if category(chr(cp)) in ("Cc", "Cf", "Cs"))
    # Whitespace controls are the whitespace step's business.
    removed.difference_update([cp for cp in removed if chr(cp).isspace()])
    for low, high in _EXTRA_INVISIBLE_RANGES:
        removed.update(range(low, high + 1))
    removed.update(range(0xFDD0, 0xFDF0))  # noncharacters
    for plane in range(17):
        removed.update((plane << 16 | 0xFFFE, plane << 16 | 0xFFFF))
    removed.difference_update(_PREPENDED_CONCATENATION_MARKS)
    removed.difference_update(ord(joiner) for joiner in JOINERS)
    removed.difference_update(range(0xE0100, 0xE01F0))  # selectors are judged by context
    return removed


# What `_always_removed_code_points` computes under Unicode 14.0.0 (Python 3.11's
# `unicodedata`), as ranges. Scanning three planes costs ~30 ms of every start
# (issue 14 item 3), so a Python with that Unicode version uses this constant and
# any other computes the table; a test checks the constant against the scan.
_REMOVED_RANGES_UNICODE: Final = "14.0.0"
_REMOVED_RANGES: Final = (
    (0x0000, 0x0008), (0x000E, 0x001B), (0x007F, 0x0084), (0x0086, 0x009F),
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180E, 0x180E), (0x200B, 0x200B), (0x200E, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xD800, 0xDFFF),
    (0xFDD0, 0xFDEF), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB),
    (0xFFFE, 0xFFFF), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0x1FFFE, 0x1FFFF), (0x2FFFE, 0x2FFFF), (0x3FFFE, 0x3FFFF), (0x4FFFE, 0x4FFFF),
    (0x5FFFE, 0x5FFFF), (0x6FFFE, 0x6FFFF), (0x7FFFE, 0x7FFFF), (0x8FFFE, 0x8FFFF),
    (0x9FFFE, 0x9FFFF), (0xAFFFE, 0xAFFFF), (0xBFFFE, 0xBFFFF), (0xCFFFE, 0xCFFFF),
    (0xDFFFE, 0xE00FF), (0xE01F0, 0xE0FFF), (0xEFFFE, 0xEFFFF), (0xFFFFE, 0xFFFFF),
    (0x10FFFE, 0x10FFFF),
)  # fmt: skip


def always_removed_ranges() -> tuple[tuple[int, int], ...]:
    """The code points removed wherever they stand, as ranges, for the running Unicode."""
    if unicodedata.unidata_version == _REMOVED_RANGES_UNICODE:
        return _REMOVED_RANGES
    return _ranges_of(_always_removed_code_points())


_ALWAYS_REMOVED: Final = re.compile(f"[{_range_class(always_removed_ranges())}]")
_SELECTOR_RUN: Final = re.compile(f"[{_SELECTORS}]+")
_JOINER_RUN: Final = re.compile(f"[{JOINERS}]+")

# The same sets, split at the end of the BMP, for speed only. `re` matches a
# class of BMP characters against a bitmap, but a class that also holds
# characters beyond U+FFFF against its ranges one by one: `_ALWAYS_REMOVED`
# costs about 100 ns per character of plain text, its BMP half a tenth of
# that (docs/performance.md §16). Characters beyond the BMP are rare in
# titles and snippets, so their half only runs on a text that has one.
_LAST_BMP: Final = 0xFFFF


def _split_at_bmp(
    ranges: Iterable[tuple[int, int]],
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    bmp: list[tuple[int, int]] = []
    astral: list[tuple[int, int]] = []
    for low, high in ranges:
        if low <= _LAST_BMP:
            bmp.append((low, min(high, _LAST_BMP)))
        if high > _LAST_BMP:
            astral.append((max(low, _LAST_BMP + 1), high))
    return bmp, astral


_BMP_REMOVED_RANGES, _ASTRAL_REMOVED_RANGES = _split_at_bmp(always_removed_ranges())
_BMP_ALWAYS_REMOVED: Final = re.compile(f"[{_range_class(_BMP_REMOVED_RANGES)}]")
_ASTRAL_ALWAYS_REMOVED: Final = re.compile(f"[{_range_class(_ASTRAL_REMOVED_RANGES)}]")
_ANY_ASTRAL: Final = re.compile(f"[\\U{_LAST_BMP + 1:08x}-\\U0010ffff]")
_BMP_SELECTOR: Final = re.compile(f"[{_BMP_SELECTORS}]")
_ASTRAL_SELECTOR: Final = re.compile(f"[{_ASTRAL_SELECTORS}]")


def script_of(char: str) -> str | None:
    """The Arabic or Indic script of `char` by the range table, or None."""
    code_point = ord(char)
    index = bisect.bisect_right(_SCRIPT_STARTS, code_point) - 1
    if index < 0:
        return None
    _, end, script = _SCRIPT_RANGES[index]
    return script if code_point <= end else None


def is_indic_virama(char: str) -> bool:
    """Whether `char` is a virama (combining class 9) of an Indic script."""
    script = script_of(char)
    return script is not None and script != ARABIC and unicodedata.combining(char) == 9


def is_extended_pictographic(char: str) -> bool:
    code_point = ord(char)
    index = bisect.bisect_right(_PICTOGRAPHIC_STARTS, code_point) - 1
    return index >= 0 and code_point <= _PICTOGRAPHIC_RANGES[index][1]


def is_emoji_modifier(char: str) -> bool:
    low, high = _EMOJI_MODIFIERS
    return low <= ord(char) <= high


def is_selector(char: str) -> bool:
    """Whether `char` is a variation selector (standard, supplement or Mongolian)."""
    return _SELECTOR_RUN.fullmatch(char) is not None


def _is_cjk_ideograph(char: str) -> bool:
    return _in_ranges(ord(char), _CJK_IDEOGRAPH_RANGES)


def _selector_fits(selector: str, base: str) -> bool:
    """Whether `selector` selects a glyph variant of `base` (see module docstring)."""
    if selector in (_VS15, _VS16):
        return is_extended_pictographic(base) or base in _KEYCAP_BASES
    code_point = ord(selector)
    if 0xFE00 <= code_point <= 0xFE0D:
        return _is_cjk_ideograph(base) or unicodedata.category(base) == "Sm"
    if code_point >= 0xE0100:
        return _is_cjk_ideograph(base)
    low, high = _MONGOLIAN_LETTERS
    return low <= ord(base) <= high


def _keep_selector(run: str, before: str | None, _after: str | None) -> str:
    # Only the first selector of a run sits directly on its base.
    first = run[0]
    if before is not None and _selector_fits(first, before):
        return first
    return ""


def _precedes_emoji_joiner(char: str) -> bool:
    return is_extended_pictographic(char) or is_emoji_modifier(char) or char == _VS16


def _joiner_fits(joiner: str, before: str, after: str) -> bool:
    """The orthographic positions of REQ-SEC-015 (see module docstring)."""
    if joiner == ZWNJ:
        script = script_of(before)
        return script is not None and script == script_of(after)
    if is_indic_virama(before) or is_indic_virama(after):
        return True
    return _precedes_emoji_joiner(before) and is_extended_pictographic(after)


def _keep_joiner(run: str, before: str | None, after: str | None) -> str:
    if before is None or after is None:
        return ""
    for joiner in run:
        if _joiner_fits(joiner, before, after):
            return joiner
    return ""


_RunDecision = Callable[[str, str | None, str | None], str]


def _filter_runs(text: str, run_pattern: re.Pattern[str], decide: _RunDecision) -> tuple[str, int]:
    """Replace each run by what `decide` keeps of it, judged on its neighbours."""
    pieces: list[str] = []
    removed_count = 0
    copied_up_to = 0
    for match in run_pattern.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start > 0 else None
        after = text[end] if end < len(text) else None
        kept = decide(match.group(), before, after)
        pieces.append(text[copied_up_to:start])
        pieces.append(kept)
        removed_count += (end - start) - len(kept)
        copied_up_to = end
    if removed_count == 0:
        return text, 0
    pieces.append(text[copied_up_to:])
    return "".join(pieces), removed_count


def remove_invisible(text: str) -> tuple[str, int]:
    """Remove invisible characters; return the text and how many were removed."""
    # Removing the BMP half, then the other, removes exactly `_ALWAYS_REMOVED`.
    visible, removed_count = _BMP_ALWAYS_REMOVED.subn("", text)
    has_astral = _ANY_ASTRAL.search(visible) is not None
    if has_astral:
        visible, astral_removed = _ASTRAL_ALWAYS_REMOVED.subn("", visible)
        removed_count += astral_removed
    # Selectors before joiners: a joiner's neighbour may be a kept VS16. Each
    # pass runs only where its characters occur: without them it changes nothing.
    if _BMP_SELECTOR.search(visible) or (has_astral and _ASTRAL_SELECTOR.search(visible)):
        visible, selectors_removed = _filter_runs(visible, _SELECTOR_RUN, _keep_selector)
        removed_count += selectors_removed
    if ZWNJ in visible or ZWJ in visible:
        visible, joiners_removed = _filter_runs(visible, _JOINER_RUN, _keep_joiner)
        removed_count += joiners_removed
    return visible, removed_count
