"""Wikipedia: full-text search of a Wikipedia language edition.

Provider: the Wikimedia Foundation, through the MediaWiki Action API module
`list=search` (https://www.mediawiki.org/wiki/API:Search, reference at
Special:ApiHelp/query+search). Admission record: docs/engines/wikipedia.md.

Configuration (`[engines.wikipedia]`):

    endpoint   replaces https://en.wikipedia.org/w/api.php, for a proxy or
               mirror of the English wiki. Result URLs stay on the public wiki.

Language. Each edition is its own wiki on its own subdomain
(`https://<edition>.wikipedia.org/w/api.php`), so the driver selects a
language by the host it asks: every language in `languages` (the editions
that also carry a Wikidata content language, ISO 639-1; Norwegian Bokmål
`nb` is the `no` edition). Without a selection, or for a language it has no
edition for, it asks the English edition. A configured endpoint is one wiki:
it honours English only (`honoured_languages`), and the engine is skipped
for any other language asked for.

Result URLs are built on the public host of the edition that answered: the
request also asks for `meta=siteinfo&siprop=general`, whose `lang` names the
edition; the host is then taken from our own table, never from the answer
or the configured endpoint, so a proxy or a local test server never leaks
into result URLs (REQ-RANK-003). An answer without siteinfo is read as the
English edition's.

Errors. MediaWiki's shared reading (status, `error` objects, throttle codes)
is in core/engines/mediawiki.py.

Dates. `timestamp` is the time of the last edit, not of publication; a fresh
edit would make an old topic look new, so no date is delivered.
"""

from __future__ import annotations

from typing import ClassVar, Final
from urllib.parse import quote

from pydantic import Field

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
)
from rypsok.core.engines.common import Lenient, StrictModel, collect_hits
from rypsok.core.engines.mediawiki import MediaWikiAnswer, read_answer

# ISO 639-1 language -> Wikipedia edition subdomain, where they differ.
_EDITION_OF: Final = {"nb": "no"}
_LANGUAGES: Final = frozenset(
    {
        "ar", "bg", "bn", "ca", "cs", "cy", "da", "de", "el", "en", "eo", "es", "et",
        "eu", "fa", "fi", "fr", "ga", "gl", "he", "hi", "hr", "hu", "hy", "id", "it",
        "ja", "ka", "kk", "ko", "la", "lt", "lv", "mk", "ms", "nb", "nl", "nn", "pl",
        "pt", "ro", "ru", "sk", "sl", "sq", "sr", "sv", "sw", "ta", "th", "tr", "uk",
        "ur", "vi", "zh",
    }
)  # fmt: skip
_EDITIONS: Final = frozenset(_EDITION_OF.get(language, language) for language in _LANGUAGES)
_FALLBACK_EDITION: Final = "en"


class _General(StrictModel):
    lang: str


class _Hit(StrictModel):
    title: str = Field(min_length=1)
    snippet: str = ""


class _Query(StrictModel):
    # Some replies without hits omit `search`: that is an empty answer.
    search: list[Lenient[_Hit]] = Field(default_factory=list)
    general: _General | None = None


class _Answer(MediaWikiAnswer):
    query: _Query


class Wikipedia(Driver):
    """A Wikipedia edition through `action=query&list=search`."""

    id: ClassVar[str] = "wikipedia"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = _LANGUAGES
    default_language: ClassVar[str | None] = _FALLBACK_EDITION
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

    def honoured_languages(self) -> frozenset[str]:
        """A configured endpoint is one wiki, the English one: only English is selectable."""
        if self.settings.endpoint is not None:
            return frozenset({_FALLBACK_EDITION})
        return self.languages

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(
            url=self._endpoint_for(params.language),
            params=(
                ("action", "query"),
                ("list", "search"),
                ("srsearch", params.query),
                ("srnamespace", "0"),
                ("srlimit", str(min(params.results, self._max_per_request))),
                ("srprop", "snippet"),
                ("meta", "siteinfo"),
                ("siprop", "general"),
                ("format", "json"),
                ("formatversion", "2"),
            ),
        )

    def _endpoint_for(self, language: str | None) -> str:
        """The API of the edition for `language`; a configured endpoint is used as it is."""
        if self.settings.endpoint is not None:
            return self.settings.endpoint
        return f"https://{_edition(language)}.wikipedia.org/w/api.php"

    def parse(self, response: EngineResponse) -> list[RawHit]:
        answer = read_answer(response, _Answer)
        general = answer.query.general
        lang = general.lang if general is not None else _FALLBACK_EDITION
        edition = _EDITION_OF.get(lang, lang)  # `no` reports its language as `nb`
        if edition not in _EDITIONS:
            edition = _FALLBACK_EDITION  # never a host outside our own table
        return collect_hits(
            answer.query.search, lambda position, item: _hit(position, item, edition)
        )


def _edition(language: str | None) -> str:
    """The edition subdomain for a language; English for none or one without an edition."""
    if language is None or language not in _LANGUAGES:
        return _FALLBACK_EDITION
    return _EDITION_OF.get(language, language)


def _hit(position: int, item: object, edition: str) -> RawHit | None:
    """One hit, or None when it lacks a usable title: that hit is skipped."""
    if not isinstance(item, _Hit):
        return None
    hit = item
    # The snippet stays raw: searchmatch spans and entities are the pipeline's to clean.
    return RawHit(
        rank=position, url=_article_url(edition, hit.title), title=hit.title, snippet=hit.snippet
    )


def _article_url(edition: str, title: str) -> str:
    """The public article URL, in the form MediaWiki itself links to."""
    path = quote(title.replace(" ", "_"), safe=";@$!*(),/:~")
    return f"https://{edition}.wikipedia.org/wiki/{path}"
