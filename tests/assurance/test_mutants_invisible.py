"""The removal table under another Unicode version than Python 3.11's (REQ-SEC-015).

`always_removed_ranges` returns a constant table when the running Unicode is
14.0.0 (Python 3.11) and scans unicodedata otherwise. Only the first branch
runs here unless the version is patched; this case patches the constant's
version so that the scan branch runs, and checks that it gives the same
table: a Python with another Unicode version gets a table built the same
way, never an empty or partial one. It also gives the mutation run of
boundary.invisible a test that reaches that branch.
"""

from __future__ import annotations

import pytest

from rypsok.core.boundary import invisible


@pytest.mark.req("REQ-SEC-015", "REQ-TEST-019")
def test_another_unicode_version_gets_the_scanned_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-SEC-015: with the constant's version not the running one, the table is scanned,
    and under Unicode 14.0.0 the scan is the constant, range for range."""
    constant = invisible.always_removed_ranges()
    monkeypatch.setattr(invisible, "_REMOVED_RANGES_UNICODE", "not the running version")
    scanned = invisible.always_removed_ranges()
    assert scanned is not invisible._REMOVED_RANGES  # the scan ran: a new tuple
    assert scanned == constant
    assert any(low <= 0x200B <= high for low, high in scanned)  # ZERO WIDTH SPACE is removed


@pytest.mark.req("REQ-SEC-015", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("ranges", "bmp", "astral"),
    [
        ([(0xFFFF, 0xFFFF)], [(0xFFFF, 0xFFFF)], []),  # the last BMP code point stays BMP
        ([(0x10000, 0x10000)], [], [(0x10000, 0x10000)]),
        ([(0xFFFE, 0x10001)], [(0xFFFE, 0xFFFF)], [(0x10000, 0x10001)]),  # cut at the edge
        ([(0x00, 0x1F), (0xE0000, 0xE00FF)], [(0x00, 0x1F)], [(0xE0000, 0xE00FF)]),
    ],
)
def test_ranges_split_at_the_bmp_keep_every_code_point_on_its_side(
    ranges: list[tuple[int, int]], bmp: list[tuple[int, int]], astral: list[tuple[int, int]]
) -> None:
    """REQ-SEC-015: the removal table's BMP and astral halves together are the table."""
    assert invisible._split_at_bmp(ranges) == (bmp, astral)
