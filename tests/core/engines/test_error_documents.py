"""Errors providers send with HTTP 200, read by the shared classification (issue 11 traps).

Each case is one provider's documented error document under 200: the class
comes from what the document says (a throttle, a refused key, anything
else), never from a rule fitted to the provider, and no provider text
leaves with it (`parse_failure` checks that).
"""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import Driver, EngineFailure, EngineSettings, FailureClass
from rypsok.core.engines.common import raise_for_error_document
from rypsok.core.engines.registry import DRIVER_CLASSES
from tests.core.engines.driver_support import FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY

CLASSES = {cls.id: cls for cls in DRIVER_CLASSES}
# (engine, fixture, class, retry-after ms)
UNDER_200 = [
    ("kagi", "throttled_200.json", FailureClass.RATE_LIMITED, None),
    ("kagi", "error.json", FailureClass.REQUEST_FAILURE, None),
    ("kagi", "forbidden.json", FailureClass.AUTH_FAILURE, None),
    ("tavily", "keyless_limit.json", FailureClass.RATE_LIMITED, 600_000),
    ("tavily", "error.json", FailureClass.RATE_LIMITED, None),  # "excessive requests"
    ("exa", "error.json", FailureClass.AUTH_FAILURE, None),  # "Invalid API key"
    ("you", "error.json", FailureClass.AUTH_FAILURE, None),  # 403 "forbidden"
    ("openalex", "rate_limit.json", FailureClass.RATE_LIMITED, None),
    ("openalex", "daily_limit.json", FailureClass.RATE_LIMITED, None),
    ("openalex", "bad_key.json", FailureClass.AUTH_FAILURE, None),
    ("pubmed", "rate_limited.json", FailureClass.RATE_LIMITED, None),
    ("crates", "throttled_200.json", FailureClass.RATE_LIMITED, None),
    ("crates", "errors.json", FailureClass.REQUEST_FAILURE, None),
    ("npm", "bad_request.json", FailureClass.REQUEST_FAILURE, None),
]


def _driver(engine: str) -> Driver:
    cls = CLASSES[engine]
    key = KEY if cls.requires_key else None
    return cls(EngineSettings(api_key=key, contact="ops@example.org"))


@pytest.mark.req("REQ-ENG-006", "REQ-TEST-002", "REQ-CMP-002")
@pytest.mark.parametrize(("engine", "name", "expected", "wait_ms"), UNDER_200)
def test_an_error_document_under_200_is_classified_by_what_it_says(
    engine: str, name: str, expected: FailureClass, wait_ms: int | None
) -> None:
    """REQ-ENG-006: throttle words or 429 rate_limited (with its wait); key words auth_failure."""
    failure = parse_failure(_driver(engine), FixtureResponses(engine)(name))
    assert failure.failure_class is expected
    assert failure.retry_after_ms == wait_ms


@pytest.mark.req("REQ-ENG-006")
def test_a_refusal_without_a_credential_is_blocked_and_results_win_over_an_error_key() -> None:
    """REQ-ENG-006: no key sent: the client is refused (blocked); results present: no error."""
    with pytest.raises(EngineFailure) as caught:
        raise_for_error_document({"error": "Forbidden: missing User-Agent"}, "crates")
    assert caught.value.failure_class is FailureClass.BLOCKED
    raise_for_error_document({"results": [{"url": "https://a.example/"}], "error": "x"}, "results")
    raise_for_error_document({"results": []}, "results")  # no error key: the empty answer
    raise_for_error_document(["error"], "results")  # not a document: the driver decides
