"""Wikipedia: full-text search of the English Wikipedia.

Provider: the Wikimedia Foundation, through the MediaWiki Action API module
`list=search` (https://www.mediawiki.org/wiki/API:Search, reference at
Special:ApiHelp/query+search). Admission record: docs/engines/wikipedia.md.

Configuration (`[engines.wikipedia]`):

    endpoint   replaces https://en.wikipedia.org/w/api.php, for a proxy or
               mirror of the *same* wiki. Result URLs stay on the public wiki.

Language. One Action API endpoint serves one language edition, and the engine
profile sends requests to the configured host only, so the driver cannot pick
a subdomain per call. It serves the English edition and honours "en" only. A
further edition is a subclass that sets `id`, `languages` and
`default_endpoint` (e.g. de.wikipedia.org): the public article base is derived
from `default_endpoint`, never from the configured endpoint, so a proxy or a
local test server never leaks into result URLs (REQ-RANK-003).

Errors. MediaWiki reports API errors with HTTP 200 and an `error` object.
`ratelimited` and `maxlag` are throttle signals: both say "wait, then it
clears" (maxlag comes with Retry-After), so both are rate_limited. Any other
error code is request_failure; the code and its `info` text stay here.

Dates. `timestamp` is the time of the last edit, not of publication; a fresh
edit would make an old topic look new, so no date is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar, Final, TypeVar
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    RawHit,
    SearchParams,
    classify_status,
    retry_after_ms,
)

# Lower-case byte strings that mark a CAPTCHA or anti-bot interstitial.
_CHALLENGE_MARKERS: Final = (
    b"captcha",
    b"cf-chl",
    b"challenge-platform",
    b"cf-browser-verification",
    b"just a moment...",
    b"attention required",
    b"verify you are human",
    b"are you a robot",
    b"unusual traffic",
    b"ddos-guard",
    b"_incapsula_resource",
)
_THROTTLE_CODES: Final = frozenset({"ratelimited", "maxlag"})
_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class _ApiError(_Model):
    code: str


class _Query(_Model):
    # Some replies without hits omit `search`: that is an empty answer.
    search: list[object] = Field(default_factory=list)


class _Answer(_Model):
    query: _Query


class _Hit(_Model):
    title: str = Field(min_length=1)
    snippet: str = ""


class Wikipedia(Driver):
    """The English Wikipedia through `action=query&list=search`."""

    id: ClassVar[str] = "wikipedia"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    languages: ClassVar[frozenset[str]] = frozenset({"en"})
    # CirrusSearch refuses longer full-text queries (300 characters, U).
    max_query_chars: ClassVar[int] = 300
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=100,  # no published read cap; a polite self-imposed spacing
        max_concurrency=1,  # API etiquette: serial requests
        cacheable=True,
        attribution_required=True,  # CC BY-SA 4.0
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://en.wikipedia.org/w/api.php"
    _max_per_request: ClassVar[int] = 500  # srlimit ceiling for clients without bot rights

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(
            url=self.endpoint,
            params=(
                ("action", "query"),
                ("list", "search"),
                ("srsearch", params.query),
                ("srnamespace", "0"),
                ("srlimit", str(min(params.results, self._max_per_request))),
                ("srprop", "snippet"),
                ("format", "json"),
                ("formatversion", "2"),
            ),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        _raise_for_status(response)
        document = _decode_json(response)
        if isinstance(document, dict) and "error" in document:
            raise _api_failure(document["error"], response.headers)
        answer = _validate(_Answer, document)
        hits = [
            hit
            for position, item in enumerate(answer.query.search, start=1)
            if (hit := self._hit(position, item)) is not None
        ]
        # Hits that all fail validation are a format drift, not "no results".
        if answer.query.search and not hits:
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        return hits

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One hit, or None when it lacks a usable title: that hit is skipped."""
        try:
            hit = _Hit.model_validate(item)
        except ValidationError:
            return None
        # The snippet stays raw: searchmatch spans and entities are the pipeline's to clean.
        return RawHit(
            rank=position, url=self._article_url(hit.title), title=hit.title, snippet=hit.snippet
        )

    def _article_url(self, title: str) -> str:
        """The public article URL, in the form MediaWiki itself links to."""
        parts = urlsplit(self.default_endpoint)
        path = quote(title.replace(" ", "_"), safe=";@$!*(),/:~")
        return f"https://{parts.netloc}/wiki/{path}"


def _raise_for_status(response: EngineResponse) -> None:
    """Raise the failure that the status, headers or an interstitial page signal."""
    status = response.status
    if status == 429:
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    if _is_html(response) and _has_challenge(response.body):
        raise EngineFailure(FailureClass.BLOCKED)
    if 200 <= status < 300:
        return
    if status == 403:
        # No credential is sent, so a 403 refuses the client (User-Agent policy,
        # abuse filter), not a key: blocked, never auth_failure.
        raise EngineFailure(FailureClass.BLOCKED)
    failure_class = classify_status(status) or FailureClass.REQUEST_FAILURE
    raise EngineFailure(failure_class, retry_after_ms=retry_after_ms(response.headers))


def _api_failure(error: object, headers: Mapping[str, str]) -> EngineFailure:
    """The class of a MediaWiki `error` object; its text never leaves the driver."""
    try:
        code = _ApiError.model_validate(error).code
    except ValidationError:
        return EngineFailure(FailureClass.PARSE_FAILURE)
    if code in _THROTTLE_CODES:
        return EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(headers))
    return EngineFailure(FailureClass.REQUEST_FAILURE)


def _media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _is_html(response: EngineResponse) -> bool:
    if _media_type(response.headers) in ("text/html", "application/xhtml+xml"):
        return True
    return response.body[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def _has_challenge(body: bytes) -> bool:
    sample = body[:65536].lower()
    return any(marker in sample for marker in _CHALLENGE_MARKERS)


def _decode_json(response: EngineResponse) -> object:
    """The JSON document, or parse_failure for anything else (HTML, text, truncation)."""
    media_type = _media_type(response.headers)
    if media_type and media_type != "application/json" and not media_type.endswith("+json"):
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    try:
        return json.loads(response.body)
    except (ValueError, RecursionError):
        pass
    # Raised outside the handler, so no exception holding the body is chained.
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def _validate(model: type[_M], document: object) -> _M:
    try:
        return model.model_validate(document)
    except ValidationError:
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)
