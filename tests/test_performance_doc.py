"""The spacing section of docs/performance.md is generated from the admission records."""

from __future__ import annotations

import pathlib

import pytest
from bench.throughput import spacing_markdown

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.req("REQ-ENG-010")
def test_the_reported_spacing_bounds_are_those_of_the_engines_records() -> None:
    """REQ-ENG-010: each category's calls/s bound is computed from the engines' properties.

    The tables in docs/performance.md are the output of `python -m bench.throughput
    --spacing`; a changed admission record, default or margin changes them, and this
    fails until the section is regenerated.
    """
    report = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert spacing_markdown() in report
