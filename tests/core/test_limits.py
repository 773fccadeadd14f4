"""The limits table: one module, documented, and complete against the specification."""

from __future__ import annotations

import pathlib
import re

import pytest

from rypsok.core.limits_table import limits_rows, limits_table

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC_LIMITS = ROOT.parent / "shared" / "spec" / "LIMITS.md"


@pytest.mark.req("REQ-CFG-003")
def test_limits_page_shows_the_values_the_code_uses() -> None:
    """REQ-CFG-003: docs/limits.md is the table rendered from rypsok.core.limits."""
    page = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    assert limits_table() in page, "docs/limits.md is stale: run `make docs`"


@pytest.mark.req("REQ-CFG-003")
def test_every_limit_of_the_specification_has_a_home() -> None:
    """REQ-CFG-003: every LIM id of the specification is held by limits.py or its page."""
    if not SPEC_LIMITS.exists():
        pytest.fail(f"the specification's limits table is missing at {SPEC_LIMITS}")
    spec_ids = set(re.findall(r"\| (LIM-[A-Z]\d+) \|", SPEC_LIMITS.read_text(encoding="utf-8")))
    ours = {row[0] for row in limits_rows()}
    page = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    missing = {i for i in spec_ids - ours if i not in page}
    assert not missing, missing
    assert len(spec_ids) > 50
