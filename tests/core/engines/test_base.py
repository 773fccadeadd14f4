"""The engine abstraction's own guarantees."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import EngineRequest, EngineSettings, retry_after_ms


@pytest.mark.req("REQ-SEC-020", "REQ-PRIV-004")
def test_reprs_show_neither_keys_nor_queries() -> None:
    """REQ-SEC-020, REQ-PRIV-004: settings and requests never show a key or a query."""
    settings = EngineSettings(endpoint="https://example.org/api", api_key="canary-key-1")
    request = EngineRequest(
        "https://example.org/api",
        params=(("q", "canary-query-2"),),
        headers=(("X-Key", "canary-key-1"),),
        credential_headers=frozenset({"X-Key"}),
    )
    shown = repr(settings) + str(settings) + repr(request) + str(request)
    assert "canary" not in shown
    assert "example.org" in shown


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
@pytest.mark.parametrize(
    ("value", "expected"),
    [("30", 30_000), ("0", 0), ("99999999", 3_600_000), ("-1", None), ("soon", None), ("", None)],
)
def test_retry_after_is_read_in_seconds_and_capped(value: str, expected: int | None) -> None:
    """REQ-CMP-002: Retry-After is honoured up to LIM-B4 and malformed values are ignored."""
    assert retry_after_ms({"retry-after": value}) == expected


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
def test_retry_after_http_date_is_measured_from_the_response_date() -> None:
    """REQ-CMP-002: an HTTP-date Retry-After counts from the provider's Date header."""
    headers = {
        "retry-after": "Wed, 21 Oct 2026 07:28:30 GMT",
        "date": "Wed, 21 Oct 2026 07:28:00 GMT",
    }
    assert retry_after_ms(headers) == 30_000
    assert retry_after_ms({**headers, "retry-after": "Wed, 21 Oct 2026 07:27:00 GMT"}) == 0
    assert retry_after_ms({**headers, "retry-after": "Thu, 21 Oct 2027 07:28:00 GMT"}) == 3_600_000


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
@pytest.mark.parametrize(
    "value",
    [
        "Wed, 21 Oct 2026 07:28:30 GMT",
        "Wednesday, 21-Oct-26 07:28:30 GMT",
        "Wed Oct 21 07:28:30 2026",
    ],
    ids=["imf_fixdate", "rfc850", "asctime"],
)
def test_retry_after_reads_every_http_date_format(value: str) -> None:
    """REQ-CMP-002: RFC 9110 §5.6.7 asks a recipient to accept all three date formats;
    asctime names no zone and is UTC (it was read as malformed and the wait ignored)."""
    assert retry_after_ms({"retry-after": value, "date": "Wed, 21 Oct 2026 07:28:00 GMT"}) == 30_000
