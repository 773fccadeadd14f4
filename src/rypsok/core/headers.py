"""Reading HTTP header values that more than one pipeline needs."""

from __future__ import annotations

import datetime
import email.utils
import time
from collections.abc import Mapping

from rypsok.core import limits


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """Retry-After in milliseconds, capped at LIM-B4; None when absent or malformed.

    Both forms of RFC 9110 §10.2.3 are read: delta-seconds, and an HTTP-date in
    any of its three formats (IMF-fixdate, RFC 850, asctime),
    measured from the response's own Date header when it has one (so the
    provider's clock, not ours, decides) and from our clock otherwise.
    """
    raw = headers.get("retry-after", "").strip()
    # delta-seconds is ASCII digits only: str.isdigit() also takes "²" (which int()
    # refuses) and other scripts' digits, which no server sends as a delay.
    if raw.isascii() and raw.isdigit():
        return min(int(raw[:10]) * 1000, limits.RETRY_AFTER_MAX_MS)
    until = _http_date(raw)
    if until is None:
        return None
    now = _http_date(headers.get("date", "")) or time.time()
    return max(0, min(int((until - now) * 1000), limits.RETRY_AFTER_MAX_MS))


def _http_date(value: str) -> float | None:
    if not value or len(value) > 64:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # a date no calendar holds
        return None
    if moment.tzinfo is None:
        # HTTP dates are UTC in all three forms (RFC 9110 §5.6.7); the asctime form
        # (`Sun Nov  6 08:49:37 1994`), which a recipient must accept, names no zone.
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
