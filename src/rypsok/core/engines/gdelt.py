"""GDELT: worldwide online news through the GDELT DOC 2.0 API.

Provider: the GDELT Project, `GET https://api.gdeltproject.org/api/v2/doc/doc`
in article-list mode with JSON output
(https://blog.gdeltproject.org/gdelt-doc-2-0-api-debuts/). It monitors news
sites in many languages and searches a rolling window of about three months.
Admission record: docs/engines/gdelt.md.

Configuration (`[engines.gdelt]`):

    endpoint   replaces https://api.gdeltproject.org/api/v2/doc/doc, for a proxy.

GDELT asks for at most one request every five seconds per address, so the
admission is 5,000 ms spacing and concurrency 1; the queue enforces it
process-wide.

Query. `query=<query>&mode=artlist&format=json&maxrecords=<n>&sort=hybridrel`
(relevance weighted by the outlet's prominence), `maxrecords` at most 250.
Time range: `timespan=1d|7d|30d` for day, week and month. A year needs no
parameter: GDELT never searches further back than its window of about three
months, so every result already lies within the year.

Language. GDELT's `sourcelang:` query operator keeps the articles published
in one language (research record: `query=Q sourcelang:eng`, S). The driver
appends ` sourcelang:<name>` with the language's English name (`french`), the
form of GDELT's own examples, which has none of the ambiguity of three-letter
codes (ISO 639-2 `fre` or `fra`). `languages` is a conservative subset of the
languages GDELT monitors and translates. Without a selection every language
is searched.

Result. Title = `title` (raw, in the article's language), URL = `url` as
given, date = `seendate` (`YYYYMMDDTHHMMSSZ`, when GDELT first saw the
article) as YYYY-MM-DD. GDELT gives no snippet.

Traps. GDELT's throttle message ("Please limit requests to one every 5
seconds ...") is plain text that arrives with 429 *or with 200*: either is
rate_limited. A query GDELT refuses (a keyword too short, an unknown operator)
is answered with a text or HTML message under 200: request_failure, not
parse_failure, so a user's query cannot open the circuit. No matches is `{}`
without `articles`. GDELT's JSON sometimes carries raw control characters or
invalid backslash escapes inside titles; such an answer is repaired (control
characters become spaces, a stray backslash is escaped) and parsed once more.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date
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
    SearchParams,
    TimeRange,
    retry_after_ms,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    raise_for_error_document,
    raise_for_status,
    validate,
    validate_or_none,
)

# The lower-case core of GDELT's throttle message.
_THROTTLE_MARKER: Final = b"limit requests to one every"
_THROTTLE_SAMPLE_BYTES: Final = 4096
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_TIMESPANS: Final = {TimeRange.DAY: "1d", TimeRange.WEEK: "7d", TimeRange.MONTH: "30d"}
# ISO 639-1 -> the language name `sourcelang:` takes.
_SOURCE_LANGUAGES: Final = {
    "ar": "arabic",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "ja": "japanese",
    "ko": "korean",
    "nl": "dutch",
    "pl": "polish",
    "pt": "portuguese",
    "ru": "russian",
    "tr": "turkish",
    "uk": "ukrainian",
    "zh": "chinese",
}
_SEEN_DATE: Final = re.compile(r"^([0-9]{4})([0-9]{2})([0-9]{2})T[0-9]{6}Z$")
# A valid JSON escape, or a backslash that starts none (matched second, so a
# valid escape is always consumed whole, including an escaped backslash).
_ESCAPE: Final = re.compile(rb'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})|\\')
_CONTROL_TO_SPACE: Final = bytes.maketrans(bytes(range(0x20)), b" " * 0x20)


class _Answer(StrictModel):
    # No matches is `{}`: no `articles` key at all.
    articles: list[object] = Field(default_factory=list)


class _Article(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    seendate: str | None = None


class Gdelt(Driver):
    """GDELT news articles through `GET /api/v2/doc/doc?mode=artlist`."""

    id: ClassVar[str] = "gdelt"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.NEWS})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    # Selected with the `sourcelang:` operator; none asked: every language.
    languages: ClassVar[frozenset[str]] = frozenset(_SOURCE_LANGUAGES)
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    # GDELT searches about three months back: a year reaches past all of it.
    unfiltered_time_ranges: ClassVar[frozenset[TimeRange]] = frozenset({TimeRange.YEAR})
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=5_000,  # one request every five seconds per address
        max_concurrency=1,
        cacheable=True,  # open data
        attribution_required=False,  # a citation is asked for research use (U), not for links
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.gdeltproject.org/api/v2/doc/doc"
    _max_per_request: ClassVar[int] = 250  # maxrecords ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("query", _query_text(params)),
            ("mode", "artlist"),
            ("format", "json"),
            ("maxrecords", str(min(params.results, self._max_per_request))),
            ("sort", "hybridrel"),
        ]
        timespan = _TIMESPANS.get(params.time_range) if params.time_range else None
        if timespan is not None:
            query.append(("timespan", timespan))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if _is_throttle_message(response.body):
            raise EngineFailure(
                FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
            )
        # No credential is sent, so a 403 refuses the client, not a key: blocked.
        raise_for_status(response)
        if not _looks_like_json(response.body):
            # GDELT's message for a query it refuses: not a format drift.
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        document = _decode(response)
        # An error document is no empty answer, even though GDELT's empty one is `{}`.
        raise_for_error_document(document, "articles")
        return collect_hits(validate(_Answer, document).articles, _hit)


def _query_text(params: SearchParams) -> str:
    """The query, with ` sourcelang:<name>` when a language GDELT can select is asked for."""
    name = _SOURCE_LANGUAGES.get(params.language) if params.language else None
    return params.query if name is None else f"{params.query} sourcelang:{name}"


def _hit(position: int, item: object) -> RawHit | None:
    """One article, or None when it lacks a URL or a title: that article is skipped."""
    article = validate_or_none(_Article, item)
    if article is None or not article.title.strip():
        return None
    return RawHit(
        rank=position, url=article.url, title=article.title, date=_seen_date(article.seendate)
    )


def _seen_date(value: str | None) -> str | None:
    """YYYY-MM-DD of `20241114T093000Z`; None when absent or malformed."""
    match = _SEEN_DATE.match(value or "")
    if match is None:
        return None
    try:
        return date(*(int(part) for part in match.groups())).isoformat()
    except ValueError:
        return None


def _is_throttle_message(body: bytes) -> bool:
    # Only a body that is not JSON: an article may well be titled with these words.
    return not _looks_like_json(body) and (
        _THROTTLE_MARKER in body[:_THROTTLE_SAMPLE_BYTES].lower()
    )


def _looks_like_json(body: bytes) -> bool:
    return body.lstrip().removeprefix(_UTF8_BOM).lstrip()[:1] in (b"{", b"[")


def _decode(response: EngineResponse) -> object:
    """The JSON document, repaired once if GDELT's escaping broke it; else parse_failure."""
    try:
        return decode_json(response)
    except EngineFailure:
        pass
    repaired = dataclasses.replace(response, body=_repaired(response.body))
    return decode_json(repaired)


def _repaired(body: bytes) -> bytes:
    """Control characters as spaces, stray backslashes escaped; valid JSON stays the same.

    Both edits keep a document's structure: outside strings a control
    character can only be whitespace, and a backslash only occurs in strings.
    """
    spaced = body.translate(_CONTROL_TO_SPACE)
    return _ESCAPE.sub(lambda match: match[0] if len(match[0]) > 1 else b"\\\\", spaced)
