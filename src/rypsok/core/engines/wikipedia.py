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

from collections.abc import Mapping
from typing import ClassVar, Final
from urllib.parse import quote, urlsplit

from pydantic import Field, ValidationError

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
    retry_after_ms,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    raise_for_status,
    validate,
    validate_or_none,
)

_THROTTLE_CODES: Final = frozenset({"ratelimited", "maxlag"})


class _ApiError(StrictModel):
    code: str


class _Query(StrictModel):
    # Some replies without hits omit `search`: that is an empty answer.
    search: list[object] = Field(default_factory=list)


class _Answer(StrictModel):
    query: _Query


class _Hit(StrictModel):
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
        # No credential is sent, so a 403 refuses the client (User-Agent policy,
        # abuse filter), not a key: blocked, never auth_failure.
        raise_for_status(response)
        document = decode_json(response)
        if isinstance(document, dict) and "error" in document:
            raise _api_failure(document["error"], response.headers)
        answer = validate(_Answer, document)
        return collect_hits(answer.query.search, self._hit)

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One hit, or None when it lacks a usable title: that hit is skipped."""
        hit = validate_or_none(_Hit, item)
        if hit is None:
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


def _api_failure(error: object, headers: Mapping[str, str]) -> EngineFailure:
    """The class of a MediaWiki `error` object; its text never leaves the driver."""
    try:
        code = _ApiError.model_validate(error).code
    except ValidationError:
        return EngineFailure(FailureClass.PARSE_FAILURE)
    if code in _THROTTLE_CODES:
        return EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(headers))
    return EngineFailure(FailureClass.REQUEST_FAILURE)
