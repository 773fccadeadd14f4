"""Crashes the fuzz targets found, kept as tests (REQ-SEC-023: a crash becomes a test).

Each input that crashed a target is kept under fuzz/regressions/<target>-<hash>
and replayed here through the same target. A crash not fixed yet is marked
xfail(strict=True) with what it is, so the gate stays green while the crash is
open and turns red the moment the fix lands and the mark is still there; the
fix removes the mark. docs/assurance.md lists each one.
"""

from __future__ import annotations

import pathlib

import pytest

from fuzz import targets
from rypsok.core.engines.base import EngineFailure, EngineResponse
from rypsok.core.engines.registry import driver_classes
from rypsok.core.headers import retry_after_ms

REGRESSIONS = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "regressions"
# Crashes found and not fixed yet: target -> what it is. Empty: every one is fixed
# (FZ-1 headers._http_date and FZ-2 crossref._date now catch OverflowError).
OPEN: dict[str, str] = {}


def _cases() -> list[object]:
    cases: list[object] = []
    for path in sorted(REGRESSIONS.glob("*")):
        target = path.name.rsplit("-", 1)[0]
        open_crash = OPEN.get(target)
        marks = [pytest.mark.xfail(strict=True, raises=OverflowError, reason=open_crash)]
        cases.append(pytest.param(target, path, id=path.name, marks=marks if open_crash else []))
    return cases


@pytest.mark.req("REQ-SEC-023")
@pytest.mark.parametrize(("target", "path"), _cases())
def test_a_crash_the_fuzzer_found_stays_fixed(target: str, path: pathlib.Path) -> None:
    """REQ-SEC-023: every input that once crashed a target now holds its contract."""
    targets.TARGETS[target](path.read_bytes())


@pytest.mark.req("REQ-SEC-023", "REQ-RES-002")
def test_a_retry_after_date_beyond_the_calendar_is_ignored() -> None:
    """REQ-RES-002: a Retry-After HTTP-date that no calendar holds is malformed: None."""
    assert retry_after_ms({"retry-after": "Wed, 21 Oct 2026 7:" + "2" * 40 + "0 GMT"}) is None


@pytest.mark.req("REQ-SEC-023", "REQ-RES-002")
@pytest.mark.parametrize("value", ["\u00b2", "3\u00b2", "\u0661\u0662", "\uff19"])
def test_a_retry_after_of_non_ascii_digits_is_malformed(value: str) -> None:
    """REQ-RES-002: delta-seconds is ASCII digits; "²" once raised ValueError (Hypothesis)."""
    assert retry_after_ms({"retry-after": value}) is None
    assert retry_after_ms({"retry-after": "12"}) == 12_000


@pytest.mark.req("REQ-SEC-023", "REQ-RUST-003")
def test_a_crossref_date_beyond_the_calendar_is_no_date() -> None:
    """REQ-RUST-003: a Crossref work whose year overflows is a hit without a date."""
    body = (
        b'{"status":"ok","message-type":"work-list","message":{"items":[{"DOI":"10.1/x",'
        b'"URL":"https://doi.org/10.1/x","title":["T"],'
        b'"published":{"date-parts":[[' + b"9" * 40 + b",2,3]]}}]}}"
    )
    driver = driver_classes()["crossref"]()
    response = EngineResponse(200, {"content-type": "application/json"}, body)
    try:
        hits = driver.parse(response)
    except EngineFailure:
        pytest.fail("a bad date must not fail the whole answer")
    assert hits and hits[0].date is None
