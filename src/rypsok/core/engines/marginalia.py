"""Marginalia: the independent small-web index through its API v2 (keyed).

Provider: Marginalia Search (Viktor Lofgren), `GET https://api2.marginalia-search.com/search`
with the key in the `API-Key` header (https://about.marginalia-search.com/article/api).
Admission record: docs/engines/marginalia.md.

Configuration (`[engines.marginalia]`):

    api_key    required, by reference (a free non-commercial key by e-mail, a
               paid commercial key, or `public` for development only).
    endpoint   replaces https://api2.marginalia-search.com/search.

Request. `query`, `count` = the count (at most 100), `nsfw` = 0 unless safe
search is off, `lang` = the language (ISO 639-1) when asked.

Licence. Every answer names its `license`. A non-commercial key's results
are CC-BY-NC-SA 4.0 and must be attributed with the licence, so unless the
licence names a commercial grant each snippet ends with
"(Marginalia Search, <licence>)": the attribution travels with the result.

Failures. Marginalia answers its rate limit with 503: rate_limited. 401
(unknown key) auth_failure; 400 (missing key or query) request_failure;
504 (query timeout) timeout.
"""

from __future__ import annotations

from typing import ClassVar, Final

from pydantic import Field

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
    retry_after_ms,
)
from rypsok.core.engines.common import (
    Lenient,
    StrictModel,
    collect_hits,
    json_model,
    raise_for_interstitial,
    raise_for_status,
    read_answer,
)

_KEY_HEADER: Final = "API-Key"
# Marginalia's index is English first; these languages have their own index (U).
_LANGUAGES: Final = frozenset({"en", "sv", "de", "fr"})
_LICENCE_MAX_CHARS: Final = 64


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = ""
    description: str = ""


class _Answer(StrictModel):
    license: str = ""
    results: list[Lenient[_Result]]


class Marginalia(Driver):
    """Marginalia search through `GET /search` of API v2."""

    id: ClassVar[str] = "marginalia"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = _LANGUAGES
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=1_000,  # U: per-key queries a minute; 503 backs off
        max_concurrency=1,
        cacheable=True,  # Marginalia caches per key and query itself; NC licence allows it
        attribution_required=True,  # non-commercial keys: CC-BY-NC-SA 4.0
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api2.marginalia-search.com/search"
    requires_key: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 100

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = [
            ("query", params.query),
            ("count", str(min(params.results, self._max_per_request))),
            ("nsfw", "1" if params.safe_search is SafeSearch.OFF else "0"),
        ]
        if params.language is not None and params.language in _LANGUAGES:
            query.append(("lang", params.language))
        headers: list[tuple[str, str]] = [("Accept", "application/json")]
        credentials: frozenset[str] = frozenset()
        if self.settings.api_key is not None:
            headers.append((_KEY_HEADER, self.settings.api_key))
            credentials = frozenset({_KEY_HEADER})
        return EngineRequest(
            url=self.endpoint, params=tuple(query), headers=tuple(headers),
            credential_headers=credentials,
        )  # fmt: skip

    def parse(self, response: EngineResponse) -> list[RawHit]:
        raise_for_interstitial(response)
        if response.status == 503:  # Marginalia's rate-limit answer
            raise EngineFailure(
                FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
            )
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # One pass over the bytes for a result list; anything else is read
        # again as a document, so an error sent under 200 is classified.
        answer = json_model(_Answer, response) or read_answer(
            _Answer, response, "results", credentials_sent=keyed
        )
        notice = _attribution(answer.license)
        return collect_hits(answer.results, lambda position, item: _hit(position, item, notice))


def _attribution(licence: str) -> str:
    """The attribution a result carries, or "" when the licence is a commercial grant."""
    name = licence.strip()[:_LICENCE_MAX_CHARS]
    if "commercial" in name.lower() and "non" not in name.lower():
        return ""
    return f"(Marginalia Search, {name or 'CC-BY-NC-SA 4.0'})"


def _hit(position: int, item: object, notice: str) -> RawHit | None:
    if not isinstance(item, _Result) or not item.title.strip():
        return None
    result = item
    snippet = " ".join(part for part in (result.description, notice) if part)
    return RawHit(rank=position, url=result.url, title=result.title, snippet=snippet)
