"""Invisible-character removal at the edges of its tables (REQ-SEC-015).

`make mutation MODULES=boundary.invisible` (docs/assurance.md) found range
bounds that no test reached: each case here sits on the first or last code
point of a range of the module docstring's rules, or just outside it. The
mutants that change nothing are listed in mutation/exclusions.txt.
"""

from __future__ import annotations

import re

import pytest

from rypsok.core.boundary import invisible
from rypsok.core.boundary.invisible import remove_invisible

ZWNJ = "\u200c"
ZWJ = "\u200d"
IVS = "\U000e0100"  # the first ideographic variation selector


def unchanged(text: str) -> bool:
    return remove_invisible(text) == (text, 0)


@pytest.mark.req("REQ-SEC-015")
@pytest.mark.parametrize(
    "text",
    [
        "👨\U0001f3fb\u200d👩",  # the first emoji modifier before a ZWJ
        "👨\U0001f3ff\u200d👩",  # the last one
        "≩\ufe0d",  # the last standardized selector on a math symbol
        "葛\ufe00",  # a standardized selector on an ideograph
        "\u1820\u180f",  # the fourth Mongolian selector on the first letter
        "\u18aa\u180b",  # a selector on the last Mongolian letter
        "\u3400" + IVS,  # the first ideograph of Extension A
        "\u4dbf\U000e01ef",  # its last, with the last ideographic selector
        "\u4e00" + IVS,
        "\u9fff" + IVS,
        "\uf900" + IVS,  # compatibility ideographs
        "\ufaff" + IVS,
        "\U00020000" + IVS,  # plane 2
        "\U0003fffd" + IVS,  # the end of plane 3 (U+3FFFE and U+3FFFF are noncharacters)
    ],
)
def test_selector_or_joiner_on_the_edge_of_its_range_is_kept(text: str) -> None:
    """REQ-SEC-015: the first and last code points of each base range keep their selector."""
    assert unchanged(text)


@pytest.mark.req("REQ-SEC-015")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u181f\u180b", "\u181f"),  # just before the Mongolian letters
        ("\u18ab\u180b", "\u18ab"),  # just after them
        ("\u33ff" + IVS, "\u33ff"),  # just before Extension A
        ("\U00040000" + IVS, "\U00040000"),  # after plane 3
        ("a\ufe0d", "a"),  # a standardized selector on a letter
    ],
)
def test_selector_just_outside_its_range_is_removed(text: str, expected: str) -> None:
    """REQ-SEC-015: one code point outside a base range, the selector goes and is counted."""
    assert remove_invisible(text) == (expected, len(text) - len(expected))


@pytest.mark.req("REQ-SEC-015")
@pytest.mark.parametrize(
    "text",
    [
        "\u06ff\u200c\u0628",  # ZWNJ after the last letter of the Arabic block
        "\u00a9\ufe0f",  # VS16 on the first Extended_Pictographic code point
        "\u00a9\u200d👨",  # and a ZWJ after it
    ],
)
def test_first_and_last_entries_of_the_script_and_emoji_tables_count(text: str) -> None:
    """REQ-SEC-015: the edges of the script and Extended_Pictographic tables keep their joiner."""
    assert unchanged(text)


@pytest.mark.req("REQ-SEC-015", "REQ-SEC-003")
def test_ascii_letters_are_not_in_the_removal_table() -> None:
    """REQ-SEC-003, REQ-SEC-015: the table's character class holds its ranges and nothing else."""
    single_and_range = invisible._range_class([(0x41, 0x41), (0x61, 0x63)])
    assert re.findall(f"[{single_and_range}]", "ABXabcd") == ["A", "a", "b", "c"]
    assert unchanged("XML, XXL and X")


@pytest.mark.req("REQ-SEC-015")
def test_zwnj_between_letters_in_a_gap_of_the_script_table_is_removed() -> None:
    """REQ-SEC-015: Thaana (U+0780..), between two Arabic blocks of the table, has no script."""
    assert remove_invisible("\u0780\u200c\u0781") == ("\u0780\u0781", 1)
