"""SearXNG: results of the operator's own SearXNG instance through its JSON format.

Provider: a SearXNG instance run by the operator (never a public instance),
`GET <instance>/search?format=json` (SearXNG's search API,
https://docs.searxng.org/dev/search_api.html). Admission record:
docs/engines/searxng.md.

Configuration (`[engines.searxng]`):

    endpoint   required: the instance's search URL, e.g.
               https://searx.example.internal/search. There is no usable
               default, so without it the engine is inactive (`active` is
               False) and never selected; `build_request` refuses to run
               without it as a backstop. The instance must list `json` in
               `search.formats`.
    api_key    not used: SearXNG has no key. A configured one is never sent.

Request. `q`, `format=json`, `categories` (general, news, science, and `it`
for code), `pageno=1`, `safesearch` = 0 | 1 | 2 for off | moderate | strict,
`language` (ISO 639-1) when one is asked for, `time_range` = day | week |
month | year. SearXNG has no result-count parameter: the first LIM-S3 usable
results of its (already fused) order are kept.

Result. Title = `title`, URL = `url`, snippet = `content` (raw), date =
`publishedDate`. The instance's own bookkeeping per result (`engine`,
`engines`, `score`, `positions`, `category`, ...) is never read, so nothing of
it reaches a hit; `unresponsive_engines`, `answers`, `infoboxes` and
`suggestions` are ignored too.

Failures. 429 (SearXNG's limiter, or a proxy) is rate_limited with
Retry-After. A challenge page in front of the instance is blocked. 401 and
403 without a challenge are the instance's own refusal: with JSON output not
enabled SearXNG answers 403, and an authenticating proxy 401; no credential
was sent, so they are request_failure, a configuration to fix, not
auth_failure nor an anti-bot block. An HTML page with 200 (the endpoint is
not the search URL) is parse_failure. SearXNG's JSON errors (`{"error": ...}`
with 400 or 500) and redirects (a query with an external bang) are
request_failure.
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
    retry_after_ms,
)
from rypsok.core.engines.common import (
    Lenient,
    StrictModel,
    collect_hits,
    is_html,
    iso_date,
    raise_for_interstitial,
    raise_for_status,
    read_json,
)

_CATEGORIES: Final = {
    Category.GENERAL: "general",
    Category.NEWS: "news",
    Category.SCIENCE: "science",
    Category.CODE: "it",  # SearXNG files code search under "it"
}
_SAFE_SEARCH: Final = {SafeSearch.OFF: "0", SafeSearch.MODERATE: "1", SafeSearch.STRICT: "2"}
# The language-only locales SearXNG knows (searx/sxng_locales.py).
_LANGUAGES: Final = frozenset(
    {
        "af", "ar", "be", "bg", "ca", "cs", "da", "de", "el", "en", "es", "et", "fa", "fi",
        "fr", "he", "hi", "hr", "hu", "id", "is", "it", "ja", "ko", "lt", "lv", "nb", "nl",
        "pl", "pt", "ro", "ru", "sk", "sl", "sr", "sv", "th", "tr", "uk", "vi", "zh",
    }
)  # fmt: skip
# Proof-of-work gates often put in front of self-hosted instances (Anubis);
# the shared markers cover CAPTCHA and CDN challenges.
_GATE_MARKERS: Final = (b"/.within.website/", b"not a bot")


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    # Optional fields are read leniently: a malformed one is dropped, not fatal.
    content: object = None
    published_date: object = Field(default=None, alias="publishedDate")


class _Answer(StrictModel):
    results: list[Lenient[_Result]]


class SearXNG(Driver):
    """The operator's own SearXNG instance through `GET /search?format=json`."""

    id: ClassVar[str] = "searxng"
    categories: ClassVar[frozenset[Category]] = frozenset(Category)
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = _LANGUAGES
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        # The operator's own instance: no spacing of ours (the operator may
        # configure one), and the default LIM-C2 cap on requests in flight.
        min_interval_ms=0,
        max_concurrency=limits.REQUESTS_PER_ENGINE_IN_FLIGHT,
        cacheable=False,  # results come from upstream engines whose terms vary
        attribution_required=False,
        max_body_bytes=2 * 1024 * 1024,
    )
    # Never callable: egress refuses a URL without a scheme, and an engine
    # without an endpoint is inactive anyway.
    default_endpoint: ClassVar[str] = ""
    requires_key: ClassVar[bool] = False

    @property
    def active(self) -> bool:
        """Only an instance the operator named can serve (there is no public default)."""
        return bool(self.settings.endpoint)

    def build_request(self, params: SearchParams) -> EngineRequest:
        endpoint = self.settings.endpoint
        if not endpoint:
            # Unreachable through the services, which select active engines only.
            raise RuntimeError("searxng has no endpoint and is inactive")
        query: list[tuple[str, str]] = [
            ("q", params.query),
            ("format", "json"),
            ("categories", _CATEGORIES[params.category]),
            ("pageno", "1"),
            ("safesearch", _SAFE_SEARCH[params.safe_search]),
        ]
        if params.language is not None:
            query.append(("language", params.language))
        if params.time_range is not None:
            query.append(("time_range", params.time_range.value))
        return EngineRequest(
            url=endpoint, params=tuple(query), headers=(("Accept", "application/json"),)
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        _raise_for_failure(response)
        hits = collect_hits(read_json(_Answer, response).results, _hit)
        # No count parameter exists: keep the LIM-S3 results we would have asked for.
        return hits[: limits.RESULTS_PER_ENGINE]


def _raise_for_failure(response: EngineResponse) -> None:
    """Raise the failure that the status or a challenge page signals."""
    status = response.status
    if status == 429:
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    raise_for_interstitial(response)
    if is_html(response) and _has_gate(response.body):
        raise EngineFailure(FailureClass.BLOCKED)
    if 200 <= status < 300:
        return
    if status in (401, 403):
        # No credential was sent: the instance's own policy refused us (JSON
        # output disabled, an authenticating proxy). A setting to fix.
        raise EngineFailure(FailureClass.REQUEST_FAILURE)
    raise_for_status(response)


def _has_gate(body: bytes) -> bool:
    sample = body[:65_536].lower()
    return any(marker in sample for marker in _GATE_MARKERS)


def _hit(position: int, item: object) -> RawHit | None:
    """One result, or None when it lacks a URL or a title: that result is skipped."""
    if not isinstance(item, _Result):
        return None
    result = item
    published = result.published_date
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=result.content if isinstance(result.content, str) else "",
        date=iso_date(published) if isinstance(published, str) else None,
    )
