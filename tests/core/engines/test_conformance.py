"""The conformance suite: every registered engine, checked the same way.

The engines come from the registry (`DRIVER_CLASSES`), the data from one
naming convention, so a newly registered engine is covered with no line of
its own here. For an engine with id `<id>`:

* `docs/engines/<id>.md` is its admission record (REQ-ENG-010, REQ-CMP-001);
* `tests/fixtures/engines/<id>/ok.<ext>` (or `success.<ext>`) is a recorded
  successful answer with at least one hit. Its extension gives the
  Content-Type of every answer generated below (`.json` application/json,
  `.xml` application/atom+xml, `.html` text/html, `.txt` text/plain), and
  the malformed and truncated answers are cut from it;
* the driver is built with a fixed clock, and made active the least way it
  can be: no settings, else a test key (`requires_key`), else an endpoint
  (an engine with no public default, like SearXNG), else both; an engine
  whose terms require the operator's contact (`requires_contact`) gets one.

Every engine must then classify the shared error classes the same way
(docs/engines/README.md, REQ-ENG-006, REQ-ENG-009, REQ-RES-002):

    401                          auth_failure
    403                          auth_failure with a key sent, else blocked
    429                          rate_limited, with its Retry-After
    503 + Retry-After            rate_limited, with its Retry-After
    500, 502, 503                request_failure (a Retry-After is kept on it)
    408, 504                     timeout
    a challenge page (200/403/503)   blocked
    a malformed or truncated body    parse_failure

and no failure carries provider text. A provider whose record documents a
different reading of one of these is listed in `DOCUMENTED_EXCEPTIONS`, with
the record's section; nothing else may differ. What is particular to one
provider (its own throttle signals, error documents, result mapping) stays in
that engine's own test file.

Each driver's declared filters are checked here too (REQ-SEARCH-004, -005,
REQ-ENG-010): every declared language and time range changes the request the
driver builds, except its `default_language` and its `unfiltered_time_ranges`,
which must leave the request as it is without a filter.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import re
import sys
from pathlib import Path

import pytest

from rypsok.core.engines.base import (
    Driver,
    EngineResponse,
    EngineSettings,
    FailureClass,
    SearchParams,
)
from rypsok.core.engines.registry import DRIVER_CLASSES
from tests.core.engines.driver_support import HTML, NOW, parse_failure
from tests.fakes.provider_server import FIXTURES

DOCS = Path(__file__).resolve().parents[3] / "docs" / "engines"
SUCCESS_STEMS = ("ok", "success")
CONTENT_TYPES = {
    ".json": "application/json; charset=utf-8",
    ".xml": "application/atom+xml; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
TEST_KEY = "conformance-test-key"
TEST_ENDPOINT = "https://provider.conformance.test/api"
RETRY_AFTER_S = 120
NEUTRAL_BODY = b"Service temporarily unavailable. Please try again later."
CHALLENGE_PAGE = (
    b"<!DOCTYPE html><html><head><title>Just a moment...</title></head>"
    b"<body><h1>Checking your browser</h1><div id='cf-chl-widget'>Verify you are human"
    b"</div></body></html>"
)
# (engine id, status) -> the class its admission record documents instead.
DOCUMENTED_EXCEPTIONS: dict[tuple[str, int], FailureClass] = {
    # docs/engines/searxng.md, "Failure signals": no credential is ever sent, so a
    # 401/403 is the instance's own policy (JSON disabled, a proxy): a setting.
    ("searxng", 401): FailureClass.REQUEST_FAILURE,
    ("searxng", 403): FailureClass.REQUEST_FAILURE,
    # docs/engines/marginalia.md, "Rate limits": its throttle is a bare 503.
    ("marginalia", 503): FailureClass.RATE_LIMITED,
    # docs/engines/duckduckgo.md and bing.md, "Error and rate-limit signals": a
    # human-facing page answers overload with 503, which is a throttle there.
    ("duckduckgo", 503): FailureClass.RATE_LIMITED,
    ("bing", 503): FailureClass.RATE_LIMITED,
}
TEST_CONTACT = "ops@conformance.test"

# A driver reads the time only through the clock its base class is given.
CLOCK_CALLS = re.compile(
    r"\btime\.(time|monotonic|perf_counter)\(|\b(datetime|date)\.(now|today|utcnow)\("
)

ENGINES = [cls.id for cls in DRIVER_CLASSES]
CLASSES = {cls.id: cls for cls in DRIVER_CLASSES}


def success_fixture(engine: str) -> Path:
    """The engine's recorded successful answer, by the naming convention."""
    found = sorted(
        path
        for path in (FIXTURES / engine).glob("*")
        if path.stem in SUCCESS_STEMS and path.suffix in CONTENT_TYPES
    )
    assert found, f"tests/fixtures/engines/{engine}/ok.<ext> (or success.<ext>) is missing"
    return found[0]


def active_driver(engine: str) -> Driver:
    """The engine's driver with a fixed clock, made active the least way it can be."""
    cls = CLASSES[engine]
    for settings in (
        EngineSettings(),
        EngineSettings(api_key=TEST_KEY),
        EngineSettings(endpoint=TEST_ENDPOINT),
        EngineSettings(endpoint=TEST_ENDPOINT, api_key=TEST_KEY),
    ):
        contact = TEST_CONTACT if cls.requires_contact else None
        driver = cls(dataclasses.replace(settings, contact=contact), clock=lambda: NOW)
        if driver.active:
            return driver
    raise AssertionError(f"{engine} cannot be made active by a key or an endpoint")


def answer(engine: str, status: int, body: bytes, **headers: str) -> EngineResponse:
    """An answer with the engine's usual Content-Type (from its success fixture)."""
    content_type = CONTENT_TYPES[success_fixture(engine).suffix]
    return EngineResponse(status, {"content-type": content_type, **headers}, body)


def expected_for(engine: str, status: int, driver: Driver) -> FailureClass:
    if (engine, status) in DOCUMENTED_EXCEPTIONS:
        return DOCUMENTED_EXCEPTIONS[(engine, status)]
    if status == 403:
        return (
            FailureClass.BLOCKED if driver.settings.api_key is None else FailureClass.AUTH_FAILURE
        )
    return {
        401: FailureClass.AUTH_FAILURE,
        408: FailureClass.TIMEOUT,
        429: FailureClass.RATE_LIMITED,
        504: FailureClass.TIMEOUT,
    }.get(status, FailureClass.REQUEST_FAILURE)


@pytest.mark.req("REQ-ENG-004", "REQ-ENG-010", "REQ-CMP-001")
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_has_its_admission_record_and_success_fixture(engine: str) -> None:
    """REQ-ENG-004, REQ-ENG-010, REQ-CMP-001: a registered engine has a record and a fixture."""
    record = DOCS / f"{engine}.md"
    assert record.is_file(), f"docs/engines/{engine}.md (its admission record) is missing"
    assert f"`{engine}`" in record.read_text(encoding="utf-8")
    assert success_fixture(engine).stat().st_size > 0


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
@pytest.mark.parametrize("engine", ENGINES)
def test_the_success_fixture_parses_to_ranked_hits(engine: str) -> None:
    """REQ-TEST-002, REQ-ENG-012: the recorded answer gives hits with ranks, URLs and titles."""
    driver = active_driver(engine)
    hits = driver.parse(answer(engine, 200, success_fixture(engine).read_bytes()))
    assert hits, f"{engine}'s success fixture gives no hit"
    ranks = [hit.rank for hit in hits]
    assert ranks == sorted(set(ranks)) and ranks[0] >= 1
    assert all(hit.url.startswith(("https://", "http://")) for hit in hits)
    assert all(hit.title.strip() for hit in hits)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006", "REQ-ENG-009", "REQ-SEC-016")
@pytest.mark.parametrize("status", [401, 403, 408, 429, 500, 502, 503, 504])
@pytest.mark.parametrize("engine", ENGINES)
def test_http_statuses_are_classified_the_shared_way(engine: str, status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: each status maps to one class; no provider text is kept."""
    driver = active_driver(engine)
    failure = parse_failure(driver, answer(engine, status, NEUTRAL_BODY))
    assert failure.failure_class is expected_for(engine, status, driver)
    assert "temporarily" not in repr(failure)


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002", "REQ-TEST-002")
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_throttle_is_rate_limited_with_its_retry_after(engine: str, status: int) -> None:
    """REQ-RES-002, REQ-CMP-002: a 429, or a 503 with Retry-After, is rate_limited and waits."""
    failure = parse_failure(
        active_driver(engine),
        answer(engine, status, NEUTRAL_BODY, **{"retry-after": str(RETRY_AFTER_S)}),
    )
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == RETRY_AFTER_S * 1000


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
@pytest.mark.parametrize("status", [500, 502])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_retry_after_on_another_5xx_is_kept_for_the_queue(engine: str, status: int) -> None:
    """REQ-CMP-002: a 5xx keeps its class, and its Retry-After reaches the queue."""
    failure = parse_failure(
        active_driver(engine),
        answer(engine, status, NEUTRAL_BODY, **{"retry-after": str(RETRY_AFTER_S)}),
    )
    assert failure.failure_class is FailureClass.REQUEST_FAILURE
    assert failure.retry_after_ms == RETRY_AFTER_S * 1000


@pytest.mark.req("REQ-ENG-009", "REQ-TEST-002")
@pytest.mark.parametrize("status", [200, 403, 503])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_challenge_page_is_blocked(engine: str, status: int) -> None:
    """REQ-ENG-009: an anti-bot interstitial is blocked whatever its status."""
    response = EngineResponse(status, {"content-type": HTML}, CHALLENGE_PAGE)
    assert parse_failure(active_driver(engine), response).failure_class is FailureClass.BLOCKED


@pytest.mark.req("REQ-ENG-006", "REQ-TEST-002")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_malformed_body_is_a_parse_failure(engine: str) -> None:
    """REQ-ENG-006: a body that opens like the provider's format and then breaks."""
    opening = success_fixture(engine).read_bytes().lstrip()[:1]
    body = opening + b"\x00\xff\xfe not the provider's format <<{{"
    failure = parse_failure(active_driver(engine), answer(engine, 200, body))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


# Error documents providers send under HTTP 200 (NCBI, Kagi, crates.io, npm,
# Tavily's keyless mode): none of them may read as results or as "no results".
ERROR_DOCUMENTS_UNDER_200 = (
    b'{"error": "API rate limit exceeded", "count": "11"}',
    b'{"errors": [{"detail": "invalid sort value"}]}',
    b'{"error": {"code": "bad_request", "message": "invalid parameter"}}',
)
JSON_ENGINES = [engine for engine in ENGINES if success_fixture(engine).suffix == ".json"]


@pytest.mark.req("REQ-ENG-006", "REQ-TEST-002")
@pytest.mark.parametrize(
    ("engine", "body"), list(itertools.product(JSON_ENGINES, ERROR_DOCUMENTS_UNDER_200))
)
def test_an_error_document_under_200_is_never_an_answer(engine: str, body: bytes) -> None:
    """REQ-ENG-006: an error sent with 200 is a failure, never hits and never `empty`."""
    failure = parse_failure(active_driver(engine), answer(engine, 200, body))
    assert failure.failure_class is not None


@pytest.mark.req("REQ-ENG-006", "REQ-TEST-002")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_truncated_body_is_a_parse_failure(engine: str) -> None:
    """REQ-ENG-006: the success answer cut in half is a parse_failure, never fewer hits."""
    whole = success_fixture(engine).read_bytes()
    failure = parse_failure(active_driver(engine), answer(engine, 200, whole[: len(whole) // 2]))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
@pytest.mark.parametrize("engine", ENGINES)
def test_each_declared_language_changes_the_request(engine: str) -> None:
    """REQ-SEARCH-004, REQ-ENG-010: a language the driver declares is one it selects."""
    driver = active_driver(engine)
    cls = CLASSES[engine]
    unfiltered = driver.build_request(SearchParams(query="conformance"))
    assert driver.honoured_languages() <= cls.languages
    assert cls.default_language is None or cls.default_language in cls.languages
    for language in sorted(cls.languages):
        request = driver.build_request(SearchParams(query="conformance", language=language))
        if language == cls.default_language:
            assert request == unfiltered, f"{engine}: {language} is its default selection"
        else:
            assert request != unfiltered, f"{engine} declares {language} but ignores it"


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize("engine", ENGINES)
def test_each_declared_time_range_changes_the_request(engine: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: a time range the driver declares is one it filters by."""
    driver = active_driver(engine)
    cls = CLASSES[engine]
    unfiltered = driver.build_request(SearchParams(query="conformance"))
    assert cls.unfiltered_time_ranges <= cls.time_ranges
    filtered = []
    for time_range in sorted(cls.time_ranges):
        request = driver.build_request(SearchParams(query="conformance", time_range=time_range))
        if time_range in cls.unfiltered_time_ranges:
            assert request == unfiltered, f"{engine}: {time_range} needs no filter"
        else:
            assert request != unfiltered, f"{engine} declares {time_range} but ignores it"
            filtered.append(request)
    for first, second in itertools.combinations(filtered, 2):
        assert first != second, f"{engine} builds one request for two time ranges"


@pytest.mark.req("REQ-MAIN-004", "REQ-ARCH-002")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_driver_reads_the_time_only_through_its_injected_clock(engine: str) -> None:
    """REQ-MAIN-004: the base class owns the clock; no driver module reads the time itself."""
    module = sys.modules[CLASSES[engine].__module__]
    assert CLOCK_CALLS.search(inspect.getsource(module)) is None
    moments = iter([NOW, NOW + 86_400.0])
    driver = CLASSES[engine](active_driver(engine).settings, clock=lambda: next(moments))
    assert (driver.now(), driver.now()) == (NOW, NOW + 86_400.0)
