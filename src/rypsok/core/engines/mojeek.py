"""Mojeek: web results from Mojeek's own index through the Mojeek Search API (keyed).

Provider: Mojeek Search API, `GET https://www.mojeek.com/search?fmt=json`
(https://www.mojeek.com/support/api/search/request_parameters.html and
`json_response.html`). Admission record: docs/engines/mojeek.md.

Configuration (`[engines.mojeek]`):

    api_key    required, by reference (REQ-CFG-004). Mojeek takes it as the
               query parameter `api_key`, so it is a credential inside a URL:
               the driver puts it there and nowhere else (no header, no other
               parameter). Egress sends a request to the configured origin
               only, follows no redirect and never logs URLs or parameters.
    endpoint   replaces https://www.mojeek.com/search (e.g. the
               https://api.mojeek.com/search host some clients use, or a
               test server); the parameters stay the same.

Request. `q`, `fmt=json`, `t` = the result count asked for (at most 20 here),
`since=YYYYMMDD` (UTC) for a time range, start = now minus the range (day 1,
week 7, month 30, year 365 days; "now" comes from the injected `clock`), `lb`
for the language, `rb` for the operator's region when it is a two-letter
country code, `safe=1` for moderate and strict, `safe=0` for off. `s` (start)
is never sent: the first page is the default.

Result. Title = `title`, URL = `url`, snippet = `desc` (raw). No date: the
result's date fields are not verified, so none is mapped.

Failures. HTTP statuses as usual, with the key sent: 401/403 auth_failure,
429 rate_limited. Mojeek also reports errors with HTTP 200 in
`response.status` ("ERROR: <message>"): a limit ("Daily Limit Reached") is
rate_limited, and waits LIM-B4 because a daily quota will not come back
sooner; a message about the key is auth_failure; any other is
request_failure. The message is matched against fixed phrases, never passed on.
"""

from __future__ import annotations

from typing import ClassVar, Final

from pydantic import Field

from rypsok.core import limits
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    RawHit,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.common import (
    Lenient,
    StrictModel,
    collect_hits,
    raise_for_status,
    read_json,
    utc_day,
    window_start,
)

_KEY_PARAM: Final = "api_key"
# Phrases of `response.status` error messages, lower-cased. Only "daily limit
# reached" is documented; the others are the plain wording of those failures.
_LIMIT_PHRASES: Final = ("limit reached", "rate limit", "too many")
_KEY_PHRASES: Final = ("api key", "api_key", "apikey", "invalid key", "unauthori", "forbidden")
_DAILY: Final = "daily"


class _Head(StrictModel):
    # Read leniently: only an exact 0 means anything (an empty answer).
    returned: object = Field(default=None, alias="return")


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    desc: object = None  # a malformed snippet is dropped, not fatal


class _Answer(StrictModel):
    status: str
    head: _Head | None = None
    results: list[Lenient[_Result]] | None = None


class _Envelope(StrictModel):
    response: _Answer


class Mojeek(Driver):
    """Mojeek web search through the Mojeek Search API."""

    id: ClassVar[str] = "mojeek"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    # U: `lb` prefers pages in a language; Mojeek's list of codes is not
    # verified, so only widely indexed European languages are declared.
    languages: ClassVar[frozenset[str]] = frozenset({"en", "de", "fr", "es", "it", "nl", "pt"})
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=1_000,  # U: limits are per contract; one request a second is polite
        max_concurrency=1,
        cacheable=False,  # U: storage rights are per contract; not assumed
        attribution_required=True,  # U: terms not verified; the safe side
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://www.mojeek.com/search"
    requires_key: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 20  # U: Mojeek's `t` ceiling is not documented

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("q", params.query),
            ("fmt", "json"),
            ("t", str(min(params.results, self._max_per_request))),
            ("safe", "0" if params.safe_search is SafeSearch.OFF else "1"),
        ]
        if params.time_range is not None:
            query.append(("since", self._since(params.time_range)))
        if params.language is not None:
            query.append(("lb", params.language))
        region = _region(params.region)
        if region is not None:
            query.append(("rb", region))
        if self.settings.api_key is not None:
            # The one place the key goes (REQ-CFG-004): Mojeek reads it nowhere else.
            query.append((_KEY_PARAM, self.settings.api_key))
        return EngineRequest(
            url=self.endpoint,
            params=tuple(query),
            headers=(("Accept", "application/json"),),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        raise_for_status(response, credentials_sent=self.settings.api_key is not None)
        answer = read_json(_Envelope, response).response
        _raise_for_status_field(answer.status)
        return collect_hits(_items(answer), _hit)

    def _since(self, time_range: TimeRange) -> str:
        """`since` as YYYYMMDD (UTC): the start of the range, seen from the clock."""
        return utc_day(window_start(time_range, self.now())).replace("-", "")


def _raise_for_status_field(status: str) -> None:
    """Classify an error that Mojeek reports with HTTP 200 in `response.status`."""
    if status.strip().upper() == "OK":
        return
    if not status.startswith("ERROR"):
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    message = status.lower()
    if any(phrase in message for phrase in _LIMIT_PHRASES):
        # A daily quota comes back at the provider's day boundary, which is not
        # given: wait as long as we ever do rather than probe it all day.
        wait = limits.RETRY_AFTER_MAX_MS if _DAILY in message else None
        raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=wait)
    if any(phrase in message for phrase in _KEY_PHRASES):
        raise EngineFailure(FailureClass.AUTH_FAILURE)
    raise EngineFailure(FailureClass.REQUEST_FAILURE)


def _items(answer: _Answer) -> list[_Result | object]:
    """The results; a missing list is empty only when the head says zero were returned."""
    if answer.results is not None:
        return answer.results
    returned = answer.head.returned if answer.head is not None else None
    if type(returned) is int and returned == 0:
        return []
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def _hit(position: int, item: object) -> RawHit | None:
    """One result, or None when it lacks a URL or a title: that result is skipped."""
    if not isinstance(item, _Result):
        return None
    result = item
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=result.desc if isinstance(result.desc, str) else "",
    )


def _region(region: str | None) -> str | None:
    """`rb` for the operator's region: an ISO 3166-1 alpha-2 code, else nothing."""
    if region is None:
        return None
    code = region.strip().upper()
    return code if len(code) == 2 and code.isascii() and code.isalpha() else None
